"""The command line a newcomer meets: ``--version``, bare ``reactgraph`` printing
its help, one name per option in every command (the former ``--db-url`` kept as a hidden
alias of ``--checkpoints``), ``serve --help`` telling the model's key from the server's, and
``--local-threads`` for the embedded model (default: :func:`default_threads`)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from importlib.metadata import version

import pytest

import reactgraph.demo.factory
import reactgraph.models
from reactgraph import ModelAbilities
from reactgraph.cli.main import main
from reactgraph.cli.options import build_parser
from reactgraph.models import ResolvedModel
from reactgraph.models.catalog import ENV_LOCAL_THREADS
from reactgraph.models.local import LocalModelServer, default_threads
from reactgraph.testing import ScriptedChatModel


def test_version_and_bare_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"reactgraph {version('reactgraph')}"
    assert main([]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("usage: reactgraph") and err == ""
    for command in ("run", "resume", "serve", "--version"):
        assert command in out


def options(command: str) -> set[str]:
    """The option strings ``reactgraph COMMAND --help`` shows."""
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    parser = subparsers.choices[command]
    return {string for action in parser._actions if action.help != "==SUPPRESS=="
            for string in action.option_strings}


def test_every_command_names_its_shared_options_alike():
    shared = {"--model", "--base-url", "--api-key", "--json-mode", "--local-model", "--local-threads", "--max-iterations", "--db", "--mcp",
              "--checkpoints"}
    for command in ("run", "resume", "serve"):
        assert shared <= options(command), command
        assert "--db-url" not in options(command)  # a hidden alias, not shown
    parser = build_parser()
    for command in (["run", "q"], ["resume", "t"], ["serve"]):
        old = parser.parse_args([*command, "--db-url", "x.db"])
        new = parser.parse_args([*command, "--checkpoints", "x.db"])
        assert old.checkpoints == new.checkpoints == "x.db"


def test_serve_help_tells_the_model_key_from_the_servers(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--api-key API_KEY the model endpoint's API key (default: $OPENAI_API_KEY)" in text
    assert "unless $REACTGRAPH_API_KEY is set: then every client must send it as a bearer token" in text
    assert text.count("API key") == 1


def test_threads_reach_the_embedded_model(monkeypatch, tools, tmp_path, capsys):
    seen: dict[str, object] = {}

    @asynccontextmanager
    async def scripted_model(**options):
        seen.update(options)
        yield ResolvedModel(ScriptedChatModel(responses=["CNC-003 is normal."]), ModelAbilities(tool_call=True), "s")

    monkeypatch.setattr(reactgraph.models, "open_model", scripted_model)
    monkeypatch.setattr(reactgraph.demo.factory, "build_factory_hub", lambda _db=None: tools)
    assert main(["run", "CNC-003?", "--local-threads", "3", "--checkpoints", str(tmp_path / "c.db")]) == 0
    assert seen["local_threads"] == 3
    assert main(["run", "CNC-003?", "--checkpoints", str(tmp_path / "c.db")]) == 0
    assert seen["local_threads"] is None  # the server then takes $REACTGRAPH_LOCAL_THREADS, else default_threads()
    with pytest.raises(SystemExit):
        main(["run", "q", "--local-threads", "0"])
    assert "--local-threads: must be at least 1" in capsys.readouterr().err


def test_the_default_thread_count_leaves_a_core_free_and_the_environment_overrides_it(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    assert default_threads() == 1
    assert LocalModelServer(command=["true"]).n_threads == 1
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0})
    assert default_threads() == 1
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(8)))
    assert default_threads() == 7
    monkeypatch.setenv(ENV_LOCAL_THREADS, "5")
    assert LocalModelServer(command=["true"]).n_threads == 5
    monkeypatch.setenv(ENV_LOCAL_THREADS, "zero")
    with pytest.raises(ValueError, match=ENV_LOCAL_THREADS):
        LocalModelServer(command=["true"])


async def test_the_answer_is_rendered_as_markdown_on_a_terminal_and_kept_raw_in_a_pipe():
    """What a person sees of an observation answer: on a terminal its list and table
    are drawn, not shown as ``**`` and ``|---|``; piped, the text is passed on as written."""
    from rich.console import Console

    from reactgraph.cli.view import print_events
    from reactgraph.events import AnswerDelta, AnswerDone, AnswerStarted

    answer = ("CNC-003에 대해 도구가 조회한 결과입니다.\n\n- **State**: warning\n\n"
              "| id | state |\n|---|---|\n| CNC-001 | normal |\n| CNC-003 | warning |\n")

    async def events():
        yield AnswerStarted()
        yield AnswerDelta(content=answer[:40])
        yield AnswerDelta(content=answer[40:])
        yield AnswerDone()

    terminal = Console(record=True, width=80, force_terminal=True)
    await print_events(terminal, events())
    shown = terminal.export_text()
    assert "State: warning" in shown and "**" not in shown and "|---|" not in shown
    assert "CNC-003" in shown and "warning" in shown and "─" in shown  # the table is drawn
    pipe = Console(record=True, width=80, force_terminal=False)
    await print_events(pipe, events())
    assert answer.strip() in pipe.export_text()
