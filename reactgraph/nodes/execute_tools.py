"""``execute_tools``: run one tool call (SPEC R2.5, R2.7, R2.9, §12).

The graph sends one task per tool call (``Send``), so the calls of one native response
run concurrently and each finished result is its own checkpointed write. Whatever the
tool does — raise, time out, reject its arguments, return a dict, an object or an
artifact — the outcome is a string observation the model sees next iteration.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from reactgraph.artifacts import Artifact
from reactgraph.dualmode import call_tool
from reactgraph.engine import Engine
from reactgraph.events import emit
from reactgraph.jsonparse import safe_json
from reactgraph.prompts import OBSERVATION
from reactgraph.state import ToolCallRequest


def to_observation_text(value: Any) -> str:
    """A tool's output as the string the model is sent (SPEC §12: tool results are strings).

    Strings pass through; text content blocks are joined; anything else is JSON
    (non-ASCII kept, unknown objects through ``str``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, (str, dict)) for b in value):
        texts = [b if isinstance(b, str) else b.get("text") for b in value]
        if all(isinstance(t, str) for t in texts):
            return "\n".join(texts)  # type: ignore[arg-type]
    return safe_json(value)


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        problems.append(f"{where}: {error.get('msg')}")
    return "invalid arguments — " + "; ".join(problems)


async def run_tool_call(
    engine: Engine, call: ToolCallRequest, selected: list[str] | None, config: RunnableConfig | None = None
) -> tuple[str, str | None, Artifact | None]:
    """Run one tool call and describe the outcome.

    Args:
        engine: The agent's engine (tools, timeout).
        call: The call: id, tool name, arguments, and an ``error`` when the call was
            already unusable (e.g. arguments that were not valid JSON).
        selected: Tool names offered this turn (``None`` = all); a call to any other
            name is an "unknown tool" observation listing the available ones (SPEC R5.2).
        config: RunnableConfig passed to the tool (callbacks, tracing).

    Returns:
        ``(observation, error, artifact)``: the text for the model, the error message
        (``None`` on success; then the observation is the result), and an artifact if the
        tool returned one. Never raises except for cancellation.
    """
    name = call.get("name") or ""
    available = {tool.name: tool for tool in engine.tools_for(selected)}
    if call.get("error"):
        error = str(call["error"])
    elif name not in available:
        known = ", ".join(available) or "(none)"
        error = f"unknown tool {name!r}. Available tools: {known}"
    elif not isinstance(call.get("args"), dict):
        args = call.get("args")
        error = f"arguments must be a JSON object, got {type(args).__name__}: {to_observation_text(args)[:200]}"
    else:
        tool = available[name]
        invocation = {"type": "tool_call", "name": name, "args": call["args"], "id": call["id"]}
        try:
            output = await call_tool(tool, invocation, config, engine.settings.tool_timeout)
        except TimeoutError:
            error = f"tool {name!r} timed out after {engine.settings.tool_timeout:g} seconds"
        except ValidationError as exc:
            error = _validation_message(exc)
        except Exception as exc:  # a tool failure is an observation, never a crash (R2.7)
            error = f"{type(exc).__name__}: {exc}"
        else:
            return _describe_output(output)
    return f"Error: {error}", error, None


def _describe_output(output: Any) -> tuple[str, str | None, Artifact | None]:
    artifact: Artifact | None = None
    if isinstance(output, Artifact):
        return output.note(), None, output
    if isinstance(output, ToolMessage):
        if isinstance(output.artifact, Artifact):
            artifact = output.artifact
        text = to_observation_text(output.content)
        if artifact is not None:
            text = f"{artifact.note()}\n{text}" if text.strip() else artifact.note()
        if output.status == "error":  # the tool's own handle_tool_error produced it
            return text, text or "tool reported an error", artifact
        return text or "(empty result)", None, artifact
    text = to_observation_text(output)
    return text or "(empty result)", None, None


class ExecuteTools:
    """Run the tool call routed to this task and append its observation.

    Input is the ``Send`` payload ``{"call": ToolCallRequest, "iteration": int,
    "mode": "native" | "json", "selected_tools": list | None}``. Native mode appends a
    ``ToolMessage`` answering the call id; JSON mode appends the observation as a user
    message (SPEC R2.3). Both append one step record and emit ``iteration`` start/done.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, task: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        call: ToolCallRequest = task["call"]
        iteration = task["iteration"]
        name = call.get("name") or ""
        emit("step", type="iteration", status="start", iteration=iteration, tool_name=name,
             tool_args=call.get("args"), tool_call_id=call["id"])
        started = time.perf_counter()
        observation, error, artifact = await run_tool_call(self.engine, call, task.get("selected_tools"), config)
        elapsed = time.perf_counter() - started
        preview_limit = self.engine.settings.observation_preview_chars
        emit("step", type="iteration", status="done", iteration=iteration, tool_name=name,
             observation=observation[:preview_limit], error=error, iter_elapsed=round(elapsed, 4),
             tool_call_id=call["id"], artifact=artifact.to_dict() if artifact else None)
        if task["mode"] == "native":
            message: Any = ToolMessage(content=observation, tool_call_id=call["id"], name=name or "unknown",
                                       status="error" if error else "success")
        else:
            message = HumanMessage(OBSERVATION.format(tool_name=name or "unknown", observation=observation))
        record = {
            "iteration": iteration,
            "tool_call_id": call["id"],
            "tool_name": name,
            "tool_args": call.get("args"),
            "observation": observation,
            "error": error,
            "refused": call.get("refused"),
            "elapsed": elapsed,
            "artifact": artifact.to_dict() if artifact else None,
        }
        return {"messages": [message], "steps": [record], "pending_tool_calls": []}
