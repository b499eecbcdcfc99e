"""The ``reactgraph`` command: :func:`reactgraph.cli.main.main` is its entry point, re-exported
here so that installs made before the command moved into this package (whose script calls
``reactgraph.cli:main``) keep working."""

from reactgraph.cli.main import main

__all__ = ["main"]
