"""An npm package installed for the tests that drive a real JavaScript client (issue 19):
into a cache under ``$REACTGRAPH_HOME`` (``.reactgraph/`` in CI), once per version."""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
from pathlib import Path

from reactgraph._paths import data_home


def npm_package(name: str, version: str) -> Path:
    """Install ``name@version`` with npm (unless already there) and return the directory
    whose ``node_modules`` holds it (a ``package.json`` sits in it, for ``createRequire``).

    Concurrent callers wait on a file lock; a half-finished install is redone.

    Raises:
        RuntimeError: ``npm`` is missing or the install failed (its output's tail).
    """
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed: .ci/run installs Debian's nodejs and npm")
    directory = data_home() / "npm" / re.sub(r"[^A-Za-z0-9._-]", "_", f"{name}@{version}")
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / ".installed"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            (directory / "package.json").write_text(json.dumps({"name": "reactgraph-test-client", "private": True}))
            done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", f"{name}@{version}"],
                                  cwd=directory, capture_output=True, text=True, timeout=600, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"npm install {name}@{version} failed: {(done.stdout + done.stderr)[-2000:]}")
            marker.write_text(version)
    return directory
