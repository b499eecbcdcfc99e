"""The Studio graph factory (SPEC R10.2) without a server: run configuration from the
request's config, the model from the environment, the form as the graph's context schema."""

from __future__ import annotations

import asyncio
import json

import pytest

from reactgraph import ModelAbilities, create_react_graph
from reactgraph.demo import studio as studio_module
from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT
from reactgraph.demo.studio import STUDIO_MAX_ITERATIONS, StudioContext, context_from_config, studio_graph
from tests.helpers import REPO

STUDIO_DIR = REPO / "studio"


@pytest.fixture
def endpoint_env(monkeypatch):
    """An OpenAI-compatible endpoint in the environment (nothing is sent to it)."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REACTGRAPH_MODEL", "env-model")
    monkeypatch.delenv("REACTGRAPH_TOOL_CALL", raising=False)
    studio_module._endpoint_model.cache_clear()
    yield
    studio_module._endpoint_model.cache_clear()


def recording_builder(calls):
    def build(llm, tools, **options):
        calls.append((llm, tools, options))
        return create_react_graph(llm, tools, **options)

    return build


def test_context_defaults_and_validation():
    assert context_from_config(None) == StudioContext("", "auto", STUDIO_MAX_ITERATIONS, True)
    read = context_from_config({"configurable": {"mode": "json", "max_iterations": 3, "tool_selection": False,
                                                 "thread_id": "t", "model": "m"}})
    assert read == StudioContext("m", "json", 3, False)
    with pytest.raises(ValueError, match="mode"):
        context_from_config({"configurable": {"mode": "fast"}})
    with pytest.raises(ValueError, match="max_iterations"):
        context_from_config({"configurable": {"max_iterations": 0}})


def test_factory_builds_the_demo_graph_with_the_run_configuration(endpoint_env):
    calls = []
    factory = studio_graph(recording_builder(calls))
    graph = asyncio.run(factory({"configurable": {"mode": "json", "max_iterations": 3, "tool_selection": False}}))
    llm, tools, options = calls[0]
    assert llm.model_name == "env-model" and len(tools) == 24
    assert options["use_native_tools"] is False
    settings = options["settings"]
    assert (settings.max_iterations, settings.tool_selection, settings.system_prompt) == (3, False, DEMO_SYSTEM_PROMPT)
    assert graph.context_schema is StudioContext
    form = graph.get_context_jsonschema()["properties"]
    assert form["mode"]["enum"] == ["auto", "native", "json"] and form["max_iterations"]["default"] == STUDIO_MAX_ITERATIONS
    assert graph.config["recursion_limit"] == settings.recursion_limit
    asyncio.run(factory({"configurable": {"model": "other"}}))
    assert calls[1][0].model_name == "other" and calls[1][2]["use_native_tools"] is True


def test_native_mode_declares_tool_calling(endpoint_env):
    calls = []
    asyncio.run(studio_graph(recording_builder(calls))({"configurable": {"mode": "native"}}))
    assert calls[0][2]["abilities"] == {"tool_call": True}


def test_schema_reads_do_not_start_the_embedded_model(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "REACTGRAPH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    studio_module._endpoint_model.cache_clear()
    embedded = studio_module._EmbeddedModel()
    monkeypatch.setattr(studio_module, "_embedded", embedded)
    calls = []
    asyncio.run(studio_graph(recording_builder(calls))({"configurable": {"__is_for_execution__": False}}))
    assert embedded._server is not None and not embedded._server.running
    abilities = calls[0][2]["abilities"]  # the embedded model's: JSON mode with the action schema
    assert isinstance(abilities, ModelAbilities) and not abilities.tool_call
    assert abilities.schema_output == "json_object_schema"


def test_langgraph_json_points_at_the_factories():
    config = json.loads((STUDIO_DIR / "langgraph.json").read_text())
    assert config["graphs"] == {"react": "./graphs.py:react", "dag": "./graphs.py:dag"}
    assert config["dependencies"] == [".."]
    source = (STUDIO_DIR / "graphs.py").read_text()
    assert "react = studio_graph(create_react_graph)" in source and "dag = studio_graph(dag_graph)" in source


def test_the_dag_graph_serves_the_form_with_the_run_model_as_general(endpoint_env, monkeypatch):
    import importlib.util

    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    monkeypatch.setenv("REACTGRAPH_MODEL_FAST", "fast-model")
    spec = importlib.util.spec_from_file_location("studio_graphs", STUDIO_DIR / "graphs.py")
    graphs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graphs)
    registries = []
    real_create = graphs.create_dag_graph

    def recording_create(models, tools, **options):
        registries.append(models)
        return real_create(models, tools, **options)

    monkeypatch.setattr(graphs, "create_dag_graph", recording_create)
    graph = asyncio.run(graphs.dag({"configurable": {"model": "form-model", "max_iterations": 2}}))
    assert graph.context_schema is StudioContext
    assert {"plan", "run_step", "analyze", "synthesize"} <= set(graph.get_graph().nodes)
    registry = registries[0]
    assert registry.get("general").llm.model_name == "form-model"
    assert registry.resolve("fast").llm.model_name == "fast-model"
