"""Right answers from small models (SPEC R13.1): relevance-ranked offering, hybrid
tool selection, stall detection, the ids a question asks about (grounded synthesis is tested
with the other answer checks, in test_answers.py). Scripted models record what the engine
sends, so each test checks the order, the binding or the prompt a model really received."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.nodes.llm_call import detect_stall
from reactgraph.nodes.stall import StepOutcomes, step_outcomes_fold
from reactgraph.nodes.select_tools import hybrid_selection
from reactgraph.tools.ranking import ToolRanker, named_values, tokenize, unlisted_values
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import MACHINES, SMALL_NATIVE, SMALL_SCHEMA, call_json, final, make_tool, plant_tools

# ranking -----------------------------------------------------------------------------


def test_tokens_split_ids_and_korean_into_bigrams():
    assert tokenize("CNC-003 상태 확인해줘") == ["cnc", "003", "상태", "확인", "인해", "해줘"]
    assert tokenize("What are the alarms?") == ["alarm"]


def test_ranker_uses_descriptions_and_declared_korean_keywords():
    ranker = ToolRanker(plant_tools())
    assert ranker.rank("CNC-003 상태 확인해줘")[0][0] == "machine_status"
    assert ranker.rank("Show the repair history")[0][0] == "maintenance_log"
    assert ranker.rank("CNC-003 전력 사용량")[0][0] == "energy_report"
    assert all(score == 0 for _, score in ranker.rank("안녕하세요"))
    assert [name for name, _ in ranker.rank("안녕하세요")] == [t.name for t in plant_tools()]  # ties keep order


def test_a_tool_that_takes_the_named_id_ranks_above_one_whose_words_match_more():
    # "INJ-002에 쓸 수 있는 예비 부품 재고" named a machine, and a part search (no machine
    # argument) won on its Korean keywords; the tool that takes the machine must come first.
    class PartQuery(BaseModel):
        query: str = Field(description="part number or name words")

    def search(query: str) -> str:
        return query

    part_search = StructuredTool.from_function(search, name="check_part_stock", args_schema=PartQuery,
                                               description="Spare part stock by part name.",
                                               metadata={"keywords": ["부품", "재고", "예비품", "예비"]})
    parts_for = make_tool("parts_for_machine", "Spare parts that fit a machine.", ["부품"])
    ranker = ToolRanker([part_search, parts_for])
    assert ranker.rank("예비 부품 재고 알려줘")[0][0] == "check_part_stock"  # no id named: words decide
    assert ranker.rank("CNC-003에 쓸 수 있는 예비 부품 재고 알려줘")[0][0] == "parts_for_machine"
    assert ranker.rank("CNC-009 예비 부품 재고")[0][0] == "parts_for_machine"  # an unlisted id of its shape too
    two = ToolRanker([*plant_tools(), part_search])
    assert two.rank("CNC-003 상태 확인해줘")[0][0] == "machine_status"  # among tools that take it, words decide


def test_named_values_in_question_order():
    assert named_values("Compare CNC-003 and CNC-001", MACHINES) == ["CNC-003", "CNC-001"]
    assert named_values("cnc-002 상태", MACHINES) == ["CNC-002"]
    assert named_values("how is the plant", MACHINES) == []


def test_named_values_match_latin_words_by_stem():
    # "failed" names the enum value "fail"; ids and Hangul still match as written.
    assert named_values("Which inspections failed this week?", ["pass", "fail"]) == ["fail"]
    assert named_values("Show passing and failing lots", ["fail", "pass"]) == ["pass", "fail"]
    assert named_values("CNC-001 불량", ["CNC-001", "불량"]) == ["CNC-001", "불량"]


def test_unlisted_values_are_ids_in_a_known_shape_that_the_enum_lacks():
    assert unlisted_values("What is the status of CNC-009?", MACHINES) == ["CNC-009"]
    assert unlisted_values("cnc-007는 어때? PRS-001도", MACHINES) == ["CNC-007"]  # case of its shape; known ids skipped
    assert unlisted_values("CNC-0091 or XCNC-009 or CNC-09", MACHINES) == []  # whole tokens of the same shape only
    assert unlisted_values("is the line normal", ["normal", "warning"]) == []  # shapes without a digit never count


async def test_an_unknown_id_the_question_names_can_be_passed_and_the_tool_answers_for_it():
    model = ScriptedChatModel(responses=[call_json("machine_status", {"machine_id": "CNC-009"}), final("No CNC-009.")])
    result = await ReActAgent(model, plant_tools(), abilities=SMALL_SCHEMA).run("What is the status of CNC-009?")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    offered = schema["anyOf"][0]["properties"]["tool_args"]["properties"]["machine_id"]["enum"]
    assert offered == ["CNC-009", "CNC-001", "CNC-002", "CNC-003", "PRS-001"]
    observation = next(str(m.content) for m in result.messages if "Observation from machine_status" in str(m.content))
    assert "invalid arguments" in observation and "'CNC-001'" in observation  # the tool's own refusal, valid ids named
    assert result.answer == "No CNC-009."


async def test_native_binding_puts_the_relevant_tool_and_the_named_id_first():
    model = ScriptedChatModel(responses=["fine"])
    await ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE).run("CNC-003 상태 확인해줘")
    bound = model.call_kwargs[0]["tools"]
    assert bound[0]["function"]["name"] == "machine_status"
    assert bound[0]["function"]["parameters"]["properties"]["machine_id"]["enum"][0] == "CNC-003"


async def test_action_schema_branches_and_enums_follow_the_question():
    model = ScriptedChatModel(responses=[final("fine")])  # every tool offered (no selection): ranked
    await ReActAgent(model, plant_tools(), abilities=SMALL_SCHEMA, settings=AgentSettings(tool_selection=False)).run(
        "Show the repair history of PRS-001")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    branch_names = [b["properties"]["tool_name"]["enum"][0] for b in schema["anyOf"][:-1]]
    assert branch_names[0] == "maintenance_log"
    assert schema["anyOf"][-1]["properties"]["type"]["enum"] == ["final_answer"]
    first_args = schema["anyOf"][0]["properties"]["tool_args"]["properties"]["machine_id"]["enum"]
    assert first_args == ["PRS-001"]  # the only machine the question asks about (refuse_unasked_ids)
    prompt = model.calls[0][0].content
    assert prompt.index("- maintenance_log") < prompt.index("- list_machines")
    model = ScriptedChatModel(responses=[final("fine")])
    await ReActAgent(model, plant_tools(), abilities=SMALL_SCHEMA,
                     settings=AgentSettings(refuse_unasked_ids=False, tool_selection=False)).run(
        "Show the repair history of PRS-001")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    first_args = schema["anyOf"][0]["properties"]["tool_args"]["properties"]["machine_id"]["enum"]
    assert first_args == ["PRS-001", "CNC-001", "CNC-002", "CNC-003"]  # named first, the others after


# hybrid selection ----------------------------------------------------------------------


def hub(count: int = 14) -> list[StructuredTool]:
    extra = [make_tool(f"tool_{i:02d}", f"Unrelated connector {i} data.") for i in range(count - 4)]
    return [*extra, *plant_tools()]


def selection(names: list[str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": names}, "id": "s1",
                                              "type": "tool_call"}])


async def test_the_selection_catalog_is_the_lexical_shortlist_best_first():
    model = ScriptedChatModel(responses=[selection(["machine_status"]), "fine"])
    # two to keep: with one, a clear lexical winner settles the selection and no call is made
    await ReActAgent(model, hub(20), abilities=SMALL_NATIVE, settings=AgentSettings(tool_selection_max=2)).run("CNC-003 상태 확인해줘")
    catalog = [line for line in model.calls[0][-1].content.splitlines() if line.startswith("- ")]
    assert len(catalog) == 12 and catalog[0].startswith("- machine_status")
    assert [t["function"]["name"] for t in model.call_kwargs[1]["tools"]] == ["machine_status"]


@pytest.mark.parametrize("pick", [selection([]), selection(["ghost"]), "no idea at all"])
async def test_an_empty_or_invalid_pick_keeps_the_lexical_top_tools(pick):
    model = ScriptedChatModel(responses=[pick, "still no idea", "nothing", "nope", "zilch", "fine"], repeat_last=True)
    await ReActAgent(model, hub(), abilities=SMALL_NATIVE).run("maintenance history of CNC-003")
    bound = [t["function"]["name"] for t in model.call_kwargs[-1]["tools"]]
    assert bound[0] == "maintenance_log" and len(bound) <= 6 and "tool_00" not in bound


def test_hybrid_selection_rules():
    ranked = [("a", 5.0), ("b", 2.0), ("c", 0.0)]
    assert hybrid_selection(None, ranked, 6) == ["a"]  # b scores under half of the best
    assert hybrid_selection(None, [("a", 5.0), ("b", 3.0), ("c", 0.0)], 6) == ["a", "b"]
    assert hybrid_selection(["b"], ranked, 6) == ["a", "b"]  # the clear lexical winner joins, ranked order
    assert hybrid_selection(["c", "b"], ranked, 2) == ["a", "b"]  # cut to the limit, the winner kept
    assert hybrid_selection(["c", "b", "b"], ranked, 1) == ["a"]
    assert hybrid_selection(["c", "b"], [("a", 1.0), ("b", 1.0), ("c", 0.0)], 1) == ["b"]  # best-ranked pick
    assert hybrid_selection(None, [("a", 0.0), ("b", 0.0)], 6) is None  # no lexical signal: every tool
    assert hybrid_selection(["b"], [("a", 1.0), ("b", 1.0)], 6) == ["b"]  # a tie is no clear winner


# stall detection -----------------------------------------------------------------------


def test_detect_stall_rules():
    """stalls are judged by progress. A new call (even one that fails) is an attempt;
    the same call with the same outcome, or a refused repeat, changes nothing."""
    def step(iteration, args, *, error=None, observation="ok", refused=None):
        return {"iteration": iteration, "tool_name": "t", "tool_args": args, "error": error,
                "observation": "" if error else observation, "refused": refused}

    ok = step(1, {"a": 1})
    assert detect_stall([ok], 1) is None
    assert detect_stall([ok, step(2, {"a": 1}, error="repeated", refused="repeat")], 2) == "repeated_call"
    assert detect_stall([ok, step(2, {"a": 1})], 2) == "repeated_call"  # same call, same observation
    assert detect_stall([ok, step(2, {"a": 1})], 2, repeats=2) is None  # a capable model may poll again
    assert detect_stall([ok, step(2, {"a": 1}, observation="done")], 2) is None  # the outcome moved on
    attempts = [step(1, {"c": 45}, error="too hot"), step(2, {"c": 35}, error="too hot")]
    assert detect_stall(attempts, 2, repeats=3, failures=4) is None  # new arguments after an error: attempts
    assert detect_stall(attempts, 2) == "no_progress"  # strict: two calls without a new observation
    assert detect_stall([*attempts, step(3, {"c": 35}, error="too hot")], 3, repeats=1, failures=9) == "repeated_call"
    assert detect_stall([], 2) == "no_progress"
    assert detect_stall([], 2, progress_iteration=1) is None  # a follow-up came in
    assert detect_stall([], 5, enabled=False) is None


async def test_native_stall_asks_for_the_answer_with_no_tools_bound():
    """Without synthesis, a stalled loop asks once for the answer only; with synthesis it goes
    straight to it (the answer-only call's text would never reach synthesis)."""
    call = AIMessage(content="", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-003"})])
    model = ScriptedChatModel(responses=[call, call, "CNC-003 is at 48.7 °C."])
    agent = ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE,
                       settings=AgentSettings(max_iterations=6, answer_when_covered=False))
    result = await agent.run("CNC-003 상태 확인해줘")
    assert "tools" not in model.call_kwargs[2]  # the third loop call had no tools bound
    assert "do not call any tool" in model.calls[2][-1].content
    assert result.finish_reason == "stalled" and result.iterations == 3
    streamed = ScriptedChatModel(responses=[call, call], synthesis="CNC-003: warning, 48.7 °C, 1.2 mm/s, W-1105.")
    agent = ReActAgent(streamed, plant_tools(), abilities=SMALL_NATIVE,
                       settings=AgentSettings(max_iterations=6, answer_when_covered=False, answer_from_observations=False))
    events = [e async for e in agent.astream_events("CNC-003 상태 확인해줘")]
    assert [e.data for e in events if e.channel == "stall"] == [{"iteration": 3, "reason": "repeated_call"}]
    done = events[-1].data
    assert done["finish_reason"] == "stalled" and done["iterations"] == 2
    assert streamed.kinds == ["tool_loop", "tool_loop", "synthesis"]  # two loop calls, then the synthesis


async def test_json_stall_offers_only_the_final_answer_branch():
    model = ScriptedChatModel(responses=[call_json("machine_status", {"machine_id": "CNC-003"}),
                                         call_json("machine_status", {"machine_id": "CNC-003"}),
                                         final("CNC-003 is at 48.7 °C.")])
    result = await ReActAgent(model, plant_tools(), abilities=SMALL_SCHEMA,
                              settings=AgentSettings(answer_when_covered=False)).run("CNC-003 status")
    assert result.finish_reason == "stalled" and result.answer == "CNC-003 is at 48.7 °C."
    schema = model.call_kwargs[2]["response_format"]["schema"]
    assert [b["properties"]["type"]["enum"] for b in schema["anyOf"]] == [["final_answer"]]
    assert "(no tools)" in model.calls[2][0].content


async def test_two_calls_without_a_new_observation_stall_in_both_modes():
    bad = AIMessage(content="", tool_calls=[tool_call("ghost_tool", {})])
    model = ScriptedChatModel(responses=[bad, bad, "I could not find it."])
    result = await ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE).run("q")
    assert (result.finish_reason, result.iterations, len(model.calls)) == ("stalled", 3, 3)


async def test_the_lexical_gate_offers_no_tools_to_a_question_no_tool_matches():
    model = ScriptedChatModel(responses=[final("Hello! Ask me about the machines.")])
    result = await ReActAgent(model, hub(), abilities=SMALL_SCHEMA, settings=AgentSettings(lexical_gate=True)).run(
        "Good morning, thanks a lot!")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    assert [branch["properties"]["type"]["enum"] for branch in schema.get("anyOf", [schema])] == [["final_answer"]]
    assert len(model.calls) == 1  # no selection call: the loop call answered
    assert result.steps == [] and "machines" in result.answer
    matched = ScriptedChatModel(responses=[json.dumps({"tools": ["machine_status"]}), final("fine")])
    await ReActAgent(matched, hub(), abilities=SMALL_SCHEMA, settings=AgentSettings(lexical_gate=True)).run("CNC-003 상태")
    loop_schema = matched.call_kwargs[1]["response_format"]["schema"]
    assert loop_schema["anyOf"][0]["properties"]["tool_name"]["enum"] == ["machine_status"]  # selection ran and kept it


class FilterArgs(BaseModel):
    machine_id: Literal["CNC-001", "CNC-002", "CNC-003", "PRS-001"] = Field(description="Machine id")
    line: Literal["Line A", "Line B"] | None = Field(None, description="Only this line")
    day: Annotated[str, Field(json_schema_extra={"format": "date"})] | None = Field(None, description="A day")
    result: Literal["pass", "fail"] | None = Field(None, description="Only this result")
    limit: int = Field(5, description="Rows")


async def test_named_optionals_only_offers_the_optional_arguments_the_question_names():
    def alarms(machine_id: str, line: str | None = None, day: str | None = None, result: str | None = None,
               limit: int = 5) -> str:
        return f"alarms of {machine_id}"

    tool = StructuredTool.from_function(alarms, name="alarm_log", description="Alarm log of a machine.",
                                        args_schema=FilterArgs)
    for question, expected in [("alarm log of CNC-003", {"machine_id"}),
                               ("alarm log of CNC-003 on Line B", {"machine_id", "line"}),
                               ("alarm log of CNC-003 on 2026-01-28", {"machine_id", "day"}),
                               ("failed checks of CNC-003", {"machine_id", "result"})]:
        model = ScriptedChatModel(responses=[final("ok")])
        settings = AgentSettings(optional_args="named")
        await ReActAgent(model, [tool], abilities=SMALL_SCHEMA, settings=settings).run(question)
        branch = model.call_kwargs[0]["response_format"]["schema"]["anyOf"][0]
        assert set(branch["properties"]["tool_args"]["properties"]) == expected, question
    model = ScriptedChatModel(responses=[final("ok")])
    await ReActAgent(model, [tool], abilities=SMALL_SCHEMA).run("alarm log of CNC-003")  # the strict policy: named ones
    branch = model.call_kwargs[0]["response_format"]["schema"]["anyOf"][0]
    assert set(branch["properties"]["tool_args"]["properties"]) == {"machine_id"}
    model = ScriptedChatModel(responses=[final("ok")])
    capable = ModelAbilities(json_mode=True, schema_output="json_object_schema")  # permissive: every argument
    await ReActAgent(model, [tool], abilities=capable).run("alarm log of CNC-003")
    branch = model.call_kwargs[0]["response_format"]["schema"]["anyOf"][0]
    assert set(branch["properties"]["tool_args"]["properties"]) == {"machine_id", "line", "day", "result", "limit"}


async def test_a_call_with_an_id_the_question_does_not_ask_about_is_refused_with_the_asked_one():
    """The embedded model's failure (note): asked about CNC-003, it called for the
    first machine its schema listed. The call is not run; the model is told which id the
    question names, calls again with it and answers from its result; the synthesis input
    leaves the refused call out."""
    from reactgraph.answer.synthesis import format_trace

    model = ScriptedChatModel(responses=[
        AIMessage("", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-001"}, "a")]),
        AIMessage("", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-003"}, "b")]),
        "CNC-003: 48.7 °C",
    ])
    agent = ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE,
                       settings=AgentSettings(tool_selection=False, answer_when_covered=False), checkpointer=InMemorySaver())
    result = await agent.run("CNC-003 상태 알려줘", thread_id="t")
    assert result.answer == "CNC-003: 48.7 °C"
    first, second = (await agent.graph.aget_state({"configurable": {"thread_id": "t"}})).values["steps"]
    assert first["refused"] == "unasked" and first["ran"] is False
    assert first["error"].startswith("that machine_id is not one the question asks about: it names CNC-003. "
                                     "Call machine_status with machine_id 'CNC-003'")
    assert second["refused"] is None and second["observation"].startswith("machine_status of CNC-003")
    assert "it names CNC-003" in model.calls[1][-1].content  # the model was told
    assert "CNC-001" not in format_trace([first, second], result.answer)


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_ids_a_tool_result_or_the_user_wrote_may_be_used(mode):
    """A tool that lists machines makes their ids fair to use, as does an id the user wrote
    in an earlier turn of the thread; an id is free when the question names none of that
    argument's ids; the check is off with ``refuse_unasked_ids=False``."""
    listing = make_tool("list_machines", "List every machine.", output="CNC-001 line A, PRS-001 line B")
    tools = [listing, *plant_tools()[1:]]
    abilities = SMALL_NATIVE if mode == "native" else ModelAbilities(json_mode=True, small=True)
    done = "done" if mode == "native" else final("done")

    def call(name: str, machine: str) -> Any:
        if mode == "native":
            return AIMessage("", tool_calls=[tool_call(name, {"machine_id": machine}, f"{name}-{machine}")])
        return json.dumps({"type": "tool_call", "reasoning": "r", "tool_name": name, "tool_args": {"machine_id": machine}})

    def refusals(result) -> list[str | None]:
        return ["unasked" if step.error and "is not one the question asks about" in step.error else None
                for step in result.steps]

    def agent(*script: Any, **settings: Any) -> ReActAgent:
        return ReActAgent(ScriptedChatModel(responses=list(script)), tools, abilities=abilities,
                          settings=AgentSettings(tool_selection=False, answer_when_covered=False, **settings),
                          checkpointer=InMemorySaver())

    listed = agent(call("list_machines", "CNC-003"), call("machine_status", "PRS-001"), done)
    assert refusals(await listed.run("Which machine is busier than CNC-003?")) == [None, None]

    turns = agent(call("machine_status", "PRS-001"), done, call("machine_status", "PRS-001"), done)
    assert refusals(await turns.run("How is PRS-001?", thread_id="t")) == [None]
    assert refusals(await turns.run("Compare CNC-003 with it", thread_id="t")) == [None]  # the user wrote PRS-001

    assert refusals(await agent(call("machine_status", "PRS-001"), done).run("How is the press?")) == [None]
    assert refusals(await agent(call("machine_status", "PRS-001"), done).run("Compare CNC-003 with the press")) \
        == ["unasked"]
    again = agent(call("machine_status", "PRS-001"), call("machine_status", "PRS-001"), done)
    assert refusals(await again.run("Compare CNC-003 with the press")) == ["unasked", "unasked"]  # not told by the refusal
    off = agent(call("machine_status", "PRS-001"), done, refuse_unasked_ids=False)
    assert refusals(await off.run("Compare CNC-003 with the press")) == [None]


async def test_a_constrained_model_is_offered_the_ids_asked_about_and_those_a_tool_listed():
    """With a schema, the id enum of a question that names ids offers only those, then also
    the ids a tool result wrote (what a call may pass without being refused)."""
    listing = make_tool("list_machines", "List every machine.", output="CNC-001 line A, PRS-001 line B")
    model = ScriptedChatModel(responses=[call_json("list_machines", {"machine_id": "CNC-003"}), final("done")])
    await ReActAgent(model, [listing, *plant_tools()[1:]], abilities=SMALL_SCHEMA,
                     settings=AgentSettings(tool_selection=False, answer_when_covered=False)).run(
        "Which machine is busier than CNC-003?")

    def offered(call: int) -> list[str]:
        branches = model.call_kwargs[call]["response_format"]["schema"]["anyOf"][:-1]
        return next(b["properties"]["tool_args"]["properties"]["machine_id"]["enum"] for b in branches
                    if b["properties"]["tool_name"]["enum"] == ["machine_status"])

    assert offered(0) == ["CNC-003"]
    assert offered(1) == ["CNC-003", "CNC-001", "PRS-001"]


def test_the_folded_step_outcomes_judge_as_the_whole_turn_read_at_once():
    """A loop node folds a turn's step records in as they grow (one fold per node): at every
    call of a run, and for a list that is no grown copy (a new turn, records read back from a
    checkpoint), its judgement is the one of reading every record."""
    def step(iteration, tool, args, *, error=None, observation="ok", refused=None):
        return {"iteration": iteration, "tool_name": tool, "tool_args": args, "error": error,
                "observation": "" if error else observation, "refused": refused}

    script = [step(1, "lookup", {"order": "B-7"}), step(2, "lookup", {"order": "B-7"}),
              step(3, "wetter", {"stadt": "Köln"}, error="timeout"), step(3, "wetter", {"stadt": "Köln"}, error="timeout"),
              step(4, "天気", {"都市": "東京"}, refused="repeat", error="repeated"),
              step(5, "lookup", {"order": "B-7"}, observation="shipped"), step(6, "wetter", {"stadt": "Bonn"})]
    fold = step_outcomes_fold()
    grown: list = []
    for record in script:
        grown = [*grown, record]  # the steps reducer makes a new list of the same records
        for repeats, failures, progress in ((1, 2, 0), (2, 3, 0), (1, 2, 2)):
            assert detect_stall(grown, record["iteration"], True, progress, repeats, failures,
                                outcomes=fold(grown, "thread-1")) == detect_stall(grown, record["iteration"], True,
                                                                                  progress, repeats, failures)
    fresh = [dict(record) for record in script[:3]]  # equal records, new objects: read from their start
    assert fold(fresh, "thread-1").called == StepOutcomes.of(fresh).called == {1, 2, 3}
    assert detect_stall(fresh, 3, outcomes=fold(fresh, "thread-1")) == detect_stall(fresh, 3) == "no_progress"
