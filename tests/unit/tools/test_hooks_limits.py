"""Tool hooks and usage limits (SPEC R13.3): ``before_tool`` / ``after_tool``
around every call (block, rewrite arguments, rewrite the result, raise), and each usage
limit ending the loop with the step summary, synthesis and ``finish_reason`` naming it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, ModelAbilities, ModelPrice, ReActAgent, ToolRejection, UsageLimits
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY

ran: list[dict[str, Any]] = []


@tool
def set_speed(machine: str, rpm: int) -> str:
    """Set a machine's spindle speed."""
    ran.append({"machine": machine, "rpm": rpm})
    return f"{machine} at {rpm} rpm"


@tool
def read_status(machine: str) -> str:
    """Read a machine's status."""
    ran.append({"machine": machine})
    return f"{machine}: normal"


@pytest.fixture(autouse=True)
def fresh_record():
    ran.clear()


def calls(*items: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name, args, call_id) for name, args, call_id in items])


def tool_messages(model: ScriptedChatModel, loop_call: int) -> dict[str, ToolMessage]:
    loop = model.calls_except("synthesis")
    return {m.tool_call_id: m for m in loop[loop_call] if isinstance(m, ToolMessage)}


def speed_model() -> ScriptedChatModel:
    return ScriptedChatModel(responses=[calls(("set_speed", {"machine": "CNC-001", "rpm": 9000}, "c1")), "Done."])


# ------------------------------------------------------------------------------ hooks


async def test_a_before_hook_that_blocks_keeps_the_call_from_running():
    def no_fast_spindles(call):
        if call["name"] == "set_speed" and call["args"]["rpm"] > 6000:
            return ToolRejection("Speeds above 6000 rpm need the line supervisor.")
        return None

    model = speed_model()
    result = await ReActAgent(model, [set_speed], abilities=NATIVE_TOOLS_ONLY,
                              settings=AgentSettings(before_tool=[no_fast_spindles])).run("speed up CNC-001")
    assert ran == []
    message = tool_messages(model, 1)["c1"]
    assert (message.content, message.status) == ("Speeds above 6000 rpm need the line supervisor.", "error")
    assert result.steps[0].error == "Speeds above 6000 rpm need the line supervisor."


async def test_before_hooks_compose_and_may_be_async():
    async def clamp(call):
        await asyncio.sleep(0)
        return {**call, "args": {**call["args"], "rpm": min(call["args"]["rpm"], 6000)}}

    def round_down(call):
        return {"args": {**call["args"], "rpm": call["args"]["rpm"] // 1000 * 1000 - 500}}

    model = speed_model()
    result = await ReActAgent(model, [set_speed], abilities=NATIVE_TOOLS_ONLY,
                              settings=AgentSettings(before_tool=(clamp, round_down))).run("speed up CNC-001")
    assert ran == [{"machine": "CNC-001", "rpm": 5500}]  # clamp first, then the next hook sees 6000
    assert result.steps[0].tool_args == {"machine": "CNC-001", "rpm": 5500}
    assert tool_messages(model, 1)["c1"].content == "CNC-001 at 5500 rpm"


async def test_an_after_hook_rewrites_the_result_the_model_sees():
    seen: list[tuple[str, str]] = []

    def redact(call, result):
        seen.append((call["name"], result.content))
        return result.content.replace("9000", "[redacted]")

    def stamp(call, result):
        return ToolMessage(result.content + " (checked)", tool_call_id="ignored", name="ignored")

    model = speed_model()
    result = await ReActAgent(model, [set_speed], abilities=NATIVE_TOOLS_ONLY,
                              settings=AgentSettings(after_tool=[redact, stamp])).run("speed up CNC-001")
    assert seen == [("set_speed", "CNC-001 at 9000 rpm")]
    message = tool_messages(model, 1)["c1"]
    assert (message.content, message.tool_call_id, message.name) == ("CNC-001 at [redacted] rpm (checked)", "c1", "set_speed")
    assert result.steps[0].observation == "CNC-001 at [redacted] rpm (checked)"


async def test_a_hook_that_raises_becomes_an_observation():
    def broken_before(call):
        raise RuntimeError("policy service down")

    def broken_after(call, result):
        raise KeyError("audit")

    model = speed_model()
    result = await ReActAgent(model, [set_speed], abilities=NATIVE_TOOLS_ONLY,
                              settings=AgentSettings(before_tool=[broken_before])).run("speed up CNC-001")
    assert ran == [] and result.finish_reason == "final_answer"
    assert tool_messages(model, 1)["c1"].content == \
        "Error: before_tool hook broken_before failed: RuntimeError: policy service down"

    model = speed_model()
    result = await ReActAgent(model, [set_speed], abilities=NATIVE_TOOLS_ONLY,
                              settings=AgentSettings(after_tool=[broken_after])).run("speed up CNC-001")
    assert ran == [{"machine": "CNC-001", "rpm": 9000}]  # it ran; its result is replaced by the hook's error
    assert result.steps[0].error == "after_tool hook broken_after failed: KeyError: 'audit'"


async def test_a_before_hook_returning_nonsense_is_reported_not_run():
    model = speed_model()
    await ReActAgent(model, [set_speed], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(before_tool=[lambda call: 42])).run("q")
    assert ran == [] and "returned int" in tool_messages(model, 1)["c1"].content


async def test_hooks_run_in_json_mode_too():
    model = ScriptedChatModel(responses=[
        json.dumps({"type": "tool_call", "reasoning": "r", "tool_name": "set_speed", "tool_args": {"machine": "A", "rpm": 1}}),
        json.dumps({"type": "final_answer", "reasoning": "r", "answer": "ok"})])
    await ReActAgent(model, [set_speed], abilities=ModelAbilities(json_mode=True),
                     settings=AgentSettings(after_tool=[lambda call, result: "hooked"])).run("q")
    observation = [m for m in model.calls[1] if isinstance(m, HumanMessage)][-1].content
    assert "hooked" in observation and ran == [{"machine": "A", "rpm": 1}]


def test_hook_settings_are_checked():
    with pytest.raises(ValueError, match="before_tool"):
        AgentSettings(before_tool=[1])
    assert AgentSettings(after_tool=print).after_tool == (print,)
    with pytest.raises(ValueError, match="approval rule"):
        AgentSettings(approval={"set_speed": "sometimes"})


# ----------------------------------------------------------------------------- limits


def looping_model(usage: dict[str, int] | None = None) -> ScriptedChatModel:
    """Asks for one status read per call, forever; reports ``usage`` on each call."""
    counter = iter(range(1, 1000))

    def next_call(_messages):
        n = next(counter)
        return AIMessage(content="", tool_calls=[tool_call("read_status", {"machine": f"M-{n}"}, f"c{n}")],
                         usage_metadata={"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, **(usage or {})})

    return ScriptedChatModel(responses=[next_call], repeat_last=True, synthesis="Summary of what was read.")


async def limited(limits: UsageLimits, model: ScriptedChatModel | None = None, tools=None):
    model = model or looping_model()
    agent = ReActAgent(model, tools or [read_status, set_speed], abilities=NATIVE_TOOLS_ONLY,
                       settings=AgentSettings(limits=limits, stall_detection=False))
    return [event async for event in agent.astream_events("read everything")], model


async def test_the_model_call_limit_ends_the_loop_with_summary_and_synthesis():
    events, model = await limited(UsageLimits(model_calls=3))
    done = events[-1].data
    assert done["finish_reason"] == "model_call_limit" and done["answer"] == "Summary of what was read."
    assert done["limit"]["limit"] == "model_calls" and done["limit"]["max"] == 3 and done["limit"]["used"] == 3
    assert done["limit"]["figures"]["tool_calls"] == 3
    assert len(model.calls_except("synthesis")) == 3
    assert [e.data["status"] for e in events if e.channel == "answer"][0] == "start"  # synthesis streamed
    assert len(ran) == 3


async def test_the_tool_call_limit_refuses_calls_past_it_in_a_batch():
    model = ScriptedChatModel(responses=[calls(("read_status", {"machine": "A"}, "a"), ("read_status", {"machine": "B"}, "b"),
                                               ("read_status", {"machine": "C"}, "c"))], repeat_last=True, synthesis="s")
    events, model = await limited(UsageLimits(tool_calls=2), model)
    done = events[-1].data
    assert done["finish_reason"] == "tool_call_limit" and done["limit"]["used"] == 2
    assert ran == [{"machine": "A"}, {"machine": "B"}]
    refused = [e.data for e in events if e.channel == "step" and e.data["type"] == "iteration" and e.data["status"] == "done" and e.data["error"]]
    assert [r["tool_call_id"] for r in refused] == ["c"] and "tool call limit reached (2" in refused[0]["error"]
    assert len(model.calls_except("synthesis")) == 1


async def test_a_per_tool_limit_counts_only_that_tool():
    model = ScriptedChatModel(responses=[calls(("set_speed", {"machine": "A", "rpm": 1}, "s1"), ("read_status", {"machine": "A"}, "r1")),
                                         calls(("set_speed", {"machine": "B", "rpm": 2}, "s2"), ("read_status", {"machine": "B"}, "r2"))],
                              repeat_last=True, synthesis="s")
    events, _ = await limited(UsageLimits(tool_calls_per_tool={"set_speed": 1}), model)
    done = events[-1].data
    assert done["finish_reason"] == "tool_call_limit"
    assert (done["limit"]["limit"], done["limit"]["tool"], done["limit"]["used"]) == ("tool_calls_per_tool", "set_speed", 1)
    assert ran == [{"machine": "A", "rpm": 1}, {"machine": "A"}]


@pytest.mark.parametrize(("limits", "name"), [
    (UsageLimits(input_tokens=250), "input_tokens"),
    (UsageLimits(output_tokens=100), "output_tokens"),
    (UsageLimits(total_tokens=350), "total_tokens"),
])
async def test_token_limits(limits, name):
    events, model = await limited(limits, looping_model({"input_tokens": 100, "output_tokens": 40, "total_tokens": 140}))
    done = events[-1].data
    assert done["finish_reason"] == "token_limit" and done["limit"]["limit"] == name
    assert done["limit"]["used"] >= done["limit"]["max"]
    loop_calls = len(model.calls_except("synthesis"))
    assert loop_calls == {"input_tokens": 3, "output_tokens": 3, "total_tokens": 3}[name]


async def test_the_cost_limit_uses_the_models_price():
    price = ModelPrice(input_per_million=2.0, output_per_million=10.0)  # one call: 100 in, 40 out = 0.0006
    events, _ = await limited(UsageLimits(cost=0.0015, prices=price),
                              looping_model({"input_tokens": 100, "output_tokens": 40, "total_tokens": 140}))
    done = events[-1].data
    assert done["finish_reason"] == "cost_limit"
    assert done["limit"]["used"] == pytest.approx(0.0018) and done["limit"]["figures"]["cost"] == pytest.approx(0.0018)
    assert UsageLimits(prices={"gpt-x": price}).price_for("gpt-x") is price  # a table, looked up by model name


async def test_the_fallback_answer_says_which_limit():
    agent = ReActAgent(looping_model(), [read_status], abilities=NATIVE_TOOLS_ONLY,
                       settings=AgentSettings(limits=UsageLimits(tool_calls=2), stall_detection=False))
    result = await agent.run("Read the status of every machine")
    assert result.finish_reason == "tool_call_limit" and result.limit["max"] == 2
    assert result.answer.startswith("I stopped because the run reached its limit of 2 tool calls (used 2).")
    assert "read_status" in result.answer  # the usual step summary follows


def test_limit_settings_are_checked():
    with pytest.raises(ValueError, match="needs the model's prices"):
        UsageLimits(cost=1.0)
    with pytest.raises(ValueError, match="at least 1"):
        UsageLimits(model_calls=0)
    with pytest.raises(ValueError, match="no entry for the model"):
        ReActAgent(looping_model(), [read_status], abilities=NATIVE_TOOLS_ONLY,
                   settings=AgentSettings(limits=UsageLimits(cost=1.0, prices={"gpt-x": ModelPrice(1, 1)})))


class HeldModel(ScriptedChatModel):
    """:func:`looping_model`'s script, each loop call held until ``open`` is set; ``entered``
    is set when a held call began, ``attempts`` counts every loop call begun (cut ones too)."""

    attempts: int = 0
    entered: Any = None
    open: Any = None

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        self.attempts += 1
        self.entered.set()
        await self.open.wait()
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


async def cut_during_a_model_call(events, model: HeldModel) -> None:
    """Read ``events`` until a loop model call is in flight, then close them (a client that
    goes away)."""
    model.entered.clear()
    async for event in events:
        if event.channel == "step" and event.data.get("type") == "thinking" and event.data.get("status") == "start":
            await asyncio.wait_for(model.entered.wait(), 30)
            break
    await events.aclose()


async def test_model_calls_cut_by_a_disconnect_count_against_the_limit_after_resume(checkpoint_url):
    """``model_calls=3``: two runs cut while a loop call is in flight, each then resumed, and
    the last resume run to its end: the model was sent three loop calls in all, not five,
    and the limit ends the run (SPEC R2.6: the limit holds across disconnects and resumes)."""
    from reactgraph import open_persistence

    base = looping_model()
    model = HeldModel(responses=base.responses, repeat_last=True, synthesis="Lecture terminée.")
    model.entered, model.open = asyncio.Event(), asyncio.Event()
    async with open_persistence(checkpoint_url) as store:
        agent = ReActAgent(model, [read_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=store.checkpointer,
                           interrupt_queue=store.interrupt_queue,
                           settings=AgentSettings(limits=UsageLimits(model_calls=3), stall_detection=False,
                                                  synthesis="always"))
        thread = f"cut-limits-{id(model)}"
        await cut_during_a_model_call(agent.astream_events("Lis tout, s'il te plaît", thread_id=thread), model)
        assert await agent.thread_status(thread) == "interrupted"
        await cut_during_a_model_call(agent.aresume_events(thread), model)
        model.open.set()
        events = [event async for event in agent.aresume_events(thread)]
    done = events[-1].data
    assert done["finish_reason"] == "model_call_limit" and done["answer"] == "Lecture terminée."
    assert done["limit"]["used"] == 3 and done["usage"]["model_calls"] >= 3
    assert model.attempts == 3  # two cut, one answered; without the count of the cut ones: five
