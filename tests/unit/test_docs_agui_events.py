"""The Python examples of docs/events.md and docs/agui.md run as written (issue 19: every
example in the docs is executed by a test), against scripted models."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent.parent / "docs"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", ["events.md", "agui.md"])
def test_the_python_examples_run(page, capsys):
    blocks = PYTHON_BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no Python example"
    for block in blocks:
        exec(compile(block, f"docs/{page}", "exec"), {"__name__": "__docs__"})  # noqa: S102 - our own docs
    printed = capsys.readouterr().out
    assert {"events.md": "-> machine_status", "agui.md": "RUN_FINISHED"}[page] in printed
