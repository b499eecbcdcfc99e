"""The durability protocol between a run and its checkpointer: what a run waits for before
it reads or ends (:func:`settle_saves`, :func:`commit_held`, :func:`wait_for_task_checkpoint`),
the durability a run asks of the graph (:func:`run_durability`), answers to interrupts kept
across a crash (:func:`record_answered_interrupt`), and what a snapshot says is left to do
(:func:`has_pending_work`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langgraph._internal._constants import (  # how a task sees its checkpointer and checkpoints
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_SEND,
    CONFIG_KEY_TASK_ID,
    INTERRUPT,
    NS_SEP,
    NULL_TASK_ID,
    RESUME,
)
from langgraph.types import Interrupt, StateSnapshot

from reactgraph.persistence.folding import TASKS_WAIT_FOR_CHECKPOINT

logger = logging.getLogger(__name__)


def has_pending_work(snapshot: StateSnapshot) -> bool:
    """Whether the thread's last run has work left that resuming would do (SPEC R13.5).

    Decided from the checkpoint's tasks, not from ``snapshot.next`` alone: LangGraph's
    live snapshot leaves a task out of ``next`` once its write is saved, so a run cut
    after every tool of a fan-out finished (a client disconnect, ``kill -9``) but before
    the step's checkpoint was committed shows ``next == ()`` although the graph still
    has to apply those writes and go on. A finished run's checkpoint has no tasks.

    Args:
        snapshot: ``await graph.aget_state({"configurable": {"thread_id": ...}})``.

    Returns:
        True when there is a task still to run, or a finished task whose step was not
        committed; False for a thread with no checkpoint or whose last run ended.
    """
    return bool(snapshot.values) and bool(snapshot.next or snapshot.tasks)




async def settle_saves(checkpointer: Any, config: Any) -> None:
    """After a run on ``config``'s thread was cancelled (or its event stream closed): wait,
    shielded from a second cancellation, until ``checkpointer`` has committed what the run
    handed it (``settle_thread`` of the savers of :func:`open_persistence`; any other
    checkpointer: nothing to wait for). A failure to commit is logged; it does not replace
    the cancellation."""
    settle = getattr(checkpointer, "settle_thread", None)
    if settle is None:
        return
    try:
        await asyncio.shield(settle(config))
    except asyncio.CancelledError:
        pass
    except Exception:
        logger.exception("a cancelled run's checkpoint saves could not be committed")


def run_durability(checkpointer: Any, durability: str) -> tuple[str, dict[str, Any]]:
    """How a run keeps ``durability`` (``AgentSettings.durability``) on ``checkpointer``:
    the durability to pass to LangGraph and the entries to add to the run's
    ``configurable``.

    ``"sync"`` promises that no tool starts before the checkpoint it resumes from is
    stored. LangGraph keeps it by waiting for every superstep's checkpoint before the next
    superstep starts, a wait per model step as well as per tool step. On the savers of
    :func:`open_persistence` (which have ``checkpoint_stored``) the run is given LangGraph's
    ``"async"`` instead, and each tool task waits for the checkpoint it runs from
    (:func:`wait_for_task_checkpoint`) before it does anything; the saver holds the
    checkpoint before a model step and commits it with the one the tool step waits for
    (or within :data:`WRITE_HOLD_SECONDS`): one commit per iteration, and no wait before a
    model step. ``start_turn`` waits the same way for the turn's input: one more commit
    per turn, so no event of a turn goes out before its question is stored. A process killed before that commit loses what the held checkpoint carried
    (the last tool step's results: those tools run again on resume, as when it is killed
    just before they end), never a model step's tool calls once a tool has started (issue
    20, docs/checkpoints.md). Other checkpointers and other modes run as asked.

    Returns:
        ``(langgraph_durability, configurable_entries)``.
    """
    if durability == "sync" and hasattr(checkpointer, "checkpoint_stored"):
        return "async", {TASKS_WAIT_FOR_CHECKPOINT: True}
    return durability, {}


async def wait_for_task_checkpoint(config: Any) -> None:
    """In a task of a run started with :func:`run_durability`'s entries: wait until the
    checkpoint the task runs from is stored (``checkpoint_stored`` of the run's saver);
    at once for any other run.

    Args:
        config: The task's ``RunnableConfig`` (LangGraph's: the checkpointer, the task's
            namespace and the checkpoint each enclosing graph's tasks run from).

    Raises:
        Exception: What storing that checkpoint raised.
    """
    configurable = config.get("configurable") or {}
    if not configurable.get(TASKS_WAIT_FOR_CHECKPOINT):  # set only for a saver with checkpoint_stored
        return
    thread, checkpoint_id = _task_checkpoint(configurable)
    if checkpoint_id:
        await configurable[CONFIG_KEY_CHECKPOINTER].checkpoint_stored(thread, checkpoint_id)


def _task_checkpoint(configurable: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``({"configurable": {thread_id, checkpoint_ns}}, checkpoint id)`` of the checkpoint a
    task runs from, read from the task's ``configurable`` (LangGraph's: its namespace and
    the checkpoint each enclosing graph's tasks run from)."""
    task_ns = str(configurable.get(CONFIG_KEY_CHECKPOINT_NS) or "")
    graph_ns = task_ns.rpartition(NS_SEP)[0]  # the task's own part ("node:task_id") dropped
    checkpoint_id = (configurable.get(CONFIG_KEY_CHECKPOINT_MAP) or {}).get(graph_ns)
    return {"configurable": {"thread_id": configurable.get("thread_id"), "checkpoint_ns": graph_ns}}, checkpoint_id


async def record_answered_interrupt(config: Any, answer: Any) -> bool:
    """In a task that paused on ``interrupt()`` and was given ``answer``: store, before the
    task does anything with it, that its interrupt is answered with ``answer`` (
    SPEC R13.3). The task's writes are otherwise stored only when it ends; a process
    killed meanwhile left the interrupt waiting, and the person was asked again for a call
    that had started.

    Written as LangGraph's own task writes, committed now: ``RESUME`` holding ``[answer]``
    (the task run again reads it from its ``interrupt()``) and an empty ``INTERRUPT`` (the
    checkpoint's task no longer waits on a question, so the thread reads as interrupted,
    not waiting). The task's writes at its end replace both. In a subgraph (a DAG plan
    step's loop) the enclosing graphs' tasks hold the interrupt too, as they stored it when
    it paused them: it is taken out of theirs as well (:func:`_forget_enclosing_interrupt`).

    Args:
        config: The task's ``RunnableConfig``.
        answer: What the task's (first) ``interrupt()`` is to return when it runs again.

    Returns:
        True when it was stored; False for a run without a checkpointer.

    Raises:
        Exception: What storing it raised.
    """
    configurable = config.get("configurable") or {}
    saver = configurable.get(CONFIG_KEY_CHECKPOINTER)
    thread, checkpoint_id = _task_checkpoint(configurable)
    if saver is None or not checkpoint_id:
        return False
    target = {"configurable": {**thread["configurable"], "checkpoint_id": checkpoint_id}}
    await saver.aput_writes(target, [(INTERRUPT, []), (RESUME, [answer])], str(configurable[CONFIG_KEY_TASK_ID]))
    await commit_held(saver, target)
    await _forget_enclosing_interrupt(saver, configurable)
    return True


async def _forget_enclosing_interrupt(saver: Any, configurable: dict[str, Any]) -> None:
    """Take the interrupt of the task ``configurable`` describes (its first: the id
    LangGraph gives it, ``Interrupt.from_ns(..., task namespace)``) out of the stored
    ``INTERRUPT`` write of each task that encloses it (a subgraph's parent task keeps the
    interrupts of its subgraph's tasks as one write); the others it holds stay, still
    waiting. Nothing to do for a task of the top graph."""
    task_ns = str(configurable.get(CONFIG_KEY_CHECKPOINT_NS) or "")
    parts = task_ns.split(NS_SEP)
    if len(parts) < 2:
        return
    answered = Interrupt.from_ns(None, task_ns).id
    checkpoints = configurable.get(CONFIG_KEY_CHECKPOINT_MAP) or {}
    for level in range(len(parts) - 1):  # each enclosing task: parts[level] in the graph of parts[:level]
        graph_ns, task_id = NS_SEP.join(parts[:level]), parts[level].rpartition(":")[2]
        checkpoint_id = checkpoints.get(graph_ns)
        if not checkpoint_id or not task_id:
            continue
        target = {"configurable": {"thread_id": configurable.get("thread_id"), "checkpoint_ns": graph_ns,
                                   "checkpoint_id": checkpoint_id}}
        stored = await saver.aget_tuple(target)
        for writer, channel, value in (stored.pending_writes or []) if stored is not None else []:
            if writer == task_id and channel == INTERRUPT and isinstance(value, (list, tuple)):
                left = [item for item in value if getattr(item, "id", None) != answered]
                if len(left) != len(value):
                    await saver.aput_writes(target, [(INTERRUPT, left)], task_id)
                    await commit_held(saver, target)


def keep_answered_interrupt(config: Any, answer: Any) -> None:
    """In a task that stored ``answer`` with :func:`record_answered_interrupt` and is
    ending without a result (cancelled: ``POST /threads/{id}/cancel``, a dropped stream;
    or failed): make the task's own writes carry ``answer`` too (SPEC R13.3).

    LangGraph stores a cancelled or failed task's writes as it ends, and among them the
    resume value its ``interrupt()`` was given (the person's plain decision), which
    replaces the stored ``answer``: the task run again on resume would run the approved
    call a second time. Queued last, ``answer`` is the resume value that stays. Not for a
    task paused by a later ``interrupt()`` of its own: that one runs again from the start.

    Args:
        config: The task's ``RunnableConfig``.
        answer: What :func:`record_answered_interrupt` stored.
    """
    send = (config.get("configurable") or {}).get(CONFIG_KEY_SEND)
    if send is not None:
        send([(RESUME, [answer])])




async def commit_held(checkpointer: Any, config: Any) -> None:
    """After a run on ``config``'s thread ended (returned, paused or failed): commit what
    ``checkpointer`` still holds of it (``commit_held`` of the savers of
    :func:`open_persistence`, which hold the last checkpoint of a run started with
    :func:`run_durability`'s entries; any other checkpointer: nothing to do), so the thread
    reads whole in every process once the run has freed it.

    Raises:
        Exception: What committing raised (what it carried stays held).
    """
    commit = getattr(checkpointer, "commit_held", None)
    if commit is not None:
        await commit(config)


async def record_cut_model_calls(checkpointer: Any, config: Any, calls: int) -> None:
    """After a run on ``config``'s thread was cancelled (its client went away) while
    ``calls`` model calls were in flight, once its saves are settled: add them to the
    turn's ``usage`` (``model_calls``) in its last checkpoint, so the usage limits count
    them when the run is resumed (a disconnect/resume loop made 5 calls under
    ``model_calls=3``; SPEC R13.3). The provider was asked, whatever became of the answer.

    Written as an input write of the checkpoint (LangGraph's ``NULL_TASK_ID``, as a
    ``Command(update=...)`` is): the resumed run, and every read of the thread, applies it
    to the state. Input writes of a checkpoint are indexed from 0 in each batch and a
    write at a taken index is left out, so the batch repeats the ones already there
    (left out again) before the new one.

    Args:
        checkpointer: The run's checkpointer (nothing is done without one).
        config: The run's config (its ``thread_id``).
        calls: Model calls cut (nothing is done for 0).
    """
    if checkpointer is None or calls <= 0:
        return
    thread = {"configurable": {"thread_id": config["configurable"]["thread_id"], "checkpoint_ns": ""}}
    saved = await checkpointer.aget_tuple(thread)
    if saved is None:
        return
    taken = [(channel, value) for task_id, channel, value in saved.pending_writes or () if task_id == NULL_TASK_ID]
    await checkpointer.aput_writes(saved.config, [*taken, ("usage", {"model_calls": calls})], NULL_TASK_ID)
    await commit_held(checkpointer, saved.config)
