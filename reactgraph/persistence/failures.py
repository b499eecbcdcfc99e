"""Failure classification: whether a run failed where its state is kept (a checkpoint
saver, a store, the follow-up queue) rather than in its model or tools."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver

from reactgraph.persistence.interrupts import InterruptQueue


STORAGE_ERROR = "storage_error"
"""The ``finish_reason`` and ``error`` event ``kind`` of a run whose checkpointer or store
failed (:func:`is_storage_failure`)."""


def is_storage_failure(failure: BaseException) -> bool:
    """Whether a run's ``failure`` came from where its state is kept: a checkpoint saver, a
    LangGraph store or the follow-up queue (:class:`~reactgraph.InterruptQueue`, e.g. the
    Postgres one of :func:`open_persistence`) raised it (one of their methods is on its
    traceback, or on the traceback of an exception it was raised from: a database error, a
    value the serializer or the database refuses, a connection lost), rather than from the
    model. Such a run ends with ``finish_reason`` and ``error`` kind ``storage_error``, not
    ``model_error``.

    Args:
        failure: What the run's graph raised.

    Returns:
        ``True`` for a failure of a saver, a store or the follow-up queue.
    """
    from langgraph.store.base import BaseStore

    seen: set[int] = set()
    current: BaseException | None = failure
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frame = current.__traceback__
        while frame is not None:
            if isinstance(frame.tb_frame.f_locals.get("self"), (BaseCheckpointSaver, BaseStore, InterruptQueue)):
                return True
            frame = frame.tb_next
        current = current.__cause__ or current.__context__
    return False
