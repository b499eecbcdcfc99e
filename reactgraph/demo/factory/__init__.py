"""Seed-003 demo plant: a factory equipment-management domain.

``build_factory_hub(db_path=None)`` seeds an embedded SQLite database (see
:mod:`.db`) and returns LangChain tools grouped by connector
(:data:`CONNECTORS`: equipment, alarms, maintenance, production, quality,
inventory, energy): read-only query tools, and ``create_work_order``, which writes
a work order request and needs a person's approval (SPEC R13.3).
``DEMO_QUESTION`` / ``DEMO_SYSTEM_PROMPT`` drive the demo run.
"""

from .db import REFERENCE_DATE, connect_readonly, default_db_path, ensure_database
from .tools import CONNECTORS, WRITE_TOOLS, build_factory_hub, normalize_equipment_id

DEMO_QUESTION = "CNC-003 상태 확인해줘"

DEMO_EXAMPLES = (
    DEMO_QUESTION,
    "Which machines have active alarms?",
    "Compare CNC-001 and CNC-003",
    "Open a work order to replace the CNC-003 spindle bearing",
)
"""The example questions ``reactgraph serve``'s page offers (``create_app(examples=...)``):
one per kind of use of the plant's tools, the last one asking for an approval."""

DEMO_SYSTEM_PROMPT = (
    "You are a factory equipment-management assistant for a manufacturing plant. "
    "Use the provided tools to look up equipment status, alarms, maintenance, production, quality, "
    "spare parts and energy data; never invent readings, IDs or numbers that a tool did not return. "
    "If a tool reports an error or unknown ID, correct the call or tell the user what is valid. "
    f"The plant data is current as of {REFERENCE_DATE.isoformat()}. "
    "Answer concisely in the same language as the user's question, keeping units (%, °C, mm/s)."
)

__all__ = [
    "CONNECTORS",
    "DEMO_EXAMPLES",
    "DEMO_QUESTION",
    "DEMO_SYSTEM_PROMPT",
    "REFERENCE_DATE",
    "WRITE_TOOLS",
    "build_factory_hub",
    "connect_readonly",
    "default_db_path",
    "ensure_database",
    "normalize_equipment_id",
]
