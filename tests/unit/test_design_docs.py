"""The requirements the code cites live in the repository.

Code, tests and docs cite rules as ``SPEC R2.3`` or ``SPEC §8``; every such citation must name a rule
or section that ``docs/design/requirements.md`` states, so a maintainer can follow it without
anything outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "docs" / "design" / "requirements.md"
CITATION = re.compile(r"SPEC\s+(R\d+(?:\.\d+)?|§\d+)")


def stated_rules() -> set[str]:
    text = REQUIREMENTS.read_text(encoding="utf-8")
    rules = set(re.findall(r"^- (R\d+\.\d+)\b", text, flags=re.M))
    sections = set(re.findall(r"^## (\d+)\.", text, flags=re.M))
    rules |= {rule.split(".")[0] for rule in rules}          # "SPEC R9" names the R9.x group
    return rules | {f"§{number}" for number in sections}


def cited_rules() -> dict[str, list[str]]:
    cited: dict[str, list[str]] = {}
    for folder in ("reactgraph", "tests", "docs", "bench", "studio"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".js", ".html", ".css") or not path.is_file():
                continue
            for match in CITATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
                cited.setdefault(match.group(1), []).append(str(path.relative_to(ROOT)))
    return cited


def test_requirements_page_states_numbered_rules():
    rules = stated_rules()
    assert {"R2.1", "R2.3", "R13.3", "§8"} <= rules
    assert len([rule for rule in rules if rule.startswith("R") and "." in rule]) >= 40


def test_every_cited_rule_is_stated_in_the_repository():
    rules = stated_rules()
    missing = {rule: files[:3] for rule, files in cited_rules().items() if rule not in rules}
    assert missing == {}
