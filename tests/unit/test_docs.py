"""The documentation (point 4): README.md and the pages under docs/.

- Every fenced ``python`` block of README.md and docs/*.md runs, in page order, against the
  scripted models of :mod:`reactgraph.testing` (offline, in well under a second each). The
  blocks of one page share one namespace and one event loop, like cells of a notebook, so a
  page sets up its model and tools once; a block may ``await`` at top level. A block opts out
  only with ``<!-- docs-test: skip REASON -->`` on the line before it (e.g. it starts the
  embedded model), and the reason is required. A ``print(...)`` whose comment is ``# → OUTPUT``
  must print OUTPUT (``...`` in it stands for any text).
- The README's examples keep their promises: the library example prints its step and the
  streamed answer, and the app of the server example answers the request of the README's
  ``curl`` line with a stream of events ending in ``done``.
- Every ``reactgraph …`` command line of a shell block parses with the real command-line
  parser, and every ``make TARGET`` names a target of the Makefile.
- ``mkdocs build --strict`` passes (any warning fails: a broken link or anchor, a page left out
  of the nav), and the pages that draw the compiled graphs show the nodes of the graphs as
  they are compiled today (``tests/unit/data/graph_shapes.json``).
- Every relative link of README.md resolves to a file of the repository.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import json
import re
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SKIP_MARKER = re.compile(r"<!--\s*docs-test:\s*skip\b\s*(?P<reason>.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
SHELL_LANGUAGES = {"sh", "shell", "bash", "console"}
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclass
class Block:
    """One fenced code block of a markdown file: its language (the info string's first word),
    its text (the fence's indentation removed), the line its fence opens on (1-based, so the
    text starts on the next one), and the reason of its skip marker (``None`` when it has none)."""

    language: str
    source: str
    line: int
    skip: str | None


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a markdown text, in order (nested fences are not read)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marker = SKIP_MARKER.search(previous)
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            line = lines[index]
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())
            index += 1
        language = (opening["info"].split() or [""])[0].lower()
        blocks.append(Block(language, "\n".join(body) + "\n", index - len(body), marker["reason"] if marker else None))
        index += 1
    return blocks


def run_python_blocks(blocks: list[Block], where: str, namespace: dict | None = None) -> int:
    """Run the python blocks in order in one namespace and one event loop; returns how many ran.
    A block with a top-level ``await`` runs as a coroutine on the loop, any other as a plain
    script (so it may call ``asyncio.run`` itself). Raises what a block raises. Pass
    ``namespace`` to look at what the blocks defined afterwards (e.g. a server's ``app``)."""
    namespace = {"__name__": "__docs__"} if namespace is None else namespace
    namespace.setdefault("__name__", "__docs__")
    loop = asyncio.new_event_loop()
    ran = 0
    try:
        for block in blocks:
            if block.language != "python" or block.skip is not None:
                continue
            # Blank lines in front keep the page's line numbers in tracebacks.
            code = compile("\n" * block.line + block.source, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            if code.co_flags & inspect.CO_COROUTINE:
                loop.run_until_complete(eval(code, namespace))
            else:
                exec(code, namespace)
            ran += 1
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return ran


def pages_with_examples() -> list[Path]:
    """The pages with at least one python block that runs (not marked skip)."""
    return [page for page in PAGES
            if any(b.language == "python" and b.skip is None for b in fenced_blocks(page.read_text()))]


@pytest.fixture
def docs_environment(tmp_path, monkeypatch):
    """Examples write their files (the demo plant's database, checkpoints) under a fresh data
    directory and never reach the network: a socket that tries to connect anywhere fails."""

    def offline(sock, address):
        raise OSError(f"the docs' examples run offline; one tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", offline)
    monkeypatch.setattr(socket.socket, "connect_ex", offline)
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path / "home"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REACTGRAPH_MODEL", "REACTGRAPH_DATABASE_URL", "REACTGRAPH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


PRINTED = re.compile(r"^\s*print\(.*#\s*→\s*(?P<output>.+?)\s*$")
"""A ``print(...)`` line whose comment ``# → OUTPUT`` shows what it prints."""


def shown_outputs(blocks: list[Block]) -> list[str]:
    """What the ``# → …`` comments of the python blocks that run say their prints print."""
    return [match["output"] for b in blocks if b.language == "python" and b.skip is None
            for line in b.source.splitlines() if (match := PRINTED.match(line))]


def printed(shown: str, output: str) -> bool:
    """True when ``output`` has a line holding ``shown`` (``...`` in it stands for anything)."""
    pattern = ".*?".join(re.escape(part.strip()) for part in shown.split("..."))
    return any(re.search(pattern, line) for line in output.splitlines())


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_python_example_runs(page, docs_environment, capsys):
    """Each page's python examples run as written, in order, on scripted models, and print
    what their ``# → …`` comments show."""
    blocks = fenced_blocks(page.read_text())
    ran = run_python_blocks(blocks, page.relative_to(ROOT).as_posix())
    assert ran == sum(1 for b in blocks if b.language == "python" and b.skip is None) > 0
    output = capsys.readouterr().out
    missing = [shown for shown in shown_outputs(blocks) if not printed(shown, output)]
    assert not missing, f"{page.name} shows output its examples do not print: {missing}\n--- printed:\n{output}"


def test_the_shown_outputs_are_checked():
    """The docs show printed output on several pages, and the check fails on output that is
    not printed (a number gone stale, a wrong word), with ``...`` matching the rest of a line."""
    assert len([s for page in PAGES for s in shown_outputs(fenced_blocks(page.read_text()))]) >= 5
    (shown,) = shown_outputs(fenced_blocks("```python\nprint(f(x))   # → summary 6074 → 667\n```\n"))
    assert shown == "summary 6074 → 667" and printed(shown, "summary 6074 → 667\n")
    assert not printed(shown, "summary 6074 → 666\n")
    assert printed("{'max': 1, ...}", "{'max': 1, 'used': 1}") and not printed("{'max': 2, ...}", "{'max': 1}")


def page_namespace(page: Path) -> dict:
    """What the python examples of a page leave defined, after running them in order."""
    namespace: dict = {}
    run_python_blocks(fenced_blocks(page.read_text()), page.relative_to(ROOT).as_posix(), namespace)
    return namespace


def curl_request(words: list[str]) -> tuple[str, str, dict[str, str], str | None]:
    """The request a ``curl`` command line sends: ``(method, path, headers, body)``."""
    method, path, headers, body = "GET", "", {}, None
    rest = iter(words[1:])
    for word in rest:
        if word == "-X":
            method = next(rest)
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data"):
            body = next(rest)
            method = "POST" if method == "GET" else method
        elif not word.startswith("-"):
            path = "/" + word.split("://", 1)[-1].split("/", 1)[1]
    return method, path, headers, body


def test_the_readme_library_example_prints_the_steps_and_the_streamed_answer(docs_environment, capsys):
    """The README's library example prints its tool step, then the answer its model streams
    (the ``synthesis`` of the scripted model), then the counts."""
    page_namespace(ROOT / "README.md")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "get_equipment_status {'equipment_id': 'CNC-003'} CNC-003: running, spindle temperature 61 °C"
    assert lines[1] == "**CNC-003** is running normally (spindle 61 °C)."
    assert re.fullmatch(r" 2 iterations, \d+ tokens", lines[2])


def test_the_readme_server_example_serves_its_curl_request(docs_environment):
    """The app the README's server example builds answers the README's ``curl`` request (sent
    twice: every run, not only the first): a stream of server-sent events whose ``answer``
    deltas are the model's answer and whose last event is ``done``. Without the scripted
    model's native profile the first run ended with "scripted model ran out of responses"."""
    from fastapi.testclient import TestClient

    from tests.serving import parse_sse

    readme = (ROOT / "README.md").read_text()
    (curl,) = [words for b in fenced_blocks(readme) if b.language in SHELL_LANGUAGES
               for words in shell_commands(b.source) if words[0] == "curl"]
    method, path, headers, body = curl_request(curl)
    assert (method, path) == ("POST", "/threads/chat-1/runs") and body is not None
    app = page_namespace(ROOT / "README.md")["app"]
    with TestClient(app) as client:
        for _ in range(2):
            response = client.request(method, path, headers=headers, content=body)
            assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
            events = parse_sse(response.text)
            assert [channel for channel, _ in events if channel == "error"] == []
            channel, done = events[-1]
            assert channel == "done" and done["finish_reason"] == "final_answer"
            streamed = "".join(data["content"] for channel, data in events if channel == "answer" and data.get("status") == "delta")
            assert streamed == done["answer"] == "Hello! Ask me about a machine."
        refused = client.request(method, path, headers={**headers, "Authorization": "Bearer wrong"}, content=body)
        assert refused.status_code == 401


def test_the_runner_fails_on_a_broken_example():
    """The check above can fail: an example that raises, or awaits something that raises, fails it."""
    text = "```python\nx = 1\n```\n\n```python\nimport asyncio\nawait asyncio.sleep(0)\nassert x == 2\n```\n"
    with pytest.raises(AssertionError):
        run_python_blocks(fenced_blocks(text), "broken.md")


def test_skipped_examples_are_few_and_say_why():
    """An opted-out block names its reason; only a handful exist (each needs something a test
    cannot have: a hosted model's key, the embedded model's download, a server that blocks)."""
    skipped = [(page.name, b.line, b.skip) for page in PAGES for b in fenced_blocks(page.read_text())
               if b.language == "python" and b.skip is not None]
    assert all(len(reason) > 15 for _, _, reason in skipped), skipped
    assert len(skipped) <= 3, skipped
    marked_elsewhere = [(page.name, b.line) for page in PAGES for b in fenced_blocks(page.read_text())
                        if b.language != "python" and b.skip is not None]
    assert not marked_elsewhere


def shell_commands(source: str, console: bool = False) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, comments and leading
    ``VAR=value`` assignments removed. In a ``console`` block (a session with its output) only
    the lines after a ``$`` prompt are commands."""
    commands = []
    for line in source.replace("\\\n", " ").splitlines():
        line = line.strip()
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line or line.startswith("#") or line.startswith("export "):
            continue
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            words.pop(0)
        if words:
            commands.append(words)
    return commands


def reactgraph_arguments(words: list[str]) -> list[str] | None:
    """The arguments after the program when a command runs ``reactgraph``, else ``None``."""
    if words[0].endswith("reactgraph"):
        return words[1:]
    if len(words) > 2 and words[0].endswith("python") and words[1:3] == ["-m", "reactgraph"]:
        return words[3:]
    return None


def test_every_reactgraph_command_in_the_docs_parses():
    """Each ``reactgraph`` command line of a shell block is accepted by the CLI's parser, and
    each ``make`` target exists, so the docs cannot name an option or target that is gone."""
    from reactgraph.cli.options import build_parser

    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    checked = 0
    for page in PAGES:
        for block in fenced_blocks(page.read_text()):
            if block.language not in SHELL_LANGUAGES:
                continue
            for words in shell_commands(block.source, console=block.language == "console"):
                arguments = reactgraph_arguments(words)
                if arguments is not None:
                    try:
                        build_parser().parse_args(arguments)
                    except SystemExit:
                        pytest.fail(f"{page.name}:{block.line}: `{shlex.join(words)}` is refused by the CLI")
                    checked += 1
                elif words[0] == "make":
                    named = [w for w in words[1:] if "=" not in w]
                    assert set(named) <= targets, f"{page.name}:{block.line}: make {named}"
                    checked += 1
    assert checked >= 10


def test_the_shell_check_can_fail():
    """An option the CLI does not have is refused by the parser the check above uses."""
    from reactgraph.cli.options import build_parser

    assert reactgraph_arguments(shell_commands("$ .venv/bin/reactgraph run --no-such-option q", console=True)[0]) is not None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--no-such-option", "q"])


def synopsis_options(source: str) -> dict[str, set[str]]:
    """The options a usage synopsis (a ``text`` block of ``reactgraph SUBCOMMAND [--option …]``
    lines; indented lines continue the one above) names, by subcommand."""
    options: dict[str, set[str]] = {}
    command = None
    for line in source.splitlines():
        if line.startswith("reactgraph "):
            command = line.split()[1]
        if command is not None:
            options.setdefault(command, set()).update(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    return options


def test_every_option_of_the_usage_synopses_exists():
    """The synopses of ``reactgraph run``, ``resume`` and ``serve`` name only options their
    subcommand has (and all three are documented)."""
    from reactgraph.cli.options import build_parser

    subcommands = next(a for a in build_parser()._actions if a.dest == "command").choices
    documented: set[str] = set()
    for page in PAGES:
        for block in fenced_blocks(page.read_text()):
            if block.language != "text":
                continue
            for command, named in synopsis_options(block.source).items():
                documented.add(command)
                unknown = named - set(subcommands[command]._option_string_actions)
                assert not unknown, f"{page.name}:{block.line}: reactgraph {command} has no {sorted(unknown)}"
    assert documented == {"run", "resume", "serve"}


def relative_links(page: Path) -> list[str]:
    """The link targets of a markdown file that point into the repository (no scheme, not
    only an anchor), outside code blocks and code spans."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = [m["target"] for m in LINK.finditer(text)]
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_every_relative_link_of_the_readme_resolves():
    """README links point at files that exist (mkdocs' strict build checks the docs pages)."""
    links = relative_links(ROOT / "README.md")
    assert links, "the README links into docs/"
    missing = [t for t in links if not (ROOT / t.split("#")[0]).exists()]
    assert not missing


def test_the_readme_stays_short_and_keeps_the_two_commands():
    """The README is a front page (at most 150 lines) whose test command is exactly what CI runs."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    commands = [words for b in fenced_blocks(text) if b.language in SHELL_LANGUAGES for words in shell_commands(b.source)]
    assert ["make", "test"] in commands and ["make", "demo"] in commands


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built by ``mkdocs build --strict`` (in this process) into a temporary folder."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    site_dir = tmp_path_factory.mktemp("site")
    build(load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(site_dir)))
    return site_dir


def test_the_site_builds_in_strict_mode(site):
    """``mkdocs build --strict`` raises on any warning; every page of docs/ is in the site."""
    for page in DOCS.glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.exists(), page.name


EXTERNAL = re.compile(r"""<(?:script|link|img|iframe|source|audio|video)\b[^>]*?\s(?:src|href)\s*=\s*["']?"""
                      r"""((?:[a-z][a-z0-9+.-]*:)?//[^"'\s>]+)""", re.IGNORECASE)
"""A tag that makes a browser load something as the page opens, with an address on another host
(a scheme and host, or a protocol-relative ``//host``); plain links (``<a href>``) are not loads."""

CSS_EXTERNAL = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])((?:[a-z][a-z0-9+.-]*:)?//[^"')\s]+)""", re.IGNORECASE)
"""A stylesheet's ``url(...)`` or ``@import`` of another host."""


def external_loads(site: Path) -> list[tuple[str, str]]:
    """``(file, address)`` of every load of another host the built site's pages and
    stylesheets make: a script, a stylesheet, an image, a font, a frame."""
    found = [(str(p.relative_to(site)), m[1]) for p in site.rglob("*.html") for m in EXTERNAL.finditer(p.read_text())]
    found += [(str(p.relative_to(site)), m[1]) for p in site.rglob("*.css") for m in CSS_EXTERNAL.finditer(p.read_text())]
    return found


def test_the_site_loads_nothing_from_other_hosts(site, tmp_path):
    """the site works offline — no script, stylesheet, font or image from another
    host (mermaid.js is bundled by docs/hooks/mermaid.py, which Material then uses instead of
    its CDN copy) — and the check fails on a page that has one."""
    assert external_loads(site) == []
    bundled = site / "assets" / "javascripts" / "mermaid.min.js"
    assert bundled.stat().st_size > 1_000_000 and b"mermaid" in bundled.read_bytes()[:50_000]
    graph_page = (site / "graph" / "index.html").read_text()
    assert '<script src="../assets/javascripts/mermaid.min.js"></script>' in graph_page
    probe = tmp_path
    (probe / "index.html").write_text('<a href="https://example.org/">a link is fine</a>\n'
                                      '<script src="https://unpkg.com/mermaid@11/dist/mermaid.min.js"></script>\n'
                                      "<link rel=stylesheet href=//fonts.example.org/x.css>")
    (probe / "style.css").write_text("@font-face { src: url('https://fonts.example.org/a.woff2') }")
    assert [address for _file, address in external_loads(probe)] == [
        "https://unpkg.com/mermaid@11/dist/mermaid.min.js", "//fonts.example.org/x.css", "https://fonts.example.org/a.woff2"]


def test_the_graph_pages_draw_the_compiled_graphs(site):
    """The diagrams come from the compiled graphs: every node of today's ReAct and DAG graphs
    (the shape snapshot of test_architecture.py) is drawn, no marker is left, and no page keeps
    a hand-copied diagram block."""
    shapes = json.loads((ROOT / "tests" / "unit" / "data" / "graph_shapes.json").read_text())
    html = (site / "graph" / "index.html").read_text()
    diagrams = re.findall(r'<pre class="mermaid"><code>(.*?)</code></pre>', html, flags=re.DOTALL)
    assert len(diagrams) == 2, "the ReAct graph and the DAG graph"
    for diagram, name in zip(diagrams, ("react", "dag")):
        drawn = {n for n in re.findall(r"^\s*(\w+)\(", diagram, flags=re.MULTILINE) if not n.startswith("__")}
        assert drawn == {n for n in shapes[name]["nodes"] if not n.startswith("__")}, name
    assert not [p.name for p in site.rglob("*.html") if "<!-- graph:" in p.read_text()]
    for page in PAGES:
        assert not [b for b in fenced_blocks(page.read_text()) if b.language == "mermaid"], page.name


def test_the_graph_hook_draws_a_marker_and_refuses_an_unknown_graph():
    """The mkdocs hook (docs/hooks/graphs.py) turns a marker into the mermaid of the compiled
    graph and fails the build on a graph name it does not know."""
    from mkdocs.exceptions import PluginError

    spec = importlib.util.spec_from_file_location("docs_graph_hook", DOCS / "hooks" / "graphs.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.on_page_markdown("Before\n\n<!-- graph: dag -->\n\nAfter\n", None, None, None)
    assert page.startswith("Before\n\n```mermaid\n") and page.endswith("```\n\nAfter\n")
    assert "start_dag" in page and "<!-- graph" not in page
    with pytest.raises(PluginError, match="no such graph"):
        hook.on_page_markdown("<!-- graph: nope -->\n", None, None, None)
