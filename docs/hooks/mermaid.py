"""mkdocs hook: the site draws its mermaid diagrams offline (point 7).

Material for MkDocs renders ``mermaid`` blocks with mermaid.js, which it loads from a CDN
unless a ``mermaid`` object is already on the page. This hook puts one there: the pinned
mermaid release's ``dist/mermaid.min.js`` is copied into the built site and listed in
``extra_javascript``, so a site opened without a network (or behind a firewall) draws its
graphs and asks no other host for anything.

Where the file comes from, first found wins:

- ``$REACTGRAPH_MERMAID_JS``: a ``mermaid.min.js`` already on disk (an offline build);
- ``<data home>/docs/mermaid-<version>.min.js``, kept from an earlier build;
- the npm registry, through ``npm pack mermaid@<version>`` (node and npm needed once): the
  package's integrity is checked against :data:`INTEGRITY` before the file is kept.

A build that can get it from none of these fails with a message saying so.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from reactgraph.core.paths import data_home

VERSION = "11.12.2"
"""The mermaid release (Material 9's mermaid support expects mermaid 11)."""

INTEGRITY = "sha512-n34QPDPEKmaeCG4WDMGy0OT6PSyxKCfy2pJgShP+Qow2KLrvWjclwbc3yXfSIf4BanqWEhQEpngWwNp/XhZt6w=="
"""The npm registry's integrity of ``mermaid-<VERSION>.tgz``."""

SITE_PATH = "assets/javascripts/mermaid.min.js"
"""Where the file goes in the built site."""

ENV = "REACTGRAPH_MERMAID_JS"
"""A ``mermaid.min.js`` to use instead of the cached or downloaded one."""


def _download(target: Path) -> None:
    """``npm pack`` the pinned release, check its integrity, keep ``dist/mermaid.min.js`` at ``target``."""
    npm = shutil.which("npm")
    if npm is None:
        raise PluginError(f"the docs' diagrams need mermaid.js {VERSION}: install node and npm (the build fetches it "
                          f"once), or set ${ENV} to a mermaid.min.js file")
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([npm, "pack", f"mermaid@{VERSION}", "--pack-destination", scratch, "--silent"],
                              capture_output=True, text=True, timeout=600)
        tarball = Path(scratch) / f"mermaid-{VERSION}.tgz"
        if done.returncode != 0 or not tarball.exists():
            raise PluginError(f"npm pack mermaid@{VERSION} failed: {(done.stderr or done.stdout).strip()[-500:]}")
        digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
        if digest != INTEGRITY:
            raise PluginError(f"mermaid-{VERSION}.tgz has integrity {digest}, expected {INTEGRITY}")
        with tarfile.open(tarball) as archive:
            source = archive.extractfile("package/dist/mermaid.min.js")
            assert source is not None
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            partial.write_bytes(source.read())
            partial.replace(target)


def mermaid_js() -> Path:
    """The ``mermaid.min.js`` the site bundles (see the module docstring for where it comes from).

    Raises:
        PluginError: ``$REACTGRAPH_MERMAID_JS`` names no file, or the file can be neither
            found nor fetched.
    """
    given = os.environ.get(ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise PluginError(f"${ENV} names no file: {given}")
        return path
    cached = data_home() / "docs" / f"mermaid-{VERSION}.min.js"
    if not cached.exists():
        _download(cached)
    return cached


def on_config(config: Any) -> Any:
    """mkdocs event: list the bundled file as a script of every page (after Material's
    bundle, before the page's diagrams are drawn)."""
    mermaid_js()  # fail at the start of the build, not after it
    if SITE_PATH not in [str(script) for script in config.extra_javascript]:
        config.extra_javascript.append(SITE_PATH)
    return config


def on_post_build(config: Any) -> None:
    """mkdocs event: copy the file into the built site."""
    target = Path(config.site_dir) / SITE_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mermaid_js(), target)
