"""``execute_tools``: run one tool call (SPEC R2.5, R2.7, R2.9, §12).

The graph sends one task per tool call (``Send``), so the calls of one native response
run concurrently and each finished result is its own checkpointed write. The call runs
through LangGraph's ``ToolNode`` (:class:`~reactgraph.tools.runner.ToolRunner`), so
``interrupt()`` pauses the run, a returned ``Command`` is applied, and injected arguments
are filled, exactly as under LangGraph's prebuilt agent. Whatever else the tool does —
raise, time out, reject its arguments, return a dict, an object or an artifact — the
outcome is an observation the model sees next iteration.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER  # how a task sees its checkpointer
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command, interrupt

from reactgraph.engine.bindings import Engine
from reactgraph.tools.approval import (
    NO_CHECKPOINTER,
    STARTED_BEFORE,
    Decision,
    approval_request,
    needs_approval,
    read_decision,
    started_answer,
    started_decision,
)
from reactgraph.tools.artifacts import Artifact
from reactgraph.persistence.checkpointing import keep_answered_interrupt, record_answered_interrupt, wait_for_task_checkpoint
from reactgraph.events import ToolDone, ToolStarted, emit
from reactgraph.tools.hooks import run_after_tool, run_before_tool
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.nodes.model_step import model_node
from reactgraph.protocol.prompts import OBSERVATION, UNCHANGED_NOTE
from reactgraph.engine.state import ToolCallRequest
from reactgraph.engine.state import StepRecord
from reactgraph.tools.runner import error_of, outcome_digest


def to_observation_text(value: Any) -> str:
    """A tool result's content as text, for the step record, the ``iteration`` event,
    answer synthesis and JSON mode (SPEC §12).

    Strings pass through; content blocks give their text, and ``[<type> block]`` for a
    block without text (an image); anything else is JSON (non-ASCII kept)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(b, dict) and "type" in b for b in value):
        return "\n".join(
            b["text"] if isinstance(b.get("text"), str) else f"[{b['type']} block]" for b in value
        )
    return safe_json(value)


def _refusal(call: ToolCallRequest, selected: list[str] | None, engine: Engine) -> str | None:
    """Why the call cannot run at all (bad JSON arguments, a tool not offered, arguments
    that are not an object), or ``None``."""
    name = call.get("name") or ""
    available = [tool.name for tool in engine.tools_for(selected)]
    if call.get("error"):
        return str(call["error"])
    if name not in available:
        return f"unknown tool {name!r}. Available tools: {', '.join(available) or '(none)'}"
    if not isinstance(call.get("args"), dict):
        args = call.get("args")
        return f"arguments must be a JSON object, got {type(args).__name__}: {to_observation_text(args)[:200]}"
    return None


def _answer(output: Any, call_id: str) -> ToolMessage | None:
    """The tool message answering ``call_id`` in what the tool returned."""
    items = output if isinstance(output, list) else [output]
    for item in items:
        if isinstance(item, ToolMessage) and item.tool_call_id == call_id:
            return item
        if isinstance(item, Command) and isinstance(item.update, dict):
            for message in item.update.get("messages", []):
                if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
                    return message
    return None


def _with_artifact_note(message: ToolMessage) -> tuple[ToolMessage, Artifact | None]:
    """The model is sent the artifact's note, not its content (SPEC R2.9); an empty
    result says so."""
    artifact = message.artifact if isinstance(message.artifact, Artifact) else None
    content = message.content
    if artifact is not None and not (isinstance(content, str) and content.startswith(artifact.note())):
        text = to_observation_text(content)
        content = f"{artifact.note()}\n{text}" if text.strip() else artifact.note()
    elif content == "" or content == []:
        content = "(empty result)"
    if content is message.content:
        return message, artifact
    return message.model_copy(update={"content": content}), artifact


class ExecuteTools:
    """Run the tool call routed to this task and append its observation.

    Input is the ``Send`` payload ``{"call": ToolCallRequest, "iteration": int,
    "mode": "native" | "json", "selected_tools": list | None}``. Native mode appends the
    ``ToolMessage`` answering the call id (string content, or the tool's content blocks);
    JSON mode appends the observation as a user message (SPEC R2.3). The update goes out as
    a ``Command`` back to the payload mode's model node. Both append one step
    record (``return_direct`` set for a successful call of a ``return_direct`` tool) and
    emit ``iteration`` start; its ``done`` event is made from the saved update
    (:func:`reactgraph.events.tool_done_event`), except for a handoff to the parent graph,
    which saves nothing here and emits it itself.

    A tool that returns a ``Command`` gets it applied: its ``update`` (with the tool
    message, in JSON mode rewritten as the observation) plus the step record, and its
    ``goto``; a ``Command(graph=Command.PARENT)`` goes to the parent graph as is (a handoff
    ends this agent's run). ``interrupt()`` in a tool propagates: the run pauses with
    ``__interrupt__`` and, resumed with ``Command(resume=...)``, runs the call again from
    the start (LangGraph's semantics: the tool's ``interrupt()`` then returns the value).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, task: dict[str, Any], config: RunnableConfig) -> Any:
        await wait_for_task_checkpoint(config)  # durability "sync" on our savers: nothing runs before it is stored
        call: ToolCallRequest = task["call"]
        iteration = task["iteration"]
        name = call.get("name") or ""
        settings = self.engine.settings
        tool = self.engine.tools.get(name)
        refusal = _refusal(call, task.get("selected_tools"), self.engine)
        decision = None
        decided = task.get("decided")  # a repeat of a call a person decided: its outcome, not a second question
        requested_args = call.get("args")
        stopped = None  # approved, started, and its run stopped before the result was stored
        recorded = None  # the answer stored for the approved call before it runs
        if refusal is None and decided is None and needs_approval(call, tool, settings.approval):
            # Before anything is emitted or run: on resume the task starts over and
            # interrupt() returns the person's decision (R13.3). A run that cannot pause
            # (no checkpointer) does not run the call.
            if config.get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is None:
                decision = Decision.reject(NO_CHECKPOINTER)
            else:
                answer = interrupt(approval_request(call, iteration, tool.description if tool else ""))
                decision = started_decision(answer)
                if decision is not None:
                    stopped = STARTED_BEFORE
                else:
                    decision = read_decision(answer)
                    if decision.type != "reject":  # stored before it runs: a stopped run never asks again
                        recorded = started_answer(decision, side_effects=self.engine.repeat_changes_something(call))
                        await record_answered_interrupt(config, recorded)
            if decision.type == "edit":
                call = {**call, "args": decision.args}
        withheld = decision.observation if decision is not None and decision.type == "reject" else stopped
        if decided is not None:
            withheld = str(decided.get("observation") or "")
        if withheld is None:  # a rejected call or a decided repeat does not start: only its ``done`` is sent
            emit(ToolStarted(iteration=iteration, tool_name=name, tool_args=call.get("args"), tool_call_id=call["id"]))
        started = time.perf_counter()
        output: Any = None
        invocation = {"type": "tool_call", "name": name, "args": call.get("args"), "id": call["id"]}
        if refusal is None and withheld is None and settings.before_tool:
            invocation, withheld = await run_before_tool(settings.before_tool, invocation)
            call = {**call, "args": invocation["args"]}
        ran = refusal is None and withheld is None
        if ran:
            assert self.engine.runner is not None  # Engine.build always sets it
            try:
                output = await self.engine.runner.run(invocation, config, settings.tool_timeout)
            except TimeoutError:
                refusal = f"tool {name!r} timed out after {settings.tool_timeout:g} seconds"
            except BaseException as exc:  # cancelled (a stop, a dropped stream) or failed mid-call
                if recorded is not None and not isinstance(exc, GraphBubbleUp):  # not the tool's own interrupt()
                    keep_answered_interrupt(config, recorded)
                raise
        answer = _answer(output, call["id"]) if refusal is None and withheld is None else None
        if answer is None:
            if decided is not None:  # the earlier call's result, or the person's rejection of it
                text, failed = withheld, decided.get("error") is not None
            elif withheld is not None:
                text, failed = withheld, True
            elif refusal:
                text, failed = f"Error: {refusal}", True
            else:
                text, failed = "(no result: the tool handed control to another agent)", False
            answer = ToolMessage(text, tool_call_id=call["id"], name=name or "unknown", status="error" if failed else "success")
        elif settings.after_tool:
            answer = await run_after_tool(settings.after_tool, invocation, answer)
        answer, artifact = _with_artifact_note(answer)
        observation = to_observation_text(answer.content)
        error = error_of(answer)
        repeat_of = call.get("repeat_of") or {}
        unchanged = bool(repeat_of) and ran and outcome_digest(observation, error) == repeat_of.get("digest")
        # Notes for the model (a repeat's unchanged result; a value no one wrote, under the
        # permissive policy); the record keeps the tool's own words.
        note = (UNCHANGED_NOTE.format(iteration=repeat_of.get("iteration")) if unchanged else "") \
            + (str(call.get("note") or "") if ran else "")
        if note and isinstance(answer.content, str):
            answer = answer.model_copy(update={"content": answer.content + note})
        elapsed = time.perf_counter() - started
        # The ``done`` event is made from this node's update once the checkpointer holds it
        # (reactgraph.events.tool_done_event), never before. A handoff to the
        # parent graph saves no update here, so it is reported now.
        if isinstance(output, Command) and output.graph == Command.PARENT:
            emit(ToolDone(iteration=iteration, tool_name=name,
                          observation=observation[: self.engine.settings.observation_preview_chars], error=error,
                          iter_elapsed=round(elapsed, 4), tool_call_id=call["id"],
                          artifact=artifact.to_dict() if artifact else None))
            return output
        message: BaseMessage = answer
        if task["mode"] == "json":
            message = HumanMessage(OBSERVATION.format(tool_name=name or "unknown", observation=observation) + note)
        record: StepRecord = {
            "iteration": iteration,
            "tool_call_id": call["id"],
            "tool_name": name,
            "tool_args": call.get("args"),
            "observation": observation,
            "error": error,
            "refused": call.get("refused"),
            "ran": ran,
            "unchanged": unchanged,
            "approval": {"approve": "approved", "edit": "edited", "reject": "rejected"}[decision.type] if decision
            else (decided or {}).get("approval"),
            "elapsed": elapsed,
            "artifact": artifact.to_dict() if artifact else None,
            "return_direct": bool(tool is not None and tool.return_direct and error is None),
            **({"model": task["model"]} if task.get("model") else {}),  # fallback models: who asked
        }
        if decision is not None and decision.type == "edit":
            record["requested_args"] = requested_args  # what the model asked for: a repeat of it is this call
        if decided is not None:
            record["repeat_of_decided"] = decided.get("tool_call_id")
        update: dict[str, Any] = {"steps": [record]}
        # Back to the model node, which drains follow-ups first (R7.2), routed here from the
        # Send payload: a conditional edge would copy every channel of the state to read
        # ``mode``, and a route written with the update is saved with it.
        back = model_node(task)
        if not isinstance(output, (Command, list)):
            return Command(update={**update, "messages": [message]}, goto=back)
        # A Command for this graph: its messages join ours (the answer to the call rewritten
        # as above); a Command for the parent graph is passed on as it is.
        applied: list[Command] = []
        messages: list[Any] = []
        for item in output if isinstance(output, list) else [output]:
            if not isinstance(item, Command):
                messages.append(message if item.tool_call_id == call["id"] else item)
            elif item.graph == Command.PARENT or not isinstance(item.update, dict):
                applied.append(item)
            else:
                messages.extend(message if getattr(m, "tool_call_id", None) == call["id"] else m
                                for m in item.update.get("messages", []))
                applied.append(Command(update={k: v for k, v in item.update.items() if k != "messages"}, goto=item.goto))
        return [*applied, Command(update={**update, "messages": messages}, goto=back)]
