"""The command on a terminal as a newcomer meets it: a streamed answer on an 80-column
pseudo-terminal wraps instead of being cut at the edge, and ``--approve`` /
``$REACTGRAPH_APPROVE`` turn a person's approval on for a tool from the command line
(SPEC R13.3), with a footer in plain words."""

from __future__ import annotations

import re

import pytest

from tests.integration.test_cli_approval import Terminal

pytestmark = pytest.mark.integration  # the CLI in child processes on a pseudo-terminal

ITEMS = [
    "limits: the vibration of 4.2 mm/s is above the 2.8 mm/s warning limit and has been rising since Monday",
    "Lager: das Spindellager wurde zuletzt vor 412 Tagen ersetzt, länger als das Intervall von 365 Tagen",
]
STATUS = {"selection": ["get_equipment_status"],
          "responses": [{"tool_calls": [["get_equipment_status", {"equipment_id": "CNC-003"}, "s1"]]}, "Done."]}


def screen_lines(output: str) -> list[str]:
    """The terminal's lines, escape sequences and carriage returns removed."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)
    return [line.rstrip() for line in plain.replace("\r", "").split("\n")]


def test_a_streamed_list_answer_wraps_on_an_80_column_terminal(tmp_path):
    script = {**STATUS, "synthesis": "CNC-003 needs attention:\n\n" + "".join(f"- {item}\n" for item in ITEMS)}
    terminal = Terminal(tmp_path, "run", "Check CNC-003", script=script, columns=80)
    assert terminal.finish() == 0
    lines = screen_lines(terminal.output)
    begin = next(index for index, line in enumerate(lines) if " answer " in line and line.startswith("─"))
    answer = lines[begin + 1:next(index for index in range(begin + 1, len(lines)) if lines[index].startswith("──"))]
    assert all(len(line) <= 80 for line in answer), [line for line in answer if len(line) > 80]
    start = next(index for index, line in enumerate(answer) if line.lstrip().startswith("• limits:"))
    shown = " ".join(line.strip() for line in answer[start:])
    for item in ITEMS:  # every word of each item is on the screen, in order, across its wrapped lines
        assert " ".join(item.split()) in shown.replace("• ", ""), shown


def test_approve_on_the_command_line_asks_before_the_named_tool_runs(tmp_path):
    terminal = Terminal(tmp_path, "run", "Check CNC-003", "--approve", "list_equipment,get_equipment_status",
                        script=STATUS)
    terminal.expect("you approve each call of list_equipment, get_equipment_status")  # the banner says so
    terminal.expect("? approve get_equipment_status")
    assert "✓ get_equipment_status" not in terminal.output  # nothing ran before the decision
    terminal.expect("[a]pprove, [e]dit arguments, [r]eject?")
    terminal.send("a")
    assert terminal.finish() == 0
    assert "✓ get_equipment_status" in terminal.output
    assert re.search(r"Answered in \d+\.\d s · 2 steps · ", terminal.output)


def test_the_environment_variable_turns_approval_on(tmp_path, monkeypatch):
    monkeypatch.setenv("REACTGRAPH_APPROVE", "get_equipment_status")
    terminal = Terminal(tmp_path, "run", "Check CNC-003", "--approve-all", script=STATUS)
    assert terminal.finish() == 0
    assert "? approve get_equipment_status" in terminal.output
    assert "approved (--approve-all)" in terminal.output


def test_approve_naming_no_tool_is_a_one_line_error(tmp_path):
    terminal = Terminal(tmp_path, "run", "Check CNC-003", "--approve", "get_equipment_stats", script=STATUS)
    assert terminal.finish() == 2
    assert "--approve / $REACTGRAPH_APPROVE names no tool: get_equipment_stats" in terminal.output
