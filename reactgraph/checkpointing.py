"""Opening a LangGraph checkpointer from a URL or path (SPEC §10).

The CLI and the server keep checkpoints in SQLite by default; a Postgres URL (in the
argument or in ``REACTGRAPH_DATABASE_URL``) selects the Postgres checkpointer (extra
``[postgres]``); ``"memory"`` keeps them in the process. Library users can pass any
LangGraph checkpointer to :class:`~reactgraph.ReActAgent` directly instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver

from reactgraph.paths import data_home

DATABASE_URL_ENV = "REACTGRAPH_DATABASE_URL"


def default_checkpoint_path() -> Path:
    """Return the default SQLite checkpoint file: ``checkpoints.db`` under
    :func:`reactgraph.paths.data_home`."""
    return data_home() / "checkpoints.db"


def checkpoint_target(url: str | os.PathLike[str] | None = None) -> str:
    """Resolve where checkpoints go, without opening anything.

    Args:
        url: ``None`` (then ``$REACTGRAPH_DATABASE_URL``, then the default SQLite file),
            ``"memory"``, a ``postgres://`` / ``postgresql://`` URL, a ``sqlite:///path``
            URL or a plain file path.

    Returns:
        ``"memory"``, the Postgres URL unchanged, or an absolute SQLite file path.
    """
    target = os.fspath(url) if url is not None else os.environ.get(DATABASE_URL_ENV) or ""
    if not target:
        return str(default_checkpoint_path())
    if target == "memory" or is_postgres_url(target):
        return target
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :]
    return str(Path(target).expanduser().resolve())


def is_postgres_url(url: str) -> bool:
    """True for ``postgres://`` and ``postgresql://`` URLs (any ``+driver`` suffix)."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    return scheme.split("+", 1)[0] in ("postgres", "postgresql")


@asynccontextmanager
async def open_checkpointer(url: str | os.PathLike[str] | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """Open a checkpointer for the lifetime of the ``async with`` block.

    Args:
        url: As for :func:`checkpoint_target`. A SQLite file's parent directory is
            created; Postgres tables are created on first use (``setup()``).

    Yields:
        An ``AsyncSqliteSaver``, ``AsyncPostgresSaver`` or ``InMemorySaver``.

    Raises:
        ImportError: A Postgres URL without the ``[postgres]`` extra installed (the
            message names the extra).
        OSError: The SQLite file's directory cannot be created.
    """
    target = checkpoint_target(url)
    if target == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    if is_postgres_url(target):
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                "a Postgres checkpoint URL needs the postgres extra: pip install 'reactgraph[postgres]'"
            ) from exc
        async with AsyncPostgresSaver.from_conn_string(target) as saver:
            await saver.setup()
            yield saver
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    Path(target).parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(target) as saver:
        yield saver
