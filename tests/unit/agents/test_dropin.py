"""Drop-in parity with LangGraph's prebuilt agent.

Each scenario runs against ``langgraph.prebuilt.create_react_agent`` (which proves the
scenario is written right) and against ``create_react_graph`` with the same scripted model
and tools, and asserts the same behaviour. The deliberate differences of docs/dropin.md's
drop-in table are asserted as documented, each on both graphs.
"""

from __future__ import annotations

import json
import warnings
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.errors import GraphRecursionError
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode, ToolRuntime
from langgraph.prebuilt.chat_agent_executor import AgentState as PrebuiltState
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from reactgraph import AgentSettings, ModelAbilities, check_protocol, create_react_graph
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

KINDS = ["prebuilt", "reactgraph"]


def build(kind: str, model: Any, tools: list[Any], **kwargs: Any) -> Any:
    """The same agent, built by LangGraph's prebuilt factory or by reactgraph (reactgraph's
    with its two phases, ``synthesis="always"``: these tests compare the seed's calls)."""
    if kind == "prebuilt":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_react_agent(model, tools, **kwargs)
    kwargs.setdefault("settings", AgentSettings(synthesis="always"))
    return create_react_graph(model, tools, abilities=NATIVE_TOOLS_ONLY, **kwargs)


def calls(*items: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name, args, call_id) for name, args, call_id in items])


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def loop_calls(model: ScriptedChatModel) -> list[list[Any]]:
    """The message lists of the tool loop's model calls (synthesis calls left out)."""
    return [c for c, kind in zip(model.calls, model.kinds) if kind != "synthesis"]


# ----------------------------------------------------------------------- interrupt()


@tool
def approve_transfer(amount: int) -> str:
    """Transfer money after a human approves."""
    answer = interrupt({"question": f"transfer {amount}?"})
    return f"transfer {amount}: {answer}"


@pytest.mark.parametrize("kind", KINDS)
async def test_interrupt_in_a_tool_pauses_the_run_and_resumes(kind):
    model = ScriptedChatModel(responses=[calls(("approve_transfer", {"amount": 5}, "c1")), "Done: approved."])
    graph = build(kind, model, [approve_transfer], checkpointer=InMemorySaver())
    paused = await graph.ainvoke({"messages": [HumanMessage("send 5")]}, thread("t"))
    [pending] = paused["__interrupt__"]
    assert pending.value == {"question": "transfer 5?"}
    assert len(loop_calls(model)) == 1  # fails closed: the model does not go on without the answer
    snapshot = await graph.aget_state(thread("t"))
    assert snapshot.next and snapshot.interrupts[0].value == {"question": "transfer 5?"}  # checkpointed

    done = await graph.ainvoke(Command(resume="approved"), thread("t"))
    tool_messages = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == ["transfer 5: approved"]
    assert done["messages"][-1].content == "Done: approved."


@pytest.mark.parametrize("kind", KINDS)
async def test_interrupts_in_a_parallel_batch_are_answered_together(kind):
    model = ScriptedChatModel(responses=[calls(("approve_transfer", {"amount": 1}, "c1"),
                                               ("approve_transfer", {"amount": 2}, "c2")), "Both sent."])
    graph = build(kind, model, [approve_transfer], checkpointer=InMemorySaver())
    paused = await graph.ainvoke({"messages": [HumanMessage("send 1 and 2")]}, thread("t"))
    pending = paused["__interrupt__"]
    assert sorted(p.value["question"] for p in pending) == ["transfer 1?", "transfer 2?"]
    answers = {p.id: ("yes" if "1" in p.value["question"] else "no") for p in pending}
    done = await graph.ainvoke(Command(resume=answers), thread("t"))
    tool_messages = {m.tool_call_id: m.content for m in done["messages"] if isinstance(m, ToolMessage)}
    assert tool_messages == {"c1": "transfer 1: yes", "c2": "transfer 2: no"}
    check_protocol(done["messages"])


# ------------------------------------------------------------------ Command results


class Profile(PrebuiltState):
    user_name: str


@tool
def remember_name(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Remember the user's name."""
    return Command(update={"user_name": name,
                           "messages": [ToolMessage(f"saved {name}", tool_call_id=tool_call_id)]})


@pytest.mark.parametrize("kind", KINDS)
async def test_a_command_from_a_tool_updates_the_state(kind):
    model = ScriptedChatModel(responses=[calls(("remember_name", {"name": "Ann"}, "c1")), "Hi Ann."])
    graph = build(kind, model, [remember_name], state_schema=Profile)
    state = await graph.ainvoke({"messages": [HumanMessage("I am Ann")], "user_name": "?"})
    assert state["user_name"] == "Ann"  # the extra key is kept, updated by the tool
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert (result.content, result.tool_call_id, result.name) == ("saved Ann", "c1", "remember_name")
    assert state["messages"][-1].content == "Hi Ann."


# ----------------------------------------------------------------------- injection


class Ctx(TypedDict):
    plant: str


@tool
def lookup(key: str, state: Annotated[dict, InjectedState], store: Annotated[Any, InjectedStore()],
           runtime: ToolRuntime) -> str:
    """Look up a stored value."""
    item = store.get(("plant",), key)
    runtime.stream_writer({"lookup": key})
    return json.dumps({"value": item.value["v"] if item else None, "messages": len(state["messages"]),
                       "context": runtime.context["plant"] if runtime.context else None,
                       "call": runtime.tool_call_id, "same_store": runtime.store is store})


@pytest.mark.parametrize("kind", KINDS)
async def test_injected_state_store_and_tool_runtime(kind):
    store = InMemoryStore()
    store.put(("plant",), "oee", {"v": 0.82})
    model = ScriptedChatModel(responses=[calls(("lookup", {"key": "oee"}, "c1")), "OEE is 82%."])
    graph = build(kind, model, [lookup], store=store, context_schema=Ctx)
    custom = []
    async for mode, data in graph.astream({"messages": [HumanMessage("oee?")]}, context={"plant": "P1"},
                                          stream_mode=["custom", "values"]):
        if mode == "custom":
            custom.append(data)
        else:
            state = data
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert json.loads(result.content) == {"value": 0.82, "messages": 2, "context": "P1", "call": "c1", "same_store": True}
    assert {"lookup": "oee"} in custom
    # the model is offered only the model-visible argument
    schema = model.call_kwargs[0]["tools"][0]["function"]["parameters"]
    assert list(schema["properties"]) == ["key"]


# ------------------------------------------------------- functions, dicts, bound models


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


WEB_SEARCH = {"type": "web_search_preview"}


@pytest.mark.parametrize("kind", KINDS)
async def test_plain_functions_and_provider_dicts_are_tools(kind):
    model = ScriptedChatModel(responses=[calls(("add", {"a": 2, "b": 3}, "c1")), "5"])
    graph = build(kind, model, [add, WEB_SEARCH])
    state = await graph.ainvoke({"messages": [HumanMessage("2+3?")]})
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert result.content == "5"
    bound = model.call_kwargs[0]["tools"]
    assert [t.get("function", {}).get("name") for t in bound if "function" in t] == ["add"]
    assert WEB_SEARCH in bound  # the provider's tool is offered, run by the provider


@pytest.mark.parametrize("kind", KINDS)
async def test_a_pre_bound_model_keeps_its_bindings(kind):
    base = ScriptedChatModel(responses=[calls(("add", {"a": 1, "b": 1}, "c1")), "2"])
    graph = build(kind, base.bind_tools([add], parallel_tool_calls=False), [add])
    state = await graph.ainvoke({"messages": [HumanMessage("1+1?")]})
    assert state["messages"][-1].content == "2"
    assert all(kwargs.get("parallel_tool_calls") is False for kwargs in base.call_kwargs)
    assert all(kwargs.get("tools") for kwargs in base.call_kwargs)
    if kind == "reactgraph":  # synthesis streams the answer without tools
        assert base.stream_kwargs and all("tools" not in kwargs for kwargs in base.stream_kwargs)


async def test_a_pre_bound_model_with_other_tools_is_refused():
    model = ScriptedChatModel(responses=[]).bind_tools([add])
    with pytest.raises(ValueError, match="bound to tools"):
        create_react_graph(model, [approve_transfer], abilities=NATIVE_TOOLS_ONLY)


# --------------------------------------------------------------------- return_direct


@tool(return_direct=True)
def final_report(machine: str) -> str:
    """Produce the final report of a machine."""
    return f"REPORT {machine}: all normal"


@pytest.mark.parametrize("kind", KINDS)
async def test_return_direct_ends_the_run_with_the_tool_output(kind):
    model = ScriptedChatModel(responses=[calls(("final_report", {"machine": "CNC-3"}, "c1"))])
    graph = build(kind, model, [final_report])
    state = await graph.ainvoke({"messages": [HumanMessage("report CNC-3")]})
    assert len(model.calls) == 1  # no model call after the tool, not even synthesis
    assert state["messages"][-1].content == "REPORT CNC-3: all normal"
    tool_message = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert tool_message.content == "REPORT CNC-3: all normal"
    if kind == "prebuilt":
        assert isinstance(state["messages"][-1], ToolMessage)
    else:  # documented difference: an assistant message holding the result closes the loop
        assert isinstance(state["messages"][-1], AIMessage)
        assert state["finish_reason"] == "return_direct" and state["synthesis"] == "REPORT CNC-3: all normal"


# ---------------------------------------------------------------- recursion and caps


def endless(messages: list[Any]) -> AIMessage:
    return calls(("add", {"a": len(messages), "b": 1}, f"c{len(messages)}"))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_low_recursion_limit_ends_gracefully_with_an_assistant_message(kind):
    model = ScriptedChatModel(responses=[endless], repeat_last=True)
    graph = build(kind, model, [add])
    state = await graph.ainvoke({"messages": [HumanMessage("Keep adding the numbers in a loop")]}, {"recursion_limit": 12})
    assert isinstance(state["messages"][-1], AIMessage) and not state["messages"][-1].tool_calls
    check_protocol(state["messages"])
    if kind == "prebuilt":
        assert state["messages"][-1].content == "Sorry, need more steps to process this request."
    else:
        assert state["finish_reason"] == "max_iterations"
        assert state["answer"].startswith(f"I stopped after {state['iteration']} iterations")
        assert state["messages"][-1].content == state["answer"]


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_every_recursion_limit_from_ten_ends_with_the_fallback_never_an_error(mode):
    """SPEC R2.6 for any caller's limit (the prebuilt agent raises GraphRecursionError for
    some, e.g. 17 and 25 on this scenario)."""
    def endless_json(messages: list[Any]) -> str:
        return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "add", "tool_args": {"a": len(messages), "b": 1}})

    for limit in range(10, 41):
        model = ScriptedChatModel(responses=[endless if mode == "native" else endless_json], repeat_last=True)
        graph = create_react_graph(model, [add], abilities=NATIVE_TOOLS_ONLY, use_native_tools=mode == "native")
        state = await graph.ainvoke({"messages": [HumanMessage("loop")]}, {"recursion_limit": limit})
        assert state["finish_reason"] == "max_iterations", limit
        assert isinstance(state["messages"][-1], AIMessage) and state["messages"][-1].content == state["answer"]
        assert state["synthesis"] == "Synthesized answer."


async def test_the_iteration_cap_leaves_the_fallback_as_the_last_message():
    model = ScriptedChatModel(responses=[endless], repeat_last=True)
    graph = create_react_graph(model, [add], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(max_iterations=3))
    state = await graph.ainvoke({"messages": [HumanMessage("loop")]})
    assert state["iteration"] == 3 and state["finish_reason"] == "max_iterations"
    assert isinstance(state["messages"][-1], AIMessage) and state["messages"][-1].content == state["answer"]


async def test_a_recursion_limit_too_small_for_any_answer_still_raises():
    """Documented: below the fallback path's own steps LangGraph's error is all there is."""
    model = ScriptedChatModel(responses=[endless], repeat_last=True)
    graph = create_react_graph(model, [add], abilities=NATIVE_TOOLS_ONLY)
    with pytest.raises(GraphRecursionError):
        await graph.ainvoke({"messages": [HumanMessage("loop")]}, {"recursion_limit": 4})


# ------------------------------------------------------------------- tool output


IMAGE = [{"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}]


@tool
def snapshot(machine: str) -> list:
    """Camera snapshot of a machine."""
    return IMAGE


@tool
def part_numbers(machine: str) -> list:
    """Part numbers of a machine."""
    return ["P-1", "P-2"]


@pytest.mark.parametrize("kind", KINDS)
async def test_content_blocks_are_kept_and_lists_become_json(kind):
    model = ScriptedChatModel(responses=[calls(("snapshot", {"machine": "M"}, "c1"),
                                               ("part_numbers", {"machine": "M"}, "c2")), "seen"])
    graph = build(kind, model, [snapshot, part_numbers])
    state = await graph.ainvoke({"messages": [HumanMessage("look")]})
    results = {m.tool_call_id: m.content for m in state["messages"] if isinstance(m, ToolMessage)}
    assert results == {"c1": IMAGE, "c2": '["P-1", "P-2"]'}
    second = loop_calls(model)[1]
    assert [m.content for m in second if isinstance(m, ToolMessage)] == [IMAGE, '["P-1", "P-2"]']  # sent as is


# ------------------------------------------------------------------- input unchanged


@pytest.mark.parametrize("kind", KINDS)
async def test_the_input_message_comes_back_unchanged(kind):
    model = ScriptedChatModel(responses=["hello"])
    graph = build(kind, model, [add], checkpointer=InMemorySaver())
    sent = HumanMessage("hi", id="m1")
    state = await graph.ainvoke({"messages": [sent]}, thread("t"))
    assert state["messages"][0] == sent
    stored = (await graph.aget_state(thread("t"))).values["messages"][0]
    assert stored == sent and stored.additional_kwargs == {}


# --------------------------------------------------------------------- prompt, name


def prompt_function(state: dict[str, Any]) -> list[Any]:
    return [SystemMessage("You are the plant assistant."), *state["messages"][-1:]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("prompt", ["You are the plant assistant.", SystemMessage("You are the plant assistant."),
                                    prompt_function, RunnableLambda(prompt_function)],
                         ids=["str", "system_message", "callable", "runnable"])
async def test_prompt_kinds(kind, prompt):
    model = ScriptedChatModel(responses=["ok"])
    graph = build(kind, model, [add], prompt=prompt)
    await graph.ainvoke({"messages": [HumanMessage("earlier"), AIMessage("noted"), HumanMessage("now")]})
    sent = loop_calls(model)[0]
    assert sent[0] == SystemMessage("You are the plant assistant.")
    expected = ["earlier", "noted", "now"] if isinstance(prompt, (str, SystemMessage)) else ["now"]
    assert [m.content for m in sent[1:]] == expected


async def test_a_callable_prompt_in_json_mode_keeps_the_tool_protocol():
    model = ScriptedChatModel(responses=[json.dumps({"type": "final_answer", "reasoning": "", "answer": "ok"})])
    graph = create_react_graph(model, [add], prompt=prompt_function)
    await graph.ainvoke({"messages": [HumanMessage("earlier"), AIMessage("noted"), HumanMessage("now")]})
    sent = model.calls[0]
    assert sent[0].content.startswith("You are the plant assistant.") and '"type": "tool_call"' in sent[0].content
    assert [m.content for m in sent[1:]] == ["now"]


@pytest.mark.parametrize("kind", KINDS)
async def test_name_is_set_on_the_assistant_messages(kind):
    model = ScriptedChatModel(responses=[calls(("add", {"a": 1, "b": 2}, "c1")), "3"])
    graph = build(kind, model, [add], name="calculator")
    state = await graph.ainvoke({"messages": [HumanMessage("1+2")]})
    assert [m.name for m in state["messages"] if isinstance(m, AIMessage)] == ["calculator", "calculator"]
    assert graph.get_graph().nodes  # a compiled graph either way
    assert (graph.bound if hasattr(graph, "bound") else graph).name == "calculator"


# ----------------------------------------------------------------- interrupt_before


@pytest.mark.parametrize("kind", KINDS)
async def test_interrupt_before_tools_uses_the_prebuilt_node_name(kind):
    model = ScriptedChatModel(responses=[calls(("add", {"a": 1, "b": 2}, "c1")), "3"])
    graph = build(kind, model, [add], checkpointer=InMemorySaver(), interrupt_before=["tools"])
    await graph.ainvoke({"messages": [HumanMessage("1+2")]}, thread("t"))
    snapshot = await graph.aget_state(thread("t"))
    assert snapshot.next == (("tools",) if kind == "prebuilt" else ("execute_tools",))
    assert not any(isinstance(m, ToolMessage) for m in snapshot.values["messages"])
    state = await graph.ainvoke(None, thread("t"))
    assert state["messages"][-1].content == "3"


# ------------------------------------------------------------------ response_format


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float


@pytest.mark.parametrize("kind", KINDS)
async def test_response_format_gives_a_validated_structured_response(kind):
    structured = AIMessage(content="", tool_calls=[tool_call("Weather", {"city": "Seoul", "celsius": 21.5}, "s1")])
    model = ScriptedChatModel(responses=["It is 21.5 °C in Seoul.", structured])
    graph = build(kind, model, [add], response_format=Weather)
    state = await graph.ainvoke({"messages": [HumanMessage("weather in Seoul?")]})
    assert state["structured_response"] == Weather(city="Seoul", celsius=21.5)
    assert state["messages"][-1].content == "It is 21.5 °C in Seoul."


async def test_response_format_works_on_a_plain_text_model():
    """What no peer offers: no tool calling, no JSON mode, the schema still comes back
    (SPEC §4 level 3). ``create_react_agent`` needs native structured output here."""
    model = ScriptedChatModel(responses=[
        json.dumps({"type": "final_answer", "reasoning": "", "answer": "It is 21.5 °C in Seoul."}),
        'Sure: ```json\n{"city": "Seoul", "celsius": 21.5}\n```',
    ])
    graph = create_react_graph(model, [add], abilities=ModelAbilities(tool_call=False, json_mode=False),
                               response_format=("Extract the weather.", Weather))
    state = await graph.ainvoke({"messages": [HumanMessage("weather in Seoul?")]})
    assert state["structured_response"] == Weather(city="Seoul", celsius=21.5)
    last = model.calls[-1]
    assert last[0] == SystemMessage("Extract the weather.")
    assert state["usage"]["model_calls"] == 3  # loop, synthesis, structured


# ----------------------------------------------------------- deliberate differences


@tool
def broken_sensor(machine: str) -> str:
    """Read a sensor."""
    raise RuntimeError("sensor bus offline")


@pytest.mark.parametrize("kind", KINDS)
async def test_difference_tool_exceptions_become_observations(kind):
    model = ScriptedChatModel(responses=[calls(("broken_sensor", {"machine": "M"}, "c1")), "The sensor is offline."])
    graph = build(kind, model, [broken_sensor])
    if kind == "prebuilt":  # LangGraph re-raises tool exceptions by default
        with pytest.raises(RuntimeError, match="sensor bus offline"):
            await graph.ainvoke({"messages": [HumanMessage("read")]})
        return
    state = await graph.ainvoke({"messages": [HumanMessage("read")]})  # R2.7
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert (result.content, result.status) == ("Error: RuntimeError: sensor bus offline", "error")
    assert state["messages"][-1].content == "The sensor is offline."


@pytest.mark.parametrize("kind", KINDS)
async def test_difference_handle_tool_errors_chooses_langgraphs_policy(kind):
    model = ScriptedChatModel(responses=[calls(("broken_sensor", {"machine": "M"}, "c1")), "x"])
    if kind == "prebuilt":
        from langgraph.prebuilt import ToolNode

        graph = build(kind, model, ToolNode([broken_sensor], handle_tool_errors=False))
    else:
        graph = build(kind, model, [broken_sensor], handle_tool_errors=False)
    with pytest.raises(RuntimeError, match="sensor bus offline"):
        await graph.ainvoke({"messages": [HumanMessage("read")]})


@tool
def book(slot: str) -> str:
    """Book a maintenance slot."""
    return f"booked {slot}"


book.metadata = {"side_effects": True}


@pytest.mark.parametrize("kind", KINDS)
async def test_difference_a_repeat_is_marked_unchanged_and_one_with_side_effects_is_refused(kind):
    """a repeated read runs again (the model is told the result did not change);
    a repeated call of a tool that declares side effects is refused, not run twice."""
    model = ScriptedChatModel(responses=[calls(("add", {"a": 1, "b": 2}, "c1")), calls(("add", {"a": 1, "b": 2}, "c2")),
                                         calls(("book", {"slot": "9:00"}, "c3")), calls(("book", {"slot": "9:00"}, "c4")),
                                         "3"])
    graph = build(kind, model, [add, book])
    state = await graph.ainvoke({"messages": [HumanMessage("1+2, then book 9:00")]})
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    if kind == "prebuilt":
        assert [results[c].content for c in ("c2", "c4")] == ["3", "booked 9:00"]
    else:
        assert results["c2"].status == "success" and results["c2"].content.startswith("3\n\n(Unchanged:")
        assert results["c4"].status == "error" and results["c4"].content.startswith("Error: repeated call")
        model2 = ScriptedChatModel(responses=[calls(("book", {"slot": "9:00"}, "c1")),
                                              calls(("book", {"slot": "9:00"}, "c2")), "done"])
        again = create_react_graph(model2, [book], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(refuse_repeated_calls=False))
        state = await again.ainvoke({"messages": [HumanMessage("book 9:00")]})
        assert [m.content for m in state["messages"] if isinstance(m, ToolMessage)] == ["booked 9:00", "booked 9:00"]


@pytest.mark.parametrize("kind", KINDS)
async def test_difference_an_invalid_history_is_repaired(kind):
    history = [HumanMessage("1+2"), calls(("add", {"a": 1, "b": 2}, "old")), HumanMessage("and now?")]
    model = ScriptedChatModel(responses=["3"])
    graph = build(kind, model, [add])
    if kind == "prebuilt":  # sent as is: the provider protocol check (our scripted model) refuses it
        with pytest.raises(ValueError, match="do not have a corresponding ToolMessage"):
            await graph.ainvoke({"messages": history})
        return
    state = await graph.ainvoke({"messages": history})
    check_protocol(state["messages"])
    assert [type(m).__name__ for m in state["messages"]] == ["HumanMessage", "AIMessage", "ToolMessage", "HumanMessage", "AIMessage"]


@pytest.mark.parametrize("kind", KINDS)
async def test_difference_node_names(kind):
    graph = build(kind, ScriptedChatModel(responses=[]), [add])
    nodes = set(graph.get_graph().nodes) - {"__start__", "__end__"}
    if kind == "prebuilt":
        assert nodes == {"agent", "tools"}
    else:
        assert nodes == {"start_turn", "select_tools", "guard_context", "llm_call_native",
                         "llm_call_json", "execute_tools", "fallback", "synthesize"}


@pytest.mark.parametrize("kind", KINDS)
async def test_difference_the_messages_stream_and_synthesize_false(kind):
    """The prebuilt agent streams every model call; reactgraph emits each loop message once,
    whole (loop calls are not token-streamed), then streams the synthesis token by token.
    ``synthesize=False`` gives the prebuilt shape."""

    def texts(config: dict[str, Any]) -> list[str]:
        model = ScriptedChatModel(responses=[calls(("add", {"a": 1, "b": 2}, "c1")), "3"], synthesis="The sum is 3.")
        graph = build(kind, model, [add])
        seen = []
        for chunk, _ in graph.stream({"messages": [HumanMessage("1+2")]}, config, stream_mode="messages"):
            text = chunk.content if isinstance(chunk.content, str) else json.dumps(chunk.content)
            if isinstance(chunk, (AIMessage, AIMessageChunk, ToolMessage)) and text:
                seen.append(text)
        return seen

    if kind == "prebuilt":
        assert texts({}) == ["3", "3"]  # tool result, then the model's answer
        return
    streamed = texts({})
    assert streamed[:2] == ["3", "3"] and streamed[2:] == ["The ", "sum ", "is ", "3."]  # then token by token
    assert texts({"configurable": {"synthesize": False}}) == ["3", "3"]


# ------------------------------------------- the same mechanisms in JSON mode, sync, facade


def json_call(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": name, "tool_args": args})


def json_final(answer: str) -> str:
    return json.dumps({"type": "final_answer", "reasoning": "", "answer": answer})


async def test_json_mode_interrupt_and_command_work_as_in_native_mode():
    model = ScriptedChatModel(responses=[json_call("approve_transfer", {"amount": 5}),
                                         json_call("remember_name", {"name": "Ann"}), json_final("done")])
    graph = create_react_graph(model, [approve_transfer, remember_name], state_schema=Profile, checkpointer=InMemorySaver())
    paused = await graph.ainvoke({"messages": [HumanMessage("send 5, I am Ann")]}, thread("t"))
    assert paused["__interrupt__"][0].value == {"question": "transfer 5?"} and len(model.calls) == 1
    state = await graph.ainvoke(Command(resume="ok"), thread("t"))
    observations = [m.content for m in state["messages"] if isinstance(m, HumanMessage)][1:]
    assert observations == ["Observation from approve_transfer:\ntransfer 5: ok", "Observation from remember_name:\nsaved Ann"]
    assert state["user_name"] == "Ann" and state["answer"] == "done"
    assert [s["tool_name"] for s in state["steps"]] == ["approve_transfer", "remember_name"]


def test_a_sync_run_pauses_on_interrupt_and_resumes():
    model = ScriptedChatModel(responses=[calls(("approve_transfer", {"amount": 7}, "c1")), "sent"])
    graph = create_react_graph(model, [approve_transfer], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                               settings=AgentSettings(synthesis="always"))
    paused = graph.invoke({"messages": [HumanMessage("send 7")]}, thread("s"))
    assert paused["__interrupt__"][0].value == {"question": "transfer 7?"}
    state = graph.invoke(Command(resume="yes"), thread("s"))
    assert [m.content for m in state["messages"] if isinstance(m, ToolMessage)] == ["transfer 7: yes"]
    assert set(model.apis) == {"generate", "stream"}  # sync model APIs only


async def test_the_facade_takes_prompt_function_tools_and_response_format():
    from reactgraph import ReActAgent

    structured = AIMessage(content="", tool_calls=[tool_call("Weather", {"city": "Busan", "celsius": 19}, "s1")])
    model = ScriptedChatModel(responses=[calls(("add", {"a": 9, "b": 10}, "c1")), "19 °C in Busan.", structured])
    agent = ReActAgent(model, [add], abilities=NATIVE_TOOLS_ONLY, prompt="You are the weather desk.", response_format=Weather,
                       name="desk")
    result = await agent.run("Busan?")
    assert result.structured_response == Weather(city="Busan", celsius=19)
    assert model.calls[0][0] == SystemMessage("You are the weather desk.") == result.messages[0]
    assert [s.observation for s in result.steps] == ["19"]
    assert result.messages[-1].name == "desk"


# ------------------------------------------------------ supervisor with Command.PARENT


@tool
def transfer_to_billing(state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the conversation to the billing agent."""
    done = ToolMessage("Transferred to billing.", tool_call_id=tool_call_id, name="transfer_to_billing")
    return Command(graph=Command.PARENT, goto="billing", update={"messages": [*state["messages"], done]})


@tool
def invoice_total(invoice: str) -> str:
    """Total of an invoice."""
    return f"{invoice}: 1,200 EUR"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_supervisor_hands_off_between_two_agents_through_command_parent(kind):
    from langgraph.graph import START, MessagesState, StateGraph

    triage_model = ScriptedChatModel(responses=[calls(("transfer_to_billing", {}, "h1"))])
    billing_model = ScriptedChatModel(responses=[calls(("invoice_total", {"invoice": "INV-7"}, "b1")),
                                                 "INV-7 totals 1,200 EUR."])
    triage = build(kind, triage_model, [transfer_to_billing], name="triage")
    billing = build(kind, billing_model, [invoice_total], name="billing")
    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage, destinations=("billing",))
    builder.add_node("billing", billing)
    builder.add_edge(START, "triage")
    supervisor = builder.compile()

    state = await supervisor.ainvoke({"messages": [HumanMessage("What is the total of INV-7?")]})
    check_protocol(state["messages"])
    names = [(type(m).__name__, m.name) for m in state["messages"]]
    assert names == [("HumanMessage", None), ("AIMessage", "triage"), ("ToolMessage", "transfer_to_billing"),
                     ("AIMessage", "billing"), ("ToolMessage", "invoice_total"), ("AIMessage", "billing")]
    assert state["messages"][-1].content == "INV-7 totals 1,200 EUR."
    assert len(triage_model.calls) == 1  # the handoff ended the triage agent's run
    assert [type(m).__name__ for m in billing_model.calls[0]][-3:] == ["HumanMessage", "AIMessage", "ToolMessage"]


async def test_interrupt_after_maps_the_model_node_and_unknown_names_are_refused():
    model = ScriptedChatModel(responses=[calls(("add", {"a": 1, "b": 2}, "c1")), "3"])
    graph = create_react_graph(model, [add], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(), interrupt_after=["agent"])
    await graph.ainvoke({"messages": [HumanMessage("1+2")]}, thread("t"))
    snapshot = await graph.aget_state(thread("t"))
    assert snapshot.next == ("execute_tools",) and len(model.calls) == 1  # paused right after the model call
    with pytest.raises(ValueError, match="no node named 'planner'"):
        create_react_graph(model, [add], abilities=NATIVE_TOOLS_ONLY, interrupt_before=["planner"])


# ------------------------------------------------- a ToolNode as the tools; the custom stream


@tool
def flaky_gauge(gauge: str) -> str:
    """Read a pressure gauge (the gauge "P9" is broken)."""
    if gauge == "P9":
        raise ValueError("gauge P9 does not answer")
    return f"{gauge}: 4.1 bar"


def wrapped_node(seen: list[str]) -> ToolNode:
    """A ToolNode with its own error policy and wrap hooks that record each call and mark its result."""

    def wrap(request, execute):
        seen.append(f"sync {request.tool_call['name']}")
        result = execute(request)
        return result.model_copy(update={"content": f"[checked] {result.content}"})

    async def awrap(request, execute):
        seen.append(f"async {request.tool_call['name']}({request.tool_call['args']['gauge']})")
        result = await execute(request)
        return result.model_copy(update={"content": f"[checked] {result.content}"})

    return ToolNode([flaky_gauge], handle_tool_errors=lambda exc: f"gauge failure — {exc}",
                    wrap_tool_call=wrap, awrap_tool_call=awrap)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_tool_node_as_the_tools_brings_its_tools_error_policy_and_wrap_hooks(kind):
    seen: list[str] = []
    model = ScriptedChatModel(responses=[calls(("flaky_gauge", {"gauge": "P1"}, "g1"), ("flaky_gauge", {"gauge": "P9"}, "g2")),
                                         "P1 reads 4.1 bar; P9 is broken."])
    graph = build(kind, model, wrapped_node(seen))
    state = await graph.ainvoke({"messages": [HumanMessage("Lies die Manometer P1 und P9")]})
    results = {m.tool_call_id: m.content for m in state["messages"] if isinstance(m, ToolMessage)}
    assert results == {"g1": "[checked] P1: 4.1 bar", "g2": "[checked] gauge failure — gauge P9 does not answer"}
    assert sorted(seen) == ["async flaky_gauge(P1)", "async flaky_gauge(P9)"]  # the async hook, once per call
    assert state["messages"][-1].content.startswith("P1 reads 4.1 bar")


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_node_with_only_a_sync_hook_wraps_sync_runs(kind):
    seen: list[str] = []
    node = wrapped_node(seen)
    node._awrap_tool_call = None  # as if built with wrap_tool_call only
    model = ScriptedChatModel(responses=[calls(("flaky_gauge", {"gauge": "P1"}, "g1")), "P1 reads 4.1 bar."])
    state = build(kind, model, node).invoke({"messages": [HumanMessage("P1?")]})
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert result.content == "[checked] P1: 4.1 bar" and seen == ["sync flaky_gauge"]


def test_a_tool_node_at_langgraphs_default_error_policy_gets_the_engines():
    """Left at LangGraph's default (only invalid arguments answered), a tool's exception is an
    observation, as for any tool list (SPEC R2.7); the prebuilt raises it."""
    model = ScriptedChatModel(responses=[calls(("flaky_gauge", {"gauge": "P9"}, "g1")), "P9 is broken."])
    state = create_react_graph(model, ToolNode([flaky_gauge]), abilities=NATIVE_TOOLS_ONLY).invoke({"messages": [HumanMessage("P9?")]})
    [result] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert "gauge P9 does not answer" in result.content and result.status == "error"


@tool
def count_parts(bin_id: str) -> str:
    """Count the parts in a bin, reporting progress on the custom stream."""
    writer = get_stream_writer()
    writer({"progress": f"counting {bin_id}"})
    writer({"progress": "done"})
    return f"{bin_id}: 120 parts"


@pytest.mark.parametrize("kind", KINDS)
async def test_the_custom_stream_is_what_the_tools_write(kind):
    model = ScriptedChatModel(responses=[calls(("count_parts", {"bin_id": "B-7"}, "c1")), "B-7 holds 120 parts."])
    graph = build(kind, model, [count_parts])
    custom = [chunk async for chunk in graph.astream({"messages": [HumanMessage("Combien de pièces dans B-7 ?")]},
                                                     stream_mode="custom")]
    assert custom == [{"progress": "counting B-7"}, {"progress": "done"}]


async def test_the_engines_events_join_the_custom_stream_when_asked():
    from reactgraph.events import EVENTS_KEY, as_agent_event

    def model():
        return ScriptedChatModel(responses=[calls(("count_parts", {"bin_id": "B-7"}, "c1")), "B-7 holds 120 parts."])

    for graph, config in ((create_react_graph(model(), [count_parts], abilities=NATIVE_TOOLS_ONLY, custom_events=True), None),
                          (create_react_graph(model(), [count_parts], abilities=NATIVE_TOOLS_ONLY),
                           {"configurable": {EVENTS_KEY: True}})):
        custom = [chunk async for chunk in graph.astream({"messages": [HumanMessage("B-7?")]}, config,
                                                         stream_mode="custom")]
        events = [event for chunk in custom if (event := as_agent_event(chunk)) is not None]
        assert [chunk for chunk in custom if as_agent_event(chunk) is None] == [{"progress": "counting B-7"},
                                                                             {"progress": "done"}]
        assert {"step", "answer", "done"} - {event.channel for event in events} == {"done"}  # done: the facade's


async def test_the_agents_event_stream_keeps_the_engines_events_and_not_the_tools_writes():
    from reactgraph import ReActAgent

    model = ScriptedChatModel(responses=[calls(("count_parts", {"bin_id": "B-7"}, "c1")), "B-7 holds 120 parts."],
                              synthesis="B-7 holds **120** parts.")
    agent = ReActAgent(model, [count_parts], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(tool_selection=False))
    channels = [event.channel async for event in agent.astream_events("B-7?")]
    assert channels[-1] == "done" and "step" in channels and "answer" in channels
