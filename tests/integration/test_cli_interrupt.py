"""Ctrl-C during ``reactgraph run``: the command stops with status 130 and says
how to go on — ``reactgraph resume ID`` finishes the run, which then does."""

from __future__ import annotations

import signal

from tests.integration.test_cli_approval import Terminal

SLOW = {"by_message": {"tool": "get_equipment_status", "arg": "equipment_id"}, "delay": 60}
QUICK = {"by_message": {"tool": "get_equipment_status", "arg": "equipment_id"}}


def test_ctrl_c_says_how_to_resume_and_resume_finishes_the_run(tmp_path):
    terminal = Terminal(tmp_path, "run", "CNC-003 상태", "--thread", "cli-c", script=SLOW)
    terminal.expect("thinking (iteration 1)")  # the model is asked (and sleeps): the run is under way
    terminal.process.send_signal(signal.SIGINT)  # what Ctrl-C on the terminal sends
    assert terminal.finish() == 130, terminal.output
    assert ("reactgraph: interrupted; the thread is kept: reactgraph resume cli-c finishes this run, "
            'reactgraph run --thread cli-c "…" asks a new question in it') in terminal.output
    again = Terminal(tmp_path, "resume", "cli-c", script=QUICK)
    assert again.finish() == 0, again.output
    assert "resuming thread cli-c" in again.output and "✓ get_equipment_status" in again.output
