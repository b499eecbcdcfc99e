"""The tool loop's safeguards: refusals, stalls, coverage, the facts read from a question."""
