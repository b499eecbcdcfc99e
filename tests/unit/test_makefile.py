"""``make demo``: its ``.venv`` holds the server extra, so the README's whole tour
(the demo question, then ``.venv/bin/reactgraph serve``) runs in it, and the package is
installed again only when ``pyproject.toml`` changes. Checked with GNU make's dry run
(``make -n``) on a stand-in ``.venv``, so nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def dry_run(target: str, venv: Path) -> list[str]:
    make = shutil.which("make")
    if make is None:
        pytest.fail("GNU make is needed (apt-get install make)")
    done = subprocess.run([make, "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.splitlines()


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A stand-in ``.venv`` whose ``bin/python`` exists and is newer than nothing else."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    return tmp_path / "venv"


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if "pip install" in line]


def test_make_demo_installs_the_server_extra_once(venv):
    first = dry_run("demo", venv)
    [install] = installs(first)
    assert '-e ".[local,server]"' in install  # `.venv/bin/reactgraph serve` needs [server]
    assert any(line.startswith(f"{venv}/bin/reactgraph run ") for line in first)
    stamp = venv / ".installed-local+server"
    stamp.write_text("")
    newer = (ROOT / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (newer, newer))
    again = dry_run("demo", venv)
    assert installs(again) == [] and any("reactgraph run" in line for line in again)  # no reinstall
    older = (ROOT / "pyproject.toml").stat().st_mtime - 10
    os.utime(stamp, (older, older))
    assert len(installs(dry_run("demo", venv))) == 1  # pyproject.toml changed: installed again


def test_make_test_installs_its_own_extras(venv):
    [install] = installs(dry_run("test", venv))
    assert '-e ".[local,dev,postgres]"' in install
