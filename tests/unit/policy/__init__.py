"""Unit tests of the loop's safeguards: tool selection, stalls, the ids a question asks about, what a question costs."""
