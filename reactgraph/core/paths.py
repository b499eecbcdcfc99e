"""Where reactgraph keeps its files on disk (demo database, checkpoints, server logs, the
embedded model's file)."""

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


def model_cache() -> Path:
    """Return the directory the embedded model's file is downloaded to (not created here).

    ``$REACTGRAPH_MODEL_DIR`` if set, else ``$XDG_CACHE_HOME/reactgraph/models``, else
    ``~/.cache/reactgraph/models``. A cache, not data: it can be deleted and is fetched
    again, and it does not move with ``$REACTGRAPH_HOME`` (a run with a fresh data
    directory does not download the model again).
    """
    explicit = os.environ.get("REACTGRAPH_MODEL_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "reactgraph" / "models"
