"""Unit tests of the HTTP server and AG-UI."""
