"""Where reactgraph keeps its files on disk (demo database, checkpoints, server logs)."""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    """Return reactgraph's data directory (not created here).

    ``$REACTGRAPH_HOME`` if set, else ``$XDG_DATA_HOME/reactgraph``, else
    ``~/.local/share/reactgraph``.
    """
    home = os.environ.get("REACTGRAPH_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "reactgraph"
