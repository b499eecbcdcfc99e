"""The layering rules of docs/architecture.md, checked on the source, and a
snapshot of each compiled graph's shape.

- No module outside ``reactgraph/nodes/`` and ``reactgraph/graph/`` imports from
  ``reactgraph.nodes``: helpers several nodes use live below the nodes.
- Node code does its I/O through :mod:`reactgraph.engine.dualmode` (its module docstring states
  the rule): a node that awaited ``ainvoke``/``astream`` or an ``asyncio`` primitive itself
  would hang or fail a synchronous ``invoke`` run.
- No module outside ``reactgraph/demo/`` is over 600 lines, and ``create_app`` wires routers
  in under 80 lines.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from reactgraph import AgentSettings, ModelAbilities, create_dag_graph, create_react_graph
from reactgraph.testing import ScriptedChatModel
from tests.helpers import get_status

PACKAGE = Path(__file__).resolve().parents[2] / "reactgraph"
SNAPSHOT = Path(__file__).parent / "data" / "graph_shapes.json"

NODE_CODE = ["nodes", "window", "dag/plan.py", "dag/analyze.py", "dag/executor.py", "dag/synthesize.py",
             "protocol/structured.py", "answer/synthesis.py"]
"""Code that runs inside graph nodes, so under both entry points (SPEC R10.1)."""

ASYNC_APIS = {"ainvoke", "astream", "abatch", "agenerate", "astream_events", "atransform", "acall", "arun"}
"""LangChain async entry points a node must reach through ``dualmode`` (``call_model``, ``stream_model``)."""


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "static" not in p.parts)


def imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_module_below_the_nodes_imports_from_them():
    offenders = []
    for path in modules():
        part = path.relative_to(PACKAGE).parts[0]
        if part in ("nodes", "graph"):
            continue
        for name in imported_modules(ast.parse(path.read_text())):
            if name == "reactgraph.nodes" or name.startswith("reactgraph.nodes."):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def node_code() -> list[Path]:
    found = []
    for entry in NODE_CODE:
        target = PACKAGE / entry
        found.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    return found


def bare_async_io(tree: ast.AST) -> list[str]:
    """Awaits (and ``async for`` loops) of a LangChain async API or an ``asyncio`` primitive."""
    found = []
    for node in ast.walk(tree):
        target = node.value if isinstance(node, ast.Await) else node.iter if isinstance(node, ast.AsyncFor) else None
        if not isinstance(target, ast.Call) or not isinstance(target.func, ast.Attribute):
            continue
        func = target.func
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if func.attr in ASYNC_APIS or (isinstance(root, ast.Name) and root.id == "asyncio"):
            found.append(f"line {node.lineno}: {ast.unparse(target)[:80]}")
    return found


def test_node_code_does_its_io_through_dualmode():
    offenders = {str(p.relative_to(PACKAGE)): hits for p in node_code() if (hits := bare_async_io(ast.parse(p.read_text())))}
    assert offenders == {}


def test_the_scan_sees_a_bare_await():
    """The check above can fail: it flags the two ways a node could bypass ``dualmode``."""
    source = "async def node(model, x):\n    await model.ainvoke(x)\n    await asyncio.sleep(1)\n    await call_model(model, x)\n"
    assert [hit.split(":")[0] for hit in bare_async_io(ast.parse(source))] == ["line 2", "line 3"]


def shape(graph) -> dict[str, list]:
    drawable = graph.get_graph()
    return {
        "nodes": sorted(drawable.nodes),
        "edges": sorted([edge.source, edge.target, bool(edge.conditional)] for edge in drawable.edges),
    }


def test_the_compiled_graphs_keep_their_shape():
    """Nodes and edges of each compiled graph (SPEC §1), against a stored snapshot: a change
    of the wiring shows in review as a change of ``tests/unit/data/graph_shapes.json``
    (``REACTGRAPH_RECORD_SHAPES=1`` rewrites it)."""
    model = ScriptedChatModel()
    shapes = {
        "react": shape(create_react_graph(model, [get_status], abilities=ModelAbilities(tool_call=True))),
        "react_with_response_format": shape(create_react_graph(
            model, [get_status], abilities=ModelAbilities(tool_call=True), settings=AgentSettings(),
            response_format={"title": "status", "type": "object", "properties": {"ok": {"type": "boolean"}}})),
        "dag": shape(create_dag_graph(model, [get_status])),
    }
    if os.environ.get("REACTGRAPH_RECORD_SHAPES"):
        SNAPSHOT.write_text(json.dumps(shapes, indent=1) + "\n")
    assert shapes == json.loads(SNAPSHOT.read_text())


def test_every_public_exception_lives_in_errors_under_one_base():
    """Every exception class exported by ``reactgraph`` is defined in ``reactgraph.core.errors`` and
    derives from ``ReactGraphError``."""
    import reactgraph
    from reactgraph.core.errors import ReactGraphError

    exported = [getattr(reactgraph, name) for name in reactgraph.__all__]
    exceptions = [obj for obj in exported if isinstance(obj, type) and issubclass(obj, BaseException)]
    assert len(exceptions) >= 10
    assert [e.__name__ for e in exceptions if e.__module__ != "reactgraph.core.errors"] == []
    assert [e.__name__ for e in exceptions if not issubclass(e, ReactGraphError)] == []
    defined_elsewhere = [
        f"{path.relative_to(PACKAGE)}:{node.name}"
        for path in modules() if path.name != "errors.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
        and any(isinstance(base, ast.Name) and base.id in {"Exception", "ValueError", "RuntimeError", "LookupError",
                                                             "ReactGraphError"} for base in node.bases)
    ]
    assert defined_elsewhere == ["cli/main.py:SetupError", "cli/main.py:RunFailed"]  # the CLI's own exit paths, not API


PROVIDER_PACKAGES = ("langchain_openai", "openai", "llama_cpp", "huggingface_hub")
"""Clients of one provider or of the embedded model: imported where a model is made, not by
``import reactgraph`` (langchain-openai alone took ~0.6 s of a 2.7 s import)."""


def test_importing_the_library_and_the_cli_loads_no_provider_client():
    """``import reactgraph`` and the CLI's module leave the provider clients unimported, so a
    library import, ``reactgraph --help`` and a server start do not pay for them (
    ``bench/import_time.py`` measures the time)."""
    probe = ("import sys, reactgraph, reactgraph.cli.main; "
             f"print(sorted(set({PROVIDER_PACKAGES!r}) & {{name.split('.')[0] for name in sys.modules}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout


DOMAIN_FREE_EXEMPT = ("demo", "core/language.py", "core/phrases.py")
"""Where knowledge of the demo plant or of one language may live: the demo itself and the
language tables (``reactgraph/core/language.py``: the words detection and question parts use;
``reactgraph/core/phrases.py``: the sentences the engine writes)."""


def demo_knowledge() -> re.Pattern[str]:
    """Hangul, the demo plant's ids (``ABC-123``/``W-1234``-shaped strings of its source) and
    its tool names, as one pattern."""
    from reactgraph.demo.factory.tools import _REGISTRY

    source = "\n".join(path.read_text() for path in (PACKAGE / "demo").rglob("*.py"))
    ids = sorted(set(re.findall(r"(?<![A-Za-z0-9])[A-Z]{1,4}-\d{3,4}(?![0-9])", source)))
    names = sorted({function.__name__ for _, function, _ in _REGISTRY})
    assert len(ids) > 10 and len(names) > 10  # the scan knows what it looks for
    return re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]"
                      rf"|(?<![A-Za-z0-9])(?:{'|'.join(map(re.escape, ids))})(?![0-9])"
                      rf"|(?<![A-Za-z0-9_])(?:{'|'.join(map(re.escape, names))})(?![A-Za-z0-9_])")


def test_the_engine_knows_no_demo_plant_and_no_one_language():
    """The engine's code, comments and docstrings name no demo id, no demo tool and hold no
    Hangul outside ``reactgraph/demo/`` and the language table; the page too."""
    pattern = demo_knowledge()
    offenders = []
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE)
        if not path.is_file() or path.suffix not in (".py", ".html", ".js", ".css") \
                or relative.parts[0] in DOMAIN_FREE_EXEMPT or relative.as_posix() in DOMAIN_FREE_EXEMPT:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in pattern.finditer(line):
                offenders.append(f"{relative}:{number}: {match.group(0)}")
    assert offenders == []


def test_the_domain_scan_finds_what_it_looks_for():
    pattern = demo_knowledge()
    assert pattern.search('ranked = rank("CNC-003 상태")') and pattern.search("call get_equipment_status now")
    assert not pattern.search("AB/100 | ISO-8601 | get_status_of_orders | v2")


# --- relayout: packages, circles, documented paths ---


ENGINE_FORBIDDEN = ("reactgraph.demo", "reactgraph.server", "reactgraph.cli", "reactgraph.testing")
"""What the engine never imports: the surfaces and the test helpers."""

SURFACES = ("demo", "server", "cli", "testing.py", "__init__.py", "__main__.py")
"""Top-level entries of ``reactgraph/`` that may import the surfaces (they are surfaces)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_arrows() -> dict[str, set[str]]:
    """module -> the reactgraph modules it imports. Every import statement counts: at module
    level, inside functions and under ``TYPE_CHECKING`` (a lazy import is still a dependency).
    A shim left at a moved module's old path (it only re-exports the new home) is no module."""
    files = {module_name(p): p for p in modules() if not is_shim(p)}
    arrows: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                while target not in files and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in files and target != name:
                    arrows[name].add(target)
    return arrows


def is_shim(path: Path) -> bool:
    return path.parent == PACKAGE and "sys.modules[__name__] = _moved" in path.read_text()


def import_circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in arrows[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles():
    circles = import_circles(import_arrows())
    assert circles == [], "modules that import each other (every import counts, lazy ones too): " + "; ".join(
        " <-> ".join(group) for group in circles)


def test_the_engine_never_imports_the_surfaces_or_the_test_helpers():
    offenders = []
    for path in modules():
        if path.relative_to(PACKAGE).parts[0] in SURFACES or is_shim(path):
            continue
        for name in imported_modules(ast.parse(path.read_text())):
            if any(name == forbidden or name.startswith(forbidden + ".") for forbidden in ENGINE_FORBIDDEN):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_every_path_docs_architecture_names_exists():
    """A file or folder named in backquotes in docs/architecture.md exists: the page is read
    against the code. Paths are taken from ``reactgraph/`` unless they begin with one of the
    repository's top-level folders."""
    root = PACKAGE.parent
    text = (root / "docs" / "architecture.md").read_text()
    missing = []
    for found in re.findall(r"`([\w./-]+(?:\.py|\.md|\.json|/))`", text):
        if not any((base / found).exists() for base in (root, PACKAGE, root / "docs", root / "tests" / "unit")):
            missing.append(found)
    assert missing == []


MODULE_LINES = 600
"""The most lines a module of the package has (the demo and the page's static files aside):
past it a module is several concerns, split by concern."""


def test_no_module_is_over_the_line_bound():
    long = {}
    for path in modules():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("demo/"):
            continue
        lines = len(path.read_text().splitlines())
        if lines > MODULE_LINES:
            long[relative] = lines
    assert long == {}, f"modules over {MODULE_LINES} lines: {long}"


def test_create_app_body_is_under_80_lines():
    """The app factory wires routers, middleware and state; the routes live in
    ``server/routers/`` and the bodies in ``server/schemas.py``."""
    tree = ast.parse((PACKAGE / "server" / "app.py").read_text())
    factory = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "create_app")
    body = factory.body[1:] if ast.get_docstring(factory) else factory.body
    assert body[-1].end_lineno - body[0].lineno + 1 < 80


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore is its module's own: a module that needs it from
    elsewhere gets it public in its home (or moves it there), never reaches in."""
    offenders = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("reactgraph"):
                offenders += [f"{path.relative_to(PACKAGE)}: {node.module}.{alias.name}" for alias in node.names
                              if alias.name.startswith("_") and not alias.name.startswith("__")
                              and not (PACKAGE / Path(*node.module.split(".")[1:]) / f"{alias.name}.py").exists()]
    assert offenders == []
