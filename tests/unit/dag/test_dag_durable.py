"""DAG runs keep the guarantees of ReAct runs (SPEC §10, R13.3, R13.8): checkpointed
and resumed after a crash without running a finished step or tool call again, approval of a
step's tool call, follow-ups that reach the plan and the steps they name, run-wide usage limits.

A crash is the run's event stream closed mid-run (as a process that dies leaves it: the run's
tasks cancelled, what they had stored kept); the agent that resumes is a new one on a new
connection to the same database, with new model instances, as another process would be. The
tools count their runs, so a tool run twice shows. Models are scripted (see test_dag.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import Counter

import pytest
from langchain_core.tools import tool

from reactgraph import AgentSettings, DAGAgent, DAGSettings, Decision, ModelRegistry, UsageLimits, open_persistence
from reactgraph.dag.followups import names_step
from reactgraph.dag.graph import is_dag_thread
from reactgraph.core.errors import NothingToResumeError
from reactgraph.testing import ScriptedChatModel

from tests.unit.dag.test_dag import general_model, kind, plan, step, step_reply, verdict

SETTINGS = AgentSettings(max_iterations=6, tool_timeout=30, retry_initial_delay=0.01, retry_max_delay=0.02)


def action(tool_name, **tool_args):
    return json.dumps({"type": "tool_call", "reasoning": "need data", "tool_name": tool_name, "tool_args": tool_args})


class Plant:
    """Counting tools: ``read`` returns at once; ``inspect`` waits until ``release`` is set
    (it is the call in flight when the run is cut). ``runs`` counts finished runs by
    (tool, machine), ``starts`` the runs begun."""

    def __init__(self) -> None:
        self.runs: Counter[tuple[str, str]] = Counter()
        self.starts: Counter[tuple[str, str]] = Counter()
        self.release = asyncio.Event()
        self.inspecting = asyncio.Event()

        @tool
        def read(machine: str) -> str:
            """Read a machine's status."""
            self.starts["read", machine] += 1
            self.runs["read", machine] += 1
            return f"{machine}: normal"

        @tool
        async def inspect(machine: str) -> str:
            """Inspect a machine (slow)."""
            self.starts["inspect", machine] += 1
            self.inspecting.set()
            await self.release.wait()
            self.runs["inspect", machine] += 1
            return f"{machine}: inspected, no fault"

        self.tools = [read, inspect]


def plant_steps(messages):
    """Step loops read their next move off their conversation: step ``a`` reads A1; step ``b``
    reads B1, then inspects B2; step ``c`` reads C1; then each answers."""
    step_id = kind(messages).split(":")[1]
    observations = sum(1 for m in messages if m.type == "human" and str(m.content).startswith("Observation"))
    moves = {"a": [action("read", machine="A1")], "b": [action("read", machine="B1"), action("inspect", machine="B2")],
             "c": [action("read", machine="C1")]}[step_id]
    return moves[observations] if observations < len(moves) else step_reply(messages)


DIAMOND = plan(step("a"), step("b"), step("c", deps=["a", "b"]))


def registry(planner, analyzer, *, judge_delay: float = 0.0) -> ModelRegistry:
    """``general`` plans and runs the steps; the analyzer runs on ``judge`` (slow when asked)."""
    general = general_model(planner, [], steps=plant_steps, synthesis="All machines are normal.")
    judge = ScriptedChatModel(responses=list(analyzer), delay=judge_delay)
    return ModelRegistry(general).register("judge", judge)


DAG_SETTINGS = DAGSettings(analyzer_role="judge")


def steps_called(models: ModelRegistry) -> list[str]:
    return [kind(messages) for messages in models.get("general").llm.calls]


async def cut_when(events, ready, saver) -> list:
    """Read ``events`` in a task until ``ready(seen)`` holds, have ``saver`` store what it
    holds (what a kill finds once the write hold is over), then cancel the reading (the
    crash: the run's tasks are cancelled mid-run) and close the stream."""
    seen: list = []

    async def read() -> None:
        async for event in events:
            seen.append(event)

    reader = asyncio.create_task(read())
    for _ in range(1000):
        if ready(seen):
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError(f"the run never got there: {[e.data for e in seen]}")
    await saver.commit_held()  # what finished is stored, as a kill finds it past the write hold
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    await events.aclose()
    return seen


def completed(seen, step_id):
    return any(e.channel == "dag_step" and e.data["status"] == "completed" and e.data["step_id"] == step_id for e in seen)


# Crash and resume (SPEC §10, R13.5, R13.8) ------------------------------------------------------


async def test_a_run_cut_mid_round_resumes_without_running_a_finished_step_or_tool_again(checkpoint_url):
    """Cut while step b's second tool runs (step a done, step c not started): the resumed run
    does not run step a or the tool b had finished, b's loop goes on from its checkpoint,
    c runs, and every step's result is there."""
    plant, thread = Plant(), f"dag-cut-{uuid.uuid4().hex[:8]}"
    first = registry([DIAMOND], [verdict(True, 1.0, "all normal")])
    async with open_persistence(checkpoint_url) as store:
        agent = DAGAgent(first, plant.tools, settings=SETTINGS, dag_settings=DAG_SETTINGS,
                         checkpointer=store.checkpointer, interrupt_queue=store.interrupt_queue)

        await cut_when(agent.astream_events("Check the plant", thread_id=thread),
                       lambda seen: completed(seen, "a") and plant.inspecting.is_set(), store.checkpointer)
        assert await agent.thread_status(thread) == "interrupted"
    assert plant.runs == {("read", "A1"): 1, ("read", "B1"): 1}

    plant.release.set()
    second = registry([], [verdict(True, 1.0, "all normal")])
    async with open_persistence(checkpoint_url) as store:
        agent = DAGAgent(second, plant.tools, settings=SETTINGS, dag_settings=DAG_SETTINGS,
                         checkpointer=store.checkpointer, interrupt_queue=store.interrupt_queue)
        assert await is_dag_thread(store.checkpointer, thread)
        status, snapshot = await agent.thread_snapshot(thread)
        assert status == "interrupted" and snapshot is not None and {t.name for t in snapshot.tasks} == {"run_step"}
        events = [event async for event in agent.aresume_events(thread)]
        assert await agent.thread_status(thread) == "idle"
    assert plant.runs == {("read", "A1"): 1, ("read", "B1"): 1, ("inspect", "B2"): 1, ("read", "C1"): 1}
    assert plant.starts["inspect", "B2"] == 2  # the call in flight at the cut runs again, as in ReAct mode
    # b goes on from its inspect call (its two earlier model calls are not made again); no planner, no step a
    assert steps_called(second) == ["step:b", "step:c", "step:c", "synthesis"]
    done = events[-1].data
    assert done["finish_reason"] == "achieved" and done["answer"] == "All machines are normal."
    started = [e.data["step_id"] for e in events if e.channel == "dag_step" and e.data["status"] == "started"]
    assert started == ["b", "c"]
    async with open_persistence(checkpoint_url) as store:
        agent = DAGAgent(registry([], []), plant.tools, settings=SETTINGS, dag_settings=DAG_SETTINGS,
                         checkpointer=store.checkpointer)
        saved = (await agent.graph.aget_state({"configurable": {"thread_id": thread}})).values
        assert {k: v["result"] for k, v in saved["results"].items()} == {"a": "result a", "b": "result b", "c": "result c"}
        with pytest.raises(NothingToResumeError, match="finished"):
            await agent.resume(thread)


async def test_a_run_cut_during_the_analysis_resumes_with_the_analysis_only(checkpoint_url):
    """Cut while the analyzer's call is in flight: the resumed run asks the analyzer again and
    writes the answer; no step and no tool runs again, and the usage covers the whole run."""
    plant, thread = Plant(), f"dag-analysis-{uuid.uuid4().hex[:8]}"
    plant.release.set()
    first = registry([DIAMOND], [verdict(True, 1.0, "all normal")], judge_delay=30)
    async with open_persistence(checkpoint_url) as store:
        agent = DAGAgent(first, plant.tools, settings=SETTINGS, dag_settings=DAG_SETTINGS,
                         checkpointer=store.checkpointer, interrupt_queue=store.interrupt_queue)

        await cut_when(agent.astream_events("Check the plant", thread_id=thread),
                       lambda seen: any(e.channel == "phase" and e.data["phase"] == "analyzing" for e in seen),
                       store.checkpointer)
    ran_before = dict(plant.runs)
    assert ran_before == {("read", "A1"): 1, ("read", "B1"): 1, ("inspect", "B2"): 1, ("read", "C1"): 1}

    second = registry([], [verdict(True, 1.0, "all normal")])
    async with open_persistence(checkpoint_url) as store:
        agent = DAGAgent(second, plant.tools, settings=SETTINGS, dag_settings=DAG_SETTINGS,
                         checkpointer=store.checkpointer, interrupt_queue=store.interrupt_queue)
        assert await agent.thread_status(thread) == "interrupted"
        result = await agent.resume(thread)
    assert plant.runs == ran_before
    assert steps_called(second) == ["synthesis"] and len(second.get("judge").llm.calls) == 1
    assert result.finish_reason == "achieved" and result.synthesis == "All machines are normal."
    assert [(s.id, s.status, s.result) for s in result.steps] == [
        ("a", "completed", "result a"), ("b", "completed", "result b"), ("c", "completed", "result c")]
    assert result.usage.model_calls >= 8  # planner, seven step calls, the analyzer (and synthesis)


async def test_a_cut_dag_run_frees_its_thread_with_every_steps_saves_committed(tmp_path):
    """``settle_thread`` settles every namespace of the thread: once the closed stream has
    freed the thread, the saver holds nothing of it, the steps' subgraphs included."""
    plant = Plant()
    async with open_persistence(str(tmp_path / "c.db")) as store:
        agent = DAGAgent(registry([DIAMOND], []), plant.tools, settings=SETTINGS, dag_settings=DAG_SETTINGS,
                         checkpointer=store.checkpointer, interrupt_queue=store.interrupt_queue)
        events = agent.astream_events("Check the plant", thread_id="dag-settle")
        seen = []

        async def read():
            async for event in events:
                seen.append(event)

        reader = asyncio.create_task(read())
        await asyncio.wait_for(plant.inspecting.wait(), 10)
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await events.aclose()
        saver = store.checkpointer
        held = [key for key in {**saver._held, **saver._held_checkpoints} if key[0] == "dag-settle"]
        assert held == [] and await agent.thread_status("dag-settle") == "interrupted"


async def test_dag_runs_read_in_the_threads_conversation_as_goal_and_answer():
    """Each run adds its answer as an assistant message after its goal, as a ReAct turn does."""
    from langgraph.checkpoint.memory import InMemorySaver

    general = general_model([plan(step("a")), plan(step("b"))], [verdict(True, 1.0, "first"), verdict(True, 1.0, "second")],
                            synthesis="The synthesized answer.")
    agent = DAGAgent(general, [], settings=SETTINGS, checkpointer=InMemorySaver())
    [e async for e in agent.astream_events("First goal", thread_id="dag-talk")]
    await agent.run("Second goal", thread_id="dag-talk")  # no synthesis: the answer before it
    messages = (await agent.graph.aget_state({"configurable": {"thread_id": "dag-talk"}})).values["messages"]
    assert [(m.type, m.content) for m in messages] == [("human", "First goal"), ("ai", "The synthesized answer."),
                                                       ("human", "Second goal"), ("ai", "second")]


# Approval inside a step (SPEC R13.3, R13.8) -----------------------------------------------------


class Orders:
    """``create_work_order`` needs approval (as the demo's does); ``read`` does not."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

        @tool
        def create_work_order(equipment_id: str) -> str:
            """Create a maintenance work order."""
            self.ran.append(("create_work_order", equipment_id))
            return f"WO-1 for {equipment_id}"

        create_work_order.metadata = {"approval": "always"}

        @tool
        def read(machine: str) -> str:
            """Read a machine's status."""
            self.ran.append(("read", machine))
            return f"{machine}: normal"

        self.tools = [create_work_order, read]


def order_steps(messages):
    step_id = kind(messages).split(":")[1]
    if len(messages) == 2:
        return action("create_work_order", equipment_id="CNC-003") if step_id == "order" else action("read", machine="CNC-001")
    return step_reply(messages)


async def test_a_steps_call_that_needs_approval_pauses_the_run_and_a_decision_resumes_it(checkpoint_url):
    """The call names its step; the other step of the wave runs to its end; nothing after the
    wave starts until the decision; the decision resumes the step's own loop."""
    orders, thread = Orders(), f"dag-approval-{uuid.uuid4().hex[:8]}"
    planned = plan(step("order"), step("check"), step("report", deps=["order", "check"]))
    general = general_model([planned], [verdict(True, 1.0, "ordered")], steps=order_steps, synthesis="Work order WO-1 is open.")
    async with open_persistence(checkpoint_url) as store:
        agent = DAGAgent(general, orders.tools, settings=SETTINGS, checkpointer=store.checkpointer,
                         interrupt_queue=store.interrupt_queue)
        events = [event async for event in agent.astream_events("Order a repair of CNC-003", thread_id=thread)]
        [approval] = [e.data for e in events if e.channel == "approval"]
        [pending] = approval["pending"]
        assert (pending["step_id"], pending["tool_name"], pending["tool_args"], pending["kind"]) == (
            "order", "create_work_order", {"equipment_id": "CNC-003"}, "approval")
        assert pending["value"]["step_id"] == "order"
        assert events[-1].channel == "done" and events[-1].data["finish_reason"] == "waiting"
        assert completed(events, "check") and not completed(events, "order") and not completed(events, "report")
        assert orders.ran == [("read", "CNC-001")]
        assert await agent.thread_status(thread) == "waiting"
        [waiting] = await agent.pending(thread)
        assert waiting.step_id == "order" and waiting.tool_call_id == pending["tool_call_id"]

        result = await agent.resume(thread, {waiting.tool_call_id: Decision.approve()})
    assert orders.ran == [("read", "CNC-001"), ("create_work_order", "CNC-003"), ("read", "CNC-001")]
    assert result.finish_reason == "achieved" and result.synthesis == "Work order WO-1 is open."
    assert [(s.id, s.status) for s in result.steps] == [("order", "completed"), ("check", "completed"),
                                                        ("report", "completed")]
    assert [t.approval for t in result.steps[0].tool_steps] == ["approved"]
    assert calls_of(general).count("step:check") == 2  # the finished step was not run again


def calls_of(model):
    return [kind(messages) for messages in model.calls]


async def test_a_rejected_step_call_is_the_steps_observation_and_run_returns_waiting():
    """``run`` (no synthesis) returns a waiting result; a rejection is what the step's loop sees."""
    from langgraph.checkpoint.memory import InMemorySaver

    orders = Orders()
    general = general_model([plan(step("order"))], [verdict(True, 1.0, "not ordered")], steps=order_steps)
    agent = DAGAgent(general, orders.tools, settings=SETTINGS, checkpointer=InMemorySaver())
    paused = await agent.run("Order a repair of CNC-003", thread_id="dag-reject")
    assert paused.waiting and paused.finish_reason == "waiting" and paused.answer == ""
    assert [(p.step_id, p.tool_name) for p in paused.pending] == [("order", "create_work_order")]
    result = await agent.resume("dag-reject", {paused.pending[0].tool_call_id: Decision.reject("Not this week.")})
    assert orders.ran == [] and result.finish_reason == "achieved"
    [record] = result.steps[0].tool_steps
    assert (record.approval, record.observation) == ("rejected", "Not this week.")


async def test_calls_of_two_steps_wait_together_and_a_call_left_out_keeps_waiting():
    from langgraph.checkpoint.memory import InMemorySaver

    def both_order(messages):
        step_id = kind(messages).split(":")[1]
        return action("create_work_order", equipment_id=step_id) if len(messages) == 2 else step_reply(messages)

    orders = Orders()
    general = general_model([plan(step("x"), step("y"))], [verdict(True, 1.0, "done")], steps=both_order)
    agent = DAGAgent(general, orders.tools, settings=SETTINGS, checkpointer=InMemorySaver())
    paused = await agent.run("Order two repairs", thread_id="dag-two")
    assert sorted((p.step_id, p.tool_args["equipment_id"]) for p in paused.pending) == [("x", "x"), ("y", "y")]
    x, y = sorted(paused.pending, key=lambda p: p.step_id)
    still = await agent.resume("dag-two", {x.tool_call_id: "approve"})
    assert still.waiting and [p.tool_call_id for p in still.pending] == [y.tool_call_id] and orders.ran == [
        ("create_work_order", "x")]
    done = await agent.resume("dag-two", {y.tool_call_id: Decision.reject("Not now.")})
    assert done.finish_reason == "achieved" and orders.ran == [("create_work_order", "x")]
    assert [(s.id, [t.approval for t in s.tool_steps]) for s in done.steps] == [("x", ["approved"]), ("y", ["rejected"])]


# Follow-ups (SPEC §7, R13.8) --------------------------------------------------------------------


async def test_a_follow_up_reaches_the_step_it_names_and_changes_the_next_rounds_plan():
    """Sent while round 1's steps run: the step it names takes it in its own loop; the plan
    level takes it into the goal; round 1's plan did not have it, so round 2 is planned with
    it (although the analyzer was satisfied) and drops the energy report."""
    release = asyncio.Event()

    @tool
    async def measure(what: str) -> str:
        """Measure something in the plant."""
        await release.wait()
        return f"{what}: measured"

    def measuring(messages):
        step_id = kind(messages).split(":")[1]
        if len(messages) == 2:
            return action("measure", what=step_id)
        return step_reply(messages)

    general = general_model([plan(step("energy"), step("alarms")), plan(step("alarms"))],
                            [verdict(True, 1.0, "both done"), verdict(True, 1.0, "alarms done")], steps=measuring)
    agent = DAGAgent(general, [measure], settings=SETTINGS)
    events = []
    async for event in agent.astream_events("Energy report and open alarms", thread_id="dag-follow"):
        events.append(event)
        if event.channel == "dag_step" and event.data["status"] == "iteration" and not release.is_set():
            await agent.inject("dag-follow", "skip the energy report")
            release.set()
    injects = [e.data for e in events if e.channel == "inject"]
    assert {"type": "inject", "content": "skip the energy report"} in injects  # the plan level
    assert [i["step_id"] for i in injects if "step_id" in i] == ["energy"]  # the step it names (whole word)
    analyses = [e.data for e in events if e.channel == "analysis"]
    assert [(a["round"], a["achieved"], a["replan"]) for a in analyses] == [(1, True, True), (2, True, False)]
    plans = [[s["id"] for s in e.data["steps"]] for e in events if e.channel == "plan"]
    assert plans == [["energy", "alarms"], ["alarms"]]
    planner_prompts = ["\n".join(str(x.content) for x in m) for m in general.calls if kind(m) == "planner"]
    assert "[USER INTERRUPT]" not in planner_prompts[0]
    assert "[USER INTERRUPT] skip the energy report" in planner_prompts[1]
    energy_loop = next(m for m in general.calls if kind(m) == "step:energy" and len(m) > 2)
    assert any(str(m.content).startswith("[USER INTERRUPT] skip the energy report") for m in energy_loop)
    alarms_loop = next(m for m in general.calls if kind(m) == "step:alarms" and len(m) > 2)
    assert not any(str(m.content).startswith("[USER INTERRUPT]") for m in alarms_loop)
    assert events[-1].data["finish_reason"] == "achieved"


def test_a_follow_up_names_a_step_by_its_id_as_a_whole_word():
    assert names_step("alarms: include CNC-005", "alarms") and names_step("@s2 stop", "s2")
    assert not names_step("check the alarmsystem", "alarms") and not names_step("s22 only", "s2")


async def test_with_no_round_left_a_follow_up_reaches_the_analysis_and_the_answer():
    general = general_model([plan(step("a"))], [verdict(True, 1.0, "done")])
    agent = DAGAgent(general, [], settings=SETTINGS, dag_settings=DAGSettings(max_rounds=1))
    sent = False
    events = []
    async for event in agent.astream_events("Check CNC-003", thread_id="dag-last"):
        events.append(event)
        if event.channel == "plan" and not sent:
            await agent.inject("dag-last", "and CNC-005")
            sent = True
    assert [e.data["replan"] for e in events if e.channel == "analysis"] == [False]
    assert events[-1].data["rounds"] == 1
    prompts = {kind(m): "\n".join(str(x.content) for x in m) for m in general.calls}
    assert "[USER INTERRUPT] and CNC-005" in prompts["analyzer"] and "[USER INTERRUPT] and CNC-005" in prompts["synthesis"]
    assert "[USER INTERRUPT] and CNC-005" in prompts["step:a"]  # taken before the wave: the step's goal has it


# Run-wide usage limits (SPEC R13.3, R13.8) ------------------------------------------------------


def busy_steps(messages):
    """Each step keeps reading until its loop has six observations."""
    step_id = kind(messages).split(":")[1]
    observations = sum(1 for m in messages if m.type == "human" and str(m.content).startswith("Observation"))
    return action("read", machine=f"{step_id}{observations}") if observations < 6 else step_reply(messages)


@pytest.mark.parametrize(("limits", "reason", "name", "cap"), [
    (UsageLimits(model_calls=6), "model_call_limit", "model_calls", 6),
    (UsageLimits(tool_calls=3), "tool_call_limit", "tool_calls", 3),
])
async def test_a_run_wide_limit_ends_the_run_with_its_figures(limits, reason, name, cap):
    """Summed over the planner and the steps: the wave's steps share what is left, the step
    after them does not run, and the synthesis answers from what ran."""
    plant = Plant()
    general = general_model([DIAMOND], [verdict(True, 1.0, "done")], steps=busy_steps, synthesis="Partial answer.")
    agent = DAGAgent(general, plant.tools, settings=AgentSettings(max_iterations=20, limits=limits))
    events = [event async for event in agent.astream_events("Check the plant")]
    done = events[-1].data
    assert done["finish_reason"] == reason and done["answer"] == "Partial answer."
    assert (done["limit"]["limit"], done["limit"]["max"], done["limit"]["used"]) == (name, cap, cap)
    figures = done["limit"]["figures"]
    assert figures[name] == cap
    assert figures["model_calls"] == done["usage"]["model_calls"] - 1  # the synthesis comes on top
    assert figures["tool_calls"] == sum(plant.runs.values())
    not_run = [e.data for e in events if e.channel == "dag_step" and e.data["status"] == "completed"
               and e.data["step_id"] == "c"]
    assert not_run[0]["ok"] is False and not_run[0]["error"].startswith("not run: I stopped because the run reached")
    assert "analyzer" not in calls_of(general) and "step:c" not in calls_of(general)


async def test_a_token_limit_is_checked_before_the_analysis_and_the_next_plan():
    general = general_model([DIAMOND], [verdict(False, 0.2, "no")], steps=busy_steps)
    agent = DAGAgent(general, Plant().tools, settings=AgentSettings(max_iterations=20, limits=UsageLimits(total_tokens=120)))
    result = await agent.run("Check the plant")
    assert result.finish_reason == "token_limit" and result.limit["used"] >= 120
    assert result.answer.startswith("I stopped because the run reached its limit of 120 tokens")
    assert calls_of(general).count("planner") == 1


async def test_without_limits_the_steps_loops_keep_their_own_caps():
    general = general_model([plan(step("a"))], [verdict(True, 1.0, "done")], steps=busy_steps)
    agent = DAGAgent(general, Plant().tools, settings=AgentSettings(max_iterations=3))
    result = await agent.run("Check the plant")
    assert result.limit is None and result.steps[0].iterations == 3


# The CLI (SPEC R10.3): run --dag keeps checkpoints, resume continues a DAG thread ---------------


@pytest.fixture
def cli_dag(monkeypatch):
    """Makes the CLI use ``box["model"]`` (no tool calling: JSON-mode steps, plain-text
    structured calls) and ``box["tools"]``."""
    from contextlib import asynccontextmanager

    import reactgraph.demo.factory
    import reactgraph.models
    from reactgraph import ModelAbilities
    from reactgraph.models import ResolvedModel

    box: dict = {}

    @asynccontextmanager
    async def scripted_model(**_options):
        yield ResolvedModel(box["model"], ModelAbilities(), "scripted")

    monkeypatch.setattr(reactgraph.models, "open_model", scripted_model)
    monkeypatch.setattr(reactgraph.demo.factory, "build_factory_hub", lambda _db=None: box["tools"])
    return box


async def test_the_cli_resumes_a_dag_thread_in_dag_mode(cli_dag, tmp_path, capsys):
    from reactgraph.cli.main import main

    plant, db = Plant(), str(tmp_path / "checkpoints.db")
    first = general_model([DIAMOND], [], steps=plant_steps)
    async with open_persistence(db) as store:
        agent = DAGAgent(first, plant.tools, settings=SETTINGS, checkpointer=store.checkpointer,
                         interrupt_queue=store.interrupt_queue)
        await cut_when(agent.astream_events("Check the plant", thread_id="cli-dag"),
                       lambda seen: completed(seen, "a") and plant.inspecting.is_set(), store.checkpointer)
    plant.release.set()
    cli_dag["tools"] = plant.tools
    cli_dag["model"] = general_model([], [verdict(True, 1.0, "all normal")], steps=plant_steps,
                                     synthesis="All machines are normal.")
    assert await asyncio.to_thread(main, ["resume", "cli-dag", "--checkpoints", db]) == 0
    out = capsys.readouterr().out
    assert "resuming thread cli-dag" in out and "All machines are normal." in out
    assert "▶ b on general" in out and "▶ c on general" in out and "▶ a" not in out
    assert plant.runs == {("read", "A1"): 1, ("read", "B1"): 1, ("inspect", "B2"): 1, ("read", "C1"): 1}

    assert await asyncio.to_thread(main, ["run", "And now?", "--thread", "cli-dag", "--checkpoints", db]) == 2
    assert "holds DAG runs; continue it with --dag" in capsys.readouterr().err


async def test_the_cli_asks_for_a_dag_steps_approval_and_names_the_step(cli_dag, tmp_path, capsys):
    from reactgraph.cli.main import main

    orders = Orders()
    cli_dag["tools"] = orders.tools
    cli_dag["model"] = general_model([plan(step("order"))], [verdict(True, 1.0, "ordered")], steps=order_steps,
                                     synthesis="Work order WO-1 is open.")
    argv = ["run", "Order a repair of CNC-003", "--dag", "--approve-all", "--checkpoints", str(tmp_path / "c.db")]
    assert await asyncio.to_thread(main, argv) == 0
    out = capsys.readouterr().out
    assert '? approve create_work_order({"equipment_id": "CNC-003"}) (step order)' in out
    assert "Work order WO-1 is open." in out and "thread:" in out
    assert orders.ran == [("create_work_order", "CNC-003")]
