"""Python command-line tools the tests run in a process of their own, installed with pip at
test time into a cache directory beside the npm packages (:mod:`tests.npm`), not into the
project's environment: schemathesis needs versions of its dependencies
(``jsonschema-rs``) that the ``[dev]`` extra's ``langgraph-api`` refuses, and the
schemathesis release that fits those is broken on this Hypothesis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def tools_cache_dir(fallback: Path) -> Path:
    """Where the tools are installed: ``$REACTGRAPH_HOME/pytools`` (kept between runs), else
    ``fallback`` (a test's temporary directory)."""
    home = os.environ.get("REACTGRAPH_HOME")
    return Path(home) / "pytools" if home else fallback


def python_tool(package: str, version: str, cache: Path) -> dict[str, str]:
    """The environment that runs ``package==version`` with this interpreter
    (``sys.executable -m <module>``): its own directory, installed under ``cache`` with
    ``pip install --target`` first if it is not there yet, ahead of everything else on
    ``PYTHONPATH``.

    Raises:
        AssertionError: The install failed (the message has pip's last output lines).
    """
    target = cache / f"{package}-{version}"
    marker = target / ".installed"
    if not marker.exists():
        target.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--upgrade", "--target", str(target), f"{package}=={version}"],
                              capture_output=True, text=True, timeout=900)
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-10:])
        assert done.returncode == 0, f"pip install {package}=={version} failed:\n{tail}"
        marker.touch()
    return {**os.environ, "PYTHONPATH": str(target), "PYTHONNOUSERSITE": "1"}
