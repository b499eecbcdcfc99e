"""``reactgraph run`` asks a person about tool calls that need approval (SPEC
R13.3): driven through a pseudo-terminal, with the demo plant's real ``create_work_order``
(approval required by default) and a SQLite checkpoint file; ``--approve-all`` for scripts."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration  # the CLI in child processes on a pseudo-terminal

ROOT = Path(__file__).resolve().parents[2]
ORDER = {"equipment_id": "CNC-003", "description": "Replace the spindle bearing", "priority": "normal"}
SCRIPT = {
    "responses": [
        {"tool_calls": [["select_tools", {"tools": ["create_work_order", "get_equipment_status"]}, "sel"]]},
        {"tool_calls": [["get_equipment_status", {"equipment_id": "CNC-003"}, "s1"], ["create_work_order", ORDER, "w1"]]},
        "Done.",
    ],
    "synthesis": "Handled the work order request for CNC-003.",
}


class Terminal:
    """The CLI in a child process whose standard streams are a pseudo-terminal ``columns`` wide,
    with the seed's two phases (``$REACTGRAPH_SYNTHESIS=always``: the scripts' ``synthesis`` is
    the answer shown)."""

    def __init__(self, tmp_path: Path, *args: str, script: dict[str, Any] = SCRIPT, columns: int = 200) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = {**os.environ, "REACTGRAPH_HOME": str(tmp_path), "COLUMNS": str(columns), "TERM": "dumb",
               "REACTGRAPH_SYNTHESIS": "always"}
        env.pop("REACTGRAPH_DATABASE_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.scripted_cli", json.dumps(script), *args,
             "--db", str(tmp_path / "factory.db"), "--db-url", str(tmp_path / "checkpoints.db")],
            stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env, close_fds=True,
            # Ctrl-C reaches the CLI as on a terminal even when the test runner was started in the
            # background by a shell, whose children inherit SIGINT ignored.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        os.close(slave)
        self.master = master
        self.output = ""

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Read until ``text`` appears; returns everything read so far."""
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert time.monotonic() < deadline, f"no {text!r} in:\n{self.output}"
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.output += os.read(self.master, 4096).decode("utf-8", "replace")
                except OSError:  # the child closed the terminal
                    assert text in self.output, f"no {text!r} in:\n{self.output}"
        return self.output

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self, timeout: float = 60.0) -> int:
        """Read what is left and wait for the exit status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                self.output += chunk.decode("utf-8", "replace")
            elif self.process.poll() is not None:
                break
        os.close(self.master)
        return self.process.wait(timeout=30)  # the exit itself (settling the thread) on a loaded CI machine


def orders(tmp_path: Path) -> list[tuple]:
    con = sqlite3.connect(tmp_path / "factory.db")
    try:
        return [tuple(row[:4]) for row in con.execute("SELECT * FROM work_order_requests ORDER BY wo_id")]
    except sqlite3.OperationalError:  # the table is made by the first write
        return []
    finally:
        con.close()


def test_edit_on_the_terminal_runs_the_call_with_the_new_arguments(tmp_path):
    terminal = Terminal(tmp_path, "run", "Check CNC-003 and open a work order", "--thread", "cli-a")
    terminal.expect("[a]pprove, [e]dit arguments, [r]eject?")
    assert "waiting for approval of 1 tool call(s)" in terminal.output and "create_work_order" in terminal.output
    assert "✓ get_equipment_status" in terminal.output  # the other call of the batch ran meanwhile
    assert orders(tmp_path) == []
    terminal.send("e")
    terminal.expect("new arguments as a JSON object:")
    terminal.send("not json")
    terminal.expect("not JSON")
    terminal.send(json.dumps({**ORDER, "priority": "urgent"}))
    assert terminal.finish() == 0, terminal.output
    assert "Created work order WO-R0001 for CNC-003" in terminal.output
    assert "Handled the work order request for CNC-003." in terminal.output
    assert orders(tmp_path) == [("WO-R0001", "CNC-003", "urgent", "Replace the spindle bearing")]


def test_reject_on_the_terminal_tells_the_agent_and_writes_nothing(tmp_path):
    terminal = Terminal(tmp_path, "run", "Open a work order for CNC-003", "--thread", "cli-r")
    terminal.expect("[a]pprove, [e]dit arguments, [r]eject?")
    terminal.send("r")
    terminal.expect("message for the agent")
    terminal.send("Already scheduled for Friday.")
    assert terminal.finish() == 0, terminal.output
    assert "Already scheduled for Friday." in terminal.output  # the card shows the observation
    assert orders(tmp_path) == []


def test_a_rejected_call_asked_again_is_not_put_to_the_person_twice(tmp_path):
    """the model repeats the rejected call; the terminal asks once, shows the call
    as rejected (never as started with ▶) and the repeat as answered by that rejection, and
    prints no footer for the pause."""
    script = {"responses": [SCRIPT["responses"][0], {"tool_calls": [["create_work_order", ORDER, "w1"]]},
                            {"tool_calls": [["create_work_order", ORDER, "w2"]]}, "Not created."],
              "synthesis": "The work order was not created: it is already scheduled."}
    terminal = Terminal(tmp_path, "run", "Open a work order for CNC-003", "--thread", "cli-rr", script=script)
    terminal.expect("[a]pprove, [e]dit arguments, [r]eject?")
    assert "finish: waiting" not in terminal.output
    terminal.send("r")
    terminal.expect("message for the agent")
    terminal.send("Already scheduled for Friday.")
    assert terminal.finish() == 0, terminal.output
    assert terminal.output.count("[a]pprove, [e]dit arguments, [r]eject?") == 1
    assert "⊘ create_work_order rejected" in terminal.output and "Already scheduled for Friday." in terminal.output
    assert "asked again: rejected before, so the same rejection" in terminal.output
    assert "▶ create_work_order" not in terminal.output and "finish: waiting" not in terminal.output
    assert "The work order was not created" in terminal.output
    assert orders(tmp_path) == []


def test_end_of_input_leaves_the_run_waiting_and_resume_asks_again(tmp_path):
    terminal = Terminal(tmp_path, "run", "Open a work order for CNC-003", "--thread", "cli-w")
    terminal.expect("[a]pprove, [e]dit arguments, [r]eject?")
    os.write(terminal.master, b"\x04")  # Ctrl-D: end of input
    assert terminal.finish() == 1
    assert "decide with: reactgraph resume cli-w" in terminal.output
    again = Terminal(tmp_path, "resume", "cli-w")
    again.expect("[a]pprove, [e]dit arguments, [r]eject?")
    again.send("a")
    assert again.finish() == 0, again.output
    assert [row[:3] for row in orders(tmp_path)] == [("WO-R0001", "CNC-003", "normal")]


def test_approve_all_needs_no_terminal(tmp_path):
    env = {**os.environ, "REACTGRAPH_HOME": str(tmp_path)}
    env.pop("REACTGRAPH_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.scripted_cli", json.dumps(SCRIPT), "run", "Open a work order", "--approve-all",
         "--db", str(tmp_path / "factory.db"), "--db-url", str(tmp_path / "checkpoints.db")],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "approved (--approve-all)" in done.stdout
    assert [row[:3] for row in orders(tmp_path)] == [("WO-R0001", "CNC-003", "normal")]

