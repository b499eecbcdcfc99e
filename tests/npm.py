"""npm packages for the tests that run real JavaScript programs: installed with
npm at test time into a cache directory, so CI (which reaches the npm registry and has
node) needs no step of its own. The MCP tests run server-everything's command
(:func:`npm_bin`); the AG-UI test imports ``@ag-ui/client`` from a script (:func:`npm_package`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def npm_cache_dir(fallback: Path) -> Path:
    """Where npm packages are installed: ``$REACTGRAPH_HOME/npm`` (kept between runs; CI sets
    it inside the work tree), else ``fallback`` (a test's temporary directory)."""
    home = os.environ.get("REACTGRAPH_HOME")
    return Path(home) / "npm" if home else fallback


def npm_package(package: str, version: str, cache: Path) -> Path:
    """The directory whose ``node_modules`` holds ``package@version``, installed under
    ``cache`` first if it is not there yet (a script finds it with
    ``createRequire(<directory>/package.json)``).

    Raises:
        AssertionError: node or npm is missing, or the install failed (the message has npm's
            last output lines).
    """
    prefix = cache / f"{package.replace('/', '__').lstrip('@')}-{version}"
    if (prefix / "node_modules" / package / "package.json").exists():
        return prefix
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), "the tests that run JavaScript need node and npm on PATH"
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                           f"{package}@{version}"], capture_output=True, text=True, timeout=600)
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-10:])
    assert done.returncode == 0 and (prefix / "node_modules" / package).is_dir(), \
        f"npm install {package}@{version} failed:\n{tail}"
    return prefix


def npm_bin(package: str, version: str, command: str, cache: Path) -> Path:
    """The path of ``command`` from ``package@version``, installed under ``cache`` first if
    it is not there yet.

    Raises:
        AssertionError: As :func:`npm_package`, or the package has no such command.
    """
    binary = npm_package(package, version, cache) / "node_modules" / ".bin" / command
    assert binary.exists(), f"{package}@{version} has no command {command!r}"
    return binary
