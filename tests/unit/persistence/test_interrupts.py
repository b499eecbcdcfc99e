"""Follow-ups during a run: SPEC §7 (R7.1–R7.5) and the ``inject`` event of §8.

Follow-ups are injected at every point of a run, in both modes; the scripted model checks
the provider protocol on every message list it is sent.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import (
    AgentSettings,
    InMemoryInterruptQueue,
    InterruptQueue,
    ModelAbilities,
    NoActiveRunError,
    ReActAgent,
    ThreadBusyError,
    create_react_graph,
)
from reactgraph.persistence.interrupts import INTERRUPT_PREFIX, format_interrupt
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE, GatedScan, HookedModel, wait_until

MODES = ["native", "json"]


def agent_for(mode: str, model: ScriptedChatModel, tools: list, **kwargs: Any) -> ReActAgent:
    """An agent in ``mode`` with the seed's two phases unless ``settings`` are given: these
    tests check what the loop and the synthesis call each see of a follow-up."""
    kwargs.setdefault("settings", AgentSettings(synthesis="always"))
    agent = ReActAgent(model, tools, abilities=NATIVE, use_native_tools=mode == "native", **kwargs)
    assert agent.mode == mode
    return agent


def calls_tool(mode: str, name: str, args: dict, call_id: str) -> AIMessage | str:
    if mode == "native":
        return AIMessage(content="", tool_calls=[tool_call(name, args, call_id)])
    return json.dumps({"type": "tool_call", "reasoning": f"use {name}", "tool_name": name, "tool_args": args})


def answers(mode: str, text: str) -> str:
    if mode == "native":
        return text
    return json.dumps({"type": "final_answer", "reasoning": "enough", "answer": text})


def interrupts_in(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if isinstance(m, HumanMessage) and str(m.content).startswith(INTERRUPT_PREFIX)]


def follow_ups_in(messages: list[BaseMessage]) -> list[str]:
    """The follow-up texts carried by the interrupt messages, in order."""
    return [text for m in interrupts_in(messages) for text in str(m.content)[len(INTERRUPT_PREFIX):].split("\n\n")]


def is_tool_result(message: BaseMessage) -> bool:
    return isinstance(message, ToolMessage) or (
        isinstance(message, HumanMessage) and str(message.content).startswith("Observation from")
    )


# R7.1 / R7.2: every point of a run ----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_follow_up_queued_before_the_first_model_call_reaches_it(tools, mode):
    """A plain graph sharing the queue: opened, follow-up put, then invoked."""
    queue = InMemoryInterruptQueue()
    model = ScriptedChatModel(responses=[answers(mode, "CNC-003 and CNC-001 are normal.")])
    graph = create_react_graph(model, tools, abilities=NATIVE, use_native_tools=mode == "native",
                               interrupt_queue=queue)
    async with queue.running("plant-7"):
        await queue.put("plant-7", "also CNC-001")
        state = await graph.ainvoke({"messages": [HumanMessage("status of CNC-003?")]},
                                    {"configurable": {"thread_id": "plant-7", "synthesize": False}})
    first = model.calls[0]
    assert [type(m).__name__ for m in first[1:]] == ["HumanMessage", "HumanMessage"]
    assert first[-1].content == "[USER INTERRUPT] also CNC-001"
    assert state["answer"] == "CNC-003 and CNC-001 are normal." and len(model.calls) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_follow_up_sent_while_a_tool_runs_reaches_the_next_model_call(tools, mode):
    box: dict[str, ReActAgent] = {}

    @tool
    async def inspect(equipment_id: str) -> str:
        """Inspect one machine (the user sends a follow-up meanwhile)."""
        await box["agent"].inject("plant-1", "also CNC-001 please")
        return f"{equipment_id}: inspected"

    if mode == "native":  # two calls in one message: the drain waits for both results
        first: Any = AIMessage(content="", tool_calls=[tool_call("inspect", {"equipment_id": "CNC-003"}, "c1"),
                                                      tool_call("get_status", {"equipment_id": "CNC-003"}, "c2")])
    else:
        first = calls_tool(mode, "inspect", {"equipment_id": "CNC-003"}, "c1")
    model = ScriptedChatModel(responses=[first, answers(mode, "both fine")])
    box["agent"] = agent = agent_for(mode, model, [*tools, inspect])
    result = await agent.run("check CNC-003", thread_id="plant-1")
    second = model.calls[1]
    assert interrupts_in(second) == [second[-1]]
    assert second[-1].content == "[USER INTERRUPT] also CNC-001 please"
    tail = [type(m).__name__ for m in second[2:]]
    assert tail == (["AIMessage", "ToolMessage", "ToolMessage", "HumanMessage"] if mode == "native"
                    else ["AIMessage", "HumanMessage", "HumanMessage"])
    assert is_tool_result(second[-2])
    assert result.answer == "both fine" and result.finish_reason == "final_answer"


@pytest.mark.parametrize("mode", MODES)
async def test_follow_up_arriving_with_a_tool_call_message(tools, mode):
    """Native: drained only after the tool result; JSON: right after the assistant message."""
    model = HookedModel(responses=[calls_tool(mode, "get_status", {"equipment_id": "CNC-003"}, "c1"),
                                   answers(mode, "CNC-003 normal; CNC-001 checked too")])
    agent = agent_for(mode, model, tools)
    model.hooks[1] = lambda: agent.inject("t", "and CNC-001?")
    result = await agent.run("CNC-003?", thread_id="t")
    assert not model.hooks
    second = model.calls[1]
    shape = [("interrupt" if m in interrupts_in(second) else "result" if is_tool_result(m) else m.type)
             for m in second[1:]]
    if mode == "native":
        assert shape == ["human", "ai", "result", "interrupt"]
    else:
        assert shape == ["human", "ai", "interrupt", "result"]
    assert "and CNC-001?" in interrupts_in(second)[0].content
    assert result.answer == "CNC-003 normal; CNC-001 checked too"
    assert [s.tool_name for s in result.steps] == ["get_status"]  # the tool call still ran


# R7.3 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_three_follow_ups_in_one_drain_become_one_pinned_message(tools, mode):
    model = HookedModel(responses=[calls_tool(mode, "get_status", {"equipment_id": "CNC-003"}, "c1"),
                                   answers(mode, "done")])
    agent = agent_for(mode, model, tools)

    async def three() -> None:
        for text in ("also CNC-001", "and CNC-002", "in Korean please"):
            await agent.inject("t", text)

    model.hooks[1] = three
    result = await agent.run("CNC-003?", thread_id="t")
    [message] = interrupts_in(model.calls[1])
    assert message.content == format_interrupt(["also CNC-001", "and CNC-002", "in Korean please"])
    assert message.content == "[USER INTERRUPT] also CNC-001\n\nand CNC-002\n\nin Korean please"
    assert interrupts_in(result.messages) == [message]


# R7.4 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_pending_final_answer_is_suppressed_and_the_follow_up_answered(tools, mode):
    model = HookedModel(responses=[answers(mode, "CNC-003 is normal."),
                                   calls_tool(mode, "get_status", {"equipment_id": "CNC-001"}, "c1"),
                                   answers(mode, "CNC-003 and CNC-001 are normal.")])
    agent = agent_for(mode, model, tools)
    model.hooks[1] = lambda: agent.inject("t", "what about CNC-001?")
    events = [e async for e in agent.astream_events("CNC-003?", thread_id="t")]
    second = model.calls[1]
    assert second[-2].type == "ai" and "CNC-003 is normal." in second[-2].content  # the suppressed answer
    assert second[-1].content == "[USER INTERRUPT] what about CNC-001?"
    done = events[-1].data
    assert done["finish_reason"] == "final_answer" and done["iterations"] == 3
    synthesis_prompt = model.calls[-1][1].content
    assert "what about CNC-001?" in synthesis_prompt  # synthesis answers the follow-up too
    assert "CNC-003 and CNC-001 are normal." in synthesis_prompt  # the loop's answer, not the suppressed one
    assert "Draft answer from the assistant:\nCNC-003 is normal." not in synthesis_prompt


@pytest.mark.parametrize("mode", MODES)
async def test_follow_up_at_the_iteration_cap_waits_for_the_next_run(tools, mode):
    settings = AgentSettings(max_iterations=2)
    model = HookedModel(responses=[calls_tool(mode, "get_status", {"equipment_id": "CNC-003"}, "c1"),
                                   calls_tool(mode, "get_status", {"equipment_id": "CNC-004"}, "c2"),
                                   answers(mode, "CNC-001 is normal.")])
    agent = agent_for(mode, model, tools, settings=settings)
    model.hooks[2] = lambda: agent.inject("t", "also CNC-001")
    first = await agent.run("CNC-003?", thread_id="t")
    assert first.finish_reason == "max_iterations" and len(model.calls) == 2
    assert interrupts_in(first.messages) == []
    second = await agent.run("anything else?", thread_id="t")
    opening = model.calls[2]
    assert [m.content for m in opening[1:]] == ["anything else?", "[USER INTERRUPT] also CNC-001"]
    assert second.answer == "CNC-001 is normal."


@pytest.mark.parametrize("mode", MODES)
async def test_final_answer_at_the_iteration_cap_is_not_suppressed(tools, mode):
    model = HookedModel(responses=[answers(mode, "CNC-003 is normal.")])
    agent = agent_for(mode, model, tools, settings=AgentSettings(max_iterations=1))
    model.hooks[1] = lambda: agent.inject("t", "also CNC-001")
    result = await agent.run("CNC-003?", thread_id="t")
    assert (result.answer, result.finish_reason) == ("CNC-003 is normal.", "final_answer")
    assert await agent.interrupts.take("t") == ["also CNC-001"]  # kept for the thread's next run


async def test_follow_up_during_synthesis_waits_for_the_next_run(tools):
    model = HookedModel(responses=["CNC-003 is normal.", "CNC-001 is normal too."], synthesis="Synthesized.")
    agent = agent_for("native", model, tools)
    model.synthesis_hook = lambda: agent.inject("t", "and CNC-001?")
    events = [e async for e in agent.astream_events("CNC-003?", thread_id="t")]
    assert [e.channel for e in events].count("inject") == 0
    assert events[-1].data["answer"] == "Synthesized."
    model.synthesis_hook = None
    events = [e async for e in agent.astream_events("thanks", thread_id="t")]
    assert model.calls[2][-1].content == "[USER INTERRUPT] and CNC-001?"
    assert [e.data for e in events if e.channel == "inject"] == [{"type": "inject", "content": "and CNC-001?"}]


# §8: the inject event -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_inject_event_comes_before_the_model_call_that_sees_it(tools, mode):
    model = HookedModel(responses=[calls_tool(mode, "get_status", {"equipment_id": "CNC-003"}, "c1"),
                                   answers(mode, "done")], synthesis="Done.")
    agent = agent_for(mode, model, tools)

    async def two() -> None:
        await agent.inject("t", "also CNC-001")
        await agent.inject("t", "and CNC-002")

    model.hooks[1] = two
    events = [e async for e in agent.astream_events("CNC-003?", thread_id="t")]
    shape = [(e.channel, e.data.get("type"), e.data.get("status") or e.data.get("content")) for e in events]
    injects = [i for i, s in enumerate(shape) if s[0] == "inject"]
    assert [shape[i] for i in injects] == [("inject", "inject", "also CNC-001"), ("inject", "inject", "and CNC-002")]
    assert shape.index(("step", "thinking", "done")) < injects[0]
    assert injects[-1] < [i for i, s in enumerate(shape) if s == ("step", "thinking", "start")][1]
    assert [e.data for e in events if e.channel == "inject"][0] == {"type": "inject", "content": "also CNC-001"}
    if mode == "native":  # after the tool result; JSON mode: before the tool runs
        assert shape.index(("step", "iteration", "done")) < injects[0]
    else:
        assert injects[-1] < shape.index(("step", "iteration", "start"))


# R7.1: when follow-ups are accepted ---------------------------------------------------


async def test_follow_up_without_a_run_going_is_refused(tools):
    agent = agent_for("native", ScriptedChatModel(responses=["hi"]), tools)
    with pytest.raises(NoActiveRunError, match="'idle'.*start a run"):
        await agent.inject("idle", "hello?")
    result = await agent.run("hi", thread_id="idle")
    assert result.thread_id == "idle"
    with pytest.raises(NoActiveRunError):  # the run has ended
        await agent.inject("idle", "hello?")
    assert await agent.interrupts.take("idle") == []


async def test_follow_up_text_must_be_a_non_blank_string(tools):
    queue = InMemoryInterruptQueue()
    async with queue.running("t"):
        with pytest.raises(ValueError, match="empty"):
            await queue.put("t", "  \n")
        with pytest.raises(TypeError, match="string"):
            await queue.put("t", 42)  # type: ignore[arg-type]
        assert await queue.take("t") == []


async def test_one_run_per_thread(tools):
    model = ScriptedChatModel(responses=["first", "third"], delay=0.2)
    agent = agent_for("native", model, tools)
    running = asyncio.create_task(agent.run("one", thread_id="t"))
    await wait_until(lambda: model.apis, "the first run's model call")  # in flight: the run holds the thread
    with pytest.raises(ThreadBusyError, match="'t'"):
        await agent.run("two", thread_id="t")
    with pytest.raises(ThreadBusyError):
        _ = [e async for e in agent.astream_events("two", thread_id="t")]
    assert (await running).answer == "first"
    assert (await agent.run("three", thread_id="t")).answer == "third"  # released when the run ended


async def test_a_run_starting_while_the_status_is_read_shows_running_not_interrupted():
    scan = GatedScan()
    agent = agent_for("native", ScriptedChatModel(responses=["first", scan.call("A", "s1"), "A is normal."]), [scan.tool],
                      checkpointer=InMemorySaver())
    await agent.run("one", thread_id="t")
    read_state, runs = agent.graph.aget_state, []

    async def a_run_starts_during_the_read(config, **kwargs):
        runs.append(asyncio.create_task(agent.run("scan A", thread_id="t")))
        await scan.started.wait()
        return await read_state(config, **kwargs)  # the new run's mid-run checkpoint

    agent.graph.aget_state = a_run_starts_during_the_read
    assert await agent.thread_status("t") == "running"  # not "interrupted": resuming it would be refused
    agent.graph.aget_state = read_state
    scan.release.set()
    assert (await runs[0]).answer == "A is normal."
    assert await agent.thread_status("t") == "idle"


async def test_a_failed_run_releases_its_thread(tools):
    model = ScriptedChatModel(responses=[ValueError("bad request"), "ok"])
    agent = agent_for("native", model, tools)
    assert (await agent.run("one", thread_id="t")).finish_reason == "model_error"
    assert (await agent.run("two", thread_id="t")).answer == "ok"


async def test_generated_thread_id_takes_follow_ups_without_a_checkpointer(tools):
    """Every run has a thread_id; a tool learns it from its config and injects."""
    box: dict[str, ReActAgent] = {}

    @tool
    async def ask_user(question: str, config: RunnableConfig) -> str:
        """Ask the user something; the answer arrives as a follow-up."""
        await box["agent"].inject(config["configurable"]["thread_id"], "use CNC-009")
        return "asked"

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("ask_user", {"question": "which?"}, "c1")]),
                                         "CNC-009 is normal."])
    box["agent"] = agent = agent_for("native", model, [ask_user])
    result = await agent.run("check the machine")
    assert isinstance(result.thread_id, str) and result.thread_id
    assert model.calls[1][-1].content == "[USER INTERRUPT] use CNC-009"


# R7.5: the queue is an interface ------------------------------------------------------


class LoggedQueue(InterruptQueue):
    """Another implementation, as a shared one would be: state in a plain dict standing in
    for a database table, every operation logged."""

    def __init__(self) -> None:
        self.table: dict[str, dict[str, Any]] = {}
        self.log: list[tuple[str, str]] = []

    async def open(self, thread_id: str) -> None:
        self.log.append(("open", thread_id))
        row = self.table.setdefault(thread_id, {"open": False, "texts": []})
        if row["open"]:
            raise ThreadBusyError(thread_id)
        row["open"] = True

    async def close(self, thread_id: str) -> None:
        self.log.append(("close", thread_id))
        self.table[thread_id]["open"] = False

    async def put(self, thread_id: str, text: str) -> None:
        self.log.append(("put", thread_id))
        if not self.table.get(thread_id, {}).get("open"):
            raise NoActiveRunError(thread_id)
        self.table[thread_id]["texts"].append(text)

    async def take(self, thread_id: str) -> list[str]:
        self.log.append(("take", thread_id))
        row = self.table.get(thread_id, {"texts": []})
        texts, row["texts"] = row["texts"], []
        return texts

    async def is_running(self, thread_id: str) -> bool:
        return bool(self.table.get(thread_id, {}).get("open"))


async def test_another_queue_implementation_replaces_the_in_memory_one(tools):
    queue = LoggedQueue()
    model = HookedModel(responses=["premature", "CNC-001 too."])
    agent = agent_for("native", model, tools, interrupt_queue=queue)
    assert agent.interrupts is queue
    model.hooks[1] = lambda: agent.inject("t", "also CNC-001")
    result = await agent.run("CNC-003?", thread_id="t")
    assert result.answer == "CNC-001 too."
    assert model.calls[1][-1].content == "[USER INTERRUPT] also CNC-001"
    assert queue.log[0] == ("open", "t") and queue.log[-1] == ("close", "t")
    assert ("put", "t") in queue.log and queue.log.count(("take", "t")) == 3  # start, after each answer


async def test_pinned_follow_up_is_stored_in_the_checkpoint(tools):
    model = HookedModel(responses=["premature", "CNC-001 too."])
    agent = agent_for("native", model, tools, checkpointer=InMemorySaver())
    model.hooks[1] = lambda: agent.inject("t", "also CNC-001")
    await agent.run("CNC-003?", thread_id="t")
    snapshot = await agent.graph.aget_state({"configurable": {"thread_id": "t"}})
    [stored] = interrupts_in(snapshot.values["messages"])
    assert stored.id in snapshot.values["pinned"] and stored.content == "[USER INTERRUPT] also CNC-001"


@pytest.mark.parametrize("mode", MODES)
async def test_follow_up_survives_compaction(mode):
    """A follow-up drained early stays, pinned, through the context guard's compaction."""
    log = "CNC spindle temperature 71.5 C, vibration 4.2 mm/s, alarm W-1105; check bearing. " * 90

    @tool
    def read_log(machine: str) -> str:
        """Return the long maintenance log of a machine."""
        return f"{machine} log:\n{log}"

    summarizer = ScriptedChatModel(responses=["Earlier: logs of the first machines were read."], repeat_last=True)
    model = HookedModel(responses=[*(calls_tool(mode, "read_log", {"machine": f"CNC-00{i}"}, f"c{i}") for i in range(1, 5)),
                                   answers(mode, "done")], synthesis="Done.")
    agent = ReActAgent(model, [read_log], use_native_tools=mode == "native", compaction_llm=summarizer,
                       abilities=ModelAbilities(tool_call=True, context_window=9_000, max_output_tokens=1_000),
                       settings=AgentSettings(synthesis="always"))
    model.hooks[1] = lambda: agent.inject("t", "also list the alarm codes")
    events = [e async for e in agent.astream_events("read the logs", thread_id="t")]
    assert [e for e in events if e.channel == "compact"] and summarizer.calls
    last = model.calls[4]
    assert not any("CNC-001 log:" in str(m.content) for m in last)  # older messages were compacted away
    [kept] = interrupts_in(last)
    assert kept.content == "[USER INTERRUPT] also list the alarm codes"  # pinned: kept through compaction
    assert events[-1].data["finish_reason"] == "final_answer"


# Concurrency --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_fifty_concurrent_runs_keep_their_follow_ups_apart(mode):
    """50 runs on 50 threads share one agent; each gets a follow-up from inside its tool
    and up to three from outside at random moments. Every accepted follow-up ends up in
    its own thread (delivered, or queued for its next run) and nowhere else."""
    box: dict[str, ReActAgent] = {}

    @tool
    async def note(thread: str) -> str:
        """Note something for a thread (its user sends a follow-up meanwhile)."""
        await asyncio.sleep(0)
        await box["agent"].inject(thread, f"tool follow-up for {thread}")
        return f"noted {thread}"

    def decide(messages: list[BaseMessage]) -> AIMessage | str:
        thread = str(messages[1].content).removeprefix("thread ")
        if not any(is_tool_result(m) for m in messages):
            return calls_tool(mode, "note", {"thread": thread}, f"call-{thread}")
        return answers(mode, f"answer for {thread}: " + " | ".join(follow_ups_in(messages)))

    model = ScriptedChatModel(responses=[decide], repeat_last=True, delay=0.002)
    box["agent"] = agent = agent_for(mode, model, [note])
    threads = [f"t-{i}" for i in range(50)]
    accepted: dict[str, list[str]] = {t: [] for t in threads}

    async def from_outside(thread: str, rng: random.Random) -> None:
        # Spread over the run: some land mid-loop, some suppress a final answer, some
        # arrive during the last call (kept for a next run), some after it (refused).
        for n in range(3):
            await asyncio.sleep(rng.uniform(0.0, 0.25))
            text = f"outside follow-up {n} for {thread}"
            try:
                await agent.inject(thread, text)
            except NoActiveRunError:
                return
            accepted[thread].append(text)

    async def one(i: int, thread: str) -> Any:
        injector = asyncio.create_task(from_outside(thread, random.Random(i)))
        result = await agent.run(f"thread {thread}", thread_id=thread)
        await injector
        return result

    results = await asyncio.gather(*(one(i, t) for i, t in enumerate(threads)))
    assert len(model.calls) >= 100
    for thread, result in zip(threads, results, strict=True):
        assert result.thread_id == thread and result.finish_reason == "final_answer"
        delivered = follow_ups_in(result.messages)
        assert all(text.endswith(f" for {thread}") for text in delivered), (thread, delivered)
        assert f"tool follow-up for {thread}" in delivered
        leftover = await agent.interrupts.take(thread)  # accepted after the loop's answer was final
        assert sorted(delivered + leftover) == sorted([f"tool follow-up for {thread}", *accepted[thread]])
        heading, _, answered = result.answer.partition(": ")
        assert heading == f"answer for {thread}"
        assert all(text.endswith(f" for {thread}") for text in answered.split(" | "))
    assert sum(len(v) for v in accepted.values()) > 0


async def test_a_follow_up_taken_before_a_failed_model_call_reaches_its_retry(tools, fast_settings):
    """The model node drains before its call in the same step: when the call fails
    and the step is retried, the follow-up it took is queued again, not lost."""
    model = HookedModel(responses=[AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"}, "c1")]),
                                   ConnectionError("endpoint blinked"), "CNC-003 and CNC-001 are fine."])
    agent = agent_for("native", model, tools, settings=fast_settings)
    model.hooks[1] = lambda: agent.inject("t", "also CNC-001")
    result = await agent.run("CNC-003?", thread_id="t")
    assert result.answer == "CNC-003 and CNC-001 are fine."
    assert len(model.calls) == 3 and model.calls[2][-1].content == "[USER INTERRUPT] also CNC-001"
