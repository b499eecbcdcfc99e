"""Unit tests for the seed-003 demo plant (reactgraph.demo.factory): DB seeding and tool hub."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from langchain_core.tools import ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from reactgraph.demo.factory import (
    CONNECTORS,
    DEMO_QUESTION,
    DEMO_SYSTEM_PROMPT,
    WRITE_TOOLS,
    build_factory_hub,
    default_db_path,
    ensure_database,
)
from reactgraph.demo.factory.db import ALARMS, EQUIPMENT, connect_readonly

CNC_003_STATUS = """Equipment ID: CNC-003
Name: CNC Lathe #1
State: warning
Utilization: 72.3%
Temperature: 48.7°C
Vibration: 1.2 mm/s
Last inspection: 2026-01-10
Active alarms: W-1105: vibration rising"""

# One valid argument set per tool; every tool must appear here.
VALID_ARGS: dict[str, dict] = {
    "get_equipment_status": {"equipment_id": "CNC-001"},
    "list_equipment": {"line": "Line A", "state": "normal"},
    "get_sensor_trend": {"equipment_id": "CNC-003", "metric": "vibration", "days": 5},
    "compare_equipment": {"equipment_ids": ["CNC-001", "CNC-003"]},
    "check_threshold_violations": {},
    "list_active_alarms": {"severity": "warning"},
    "get_alarm_details": {"alarm_code": "W-1105"},
    "get_alarm_history": {"start_date": "2026-01-01", "end_date": "2026-01-29"},
    "get_maintenance_history": {"equipment_id": "CNC-003", "limit": 5},
    "create_work_order": {"equipment_id": "CNC-003", "description": "Replace the spindle bearing", "priority": "high"},
    "get_scheduled_maintenance": {"days_ahead": 30},
    "get_maintenance_due": {"within_days": 14},
    "get_production_summary": {"line": "Line A", "start_date": "2026-01-20", "end_date": "2026-01-29"},
    "get_shift_output": {"line": "Line B", "day": "2026-01-28"},
    "get_line_oee": {"line": "Line C"},
    "get_downtime_report": {"line": "Line A"},
    "get_defect_rate": {"line": "Line C", "start_date": "2026-01-24"},
    "list_quality_inspections": {"line": "Line C", "result": "fail"},
    "get_top_defects": {"limit": 3},
    "check_spare_part_stock": {"query": "P-1001"},
    "list_low_stock_parts": {},
    "find_parts_for_equipment": {"equipment_id": "CNC-003"},
    "get_energy_usage": {"equipment_id": "CMP-001"},
    "get_top_energy_consumers": {"limit": 3},
}


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_database(tmp_path_factory.mktemp("plant") / "factory.db")


@pytest.fixture(scope="module")
def hub(db_path: Path) -> dict:
    return {t.name: t for t in build_factory_hub(db_path)}


def _counts(path: Path) -> dict[str, int]:
    con = connect_readonly(path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


def test_default_db_path_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path / "rg"))
    assert default_db_path() == tmp_path / "rg" / "factory.db"
    monkeypatch.delenv("REACTGRAPH_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "reactgraph" / "factory.db"


def test_seeding_is_idempotent_and_plausible(tmp_path: Path) -> None:
    path = ensure_database(tmp_path / "nested" / "dir" / "factory.db")
    first = _counts(path)
    assert ensure_database(path) == path
    assert _counts(path) == first
    assert first["equipment"] >= 12
    for table in ("alarms", "maintenance", "production", "quality_inspections", "parts", "energy", "sensor_readings"):
        assert first[table] > 0, table
    con = connect_readonly(path)
    try:
        assert con.execute("SELECT state FROM equipment WHERE id = 'CNC-001'").fetchone()[0] == "normal"
        assert len({r[0] for r in con.execute("SELECT kind FROM equipment")}) >= 5
    finally:
        con.close()


def test_concurrent_first_use_seeds_once(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            ensure_database(path)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _counts(path)["equipment"] == 14


def test_readonly_connection_rejects_writes(db_path: Path) -> None:
    con = connect_readonly(db_path)
    try:
        with pytest.raises(sqlite3.OperationalError):
            con.execute("UPDATE equipment SET state = 'stopped' WHERE id = 'CNC-003'")
    finally:
        con.close()


def test_hub_shape(hub: dict) -> None:
    assert len(hub) >= 20
    assert len(CONNECTORS) >= 5
    assert sorted(n for names in CONNECTORS.values() for n in names) == sorted(hub)
    assert set(VALID_ARGS) == set(hub)
    for name, tool in hub.items():
        first_line = tool.description.splitlines()[0]
        assert 0 < len(first_line) <= 80, name
        assert tool.metadata["connector"] in CONNECTORS


@pytest.mark.parametrize("name", sorted(VALID_ARGS))
def test_every_tool_returns_text(hub: dict, name: str) -> None:
    out = hub[name].invoke(VALID_ARGS[name])
    assert isinstance(out, str) and out.strip()
    assert "Unknown" not in out and "No " not in out.split("\n")[0], out


def test_the_work_order_tool_writes_its_own_table_through_its_own_connection(tmp_path: Path) -> None:
    db = ensure_database(tmp_path / "factory.db")
    tools = {t.name: t for t in build_factory_hub(db)}
    tool = tools["create_work_order"]
    assert tool.metadata["approval"] == "always" and WRITE_TOOLS == {"create_work_order"}
    assert all("approval" not in t.metadata for name, t in tools.items() if name != "create_work_order")
    before = _counts(db)
    first = tool.invoke({"equipment_id": "cnc003", "description": "Replace the spindle bearing", "priority": "urgent"})
    second = tool.invoke({"equipment_id": "PRS-001", "description": "Check the hydraulic seal"})
    assert first.startswith("Created work order WO-R0001 for CNC-003") and "priority urgent" in first
    assert second.startswith("Created work order WO-R0002 for PRS-001") and "priority normal" in second
    con = connect_readonly(db)
    try:
        rows = [tuple(r)[:4] for r in con.execute("SELECT * FROM work_order_requests ORDER BY wo_id")]
    finally:
        con.close()
    assert rows == [("WO-R0001", "CNC-003", "urgent", "Replace the spindle bearing"),
                    ("WO-R0002", "PRS-001", "normal", "Check the hydraulic seal")]
    after = _counts(db)
    assert after.pop("work_order_requests") == 2 and after == before  # the seeded tables are untouched
    assert tool.invoke({"equipment_id": "CNC-003", "description": "x" * 3}).startswith("Created work order WO-R0003")
    with pytest.raises(ValueError):
        tool.invoke({"equipment_id": "XYZ-999", "description": "nothing"})


def test_cnc_003_status_exact(hub: dict) -> None:
    assert hub["get_equipment_status"].invoke({"equipment_id": "CNC-003"}) == CNC_003_STATUS


def test_no_active_alarms_reads_none(hub: dict) -> None:
    assert hub["get_equipment_status"].invoke({"equipment_id": "CNC-001"}).endswith("Active alarms: none")


@pytest.mark.parametrize("raw", ["cnc003", "CNC 003", "cnc-3", " Cnc-003 ", "cnc_03"])
def test_sloppy_ids_normalize(hub: dict, raw: str) -> None:
    assert hub["get_equipment_status"].invoke({"equipment_id": raw}) == CNC_003_STATUS


def test_sloppy_line_and_alarm_code(hub: dict) -> None:
    assert hub["list_equipment"].invoke({"line": "line-a"}).startswith("4 machine(s)")
    assert "W-1105" in hub["get_alarm_details"].invoke({"alarm_code": "w1105"})


def test_unknown_id_is_refused_naming_the_known_ids(hub: dict) -> None:
    with pytest.raises(ValidationError) as refused:
        hub["get_equipment_status"].invoke({"equipment_id": "CNC-009"})
    assert "CNC-009" in str(refused.value) and "'CNC-001'" in str(refused.value) and "'CMP-002'" in str(refused.value)
    with pytest.raises(ValidationError):
        hub["compare_equipment"].invoke({"equipment_ids": ["CNC-001", "XYZ-123"]})
    with pytest.raises(ValidationError) as refused:
        hub["get_alarm_details"].invoke({"alarm_code": "W-9999"})
    assert "'W-1105'" in str(refused.value)


def _params(tool) -> dict:
    return convert_to_openai_tool(tool)["function"]["parameters"]["properties"]


def test_argument_schemas_enumerate_the_plant(hub: dict) -> None:
    ids = [row[0] for row in EQUIPMENT]
    assert _params(hub["get_equipment_status"])["equipment_id"]["enum"] == ids
    assert _params(hub["compare_equipment"])["equipment_ids"]["items"]["enum"] == ids
    assert _params(hub["get_alarm_details"])["alarm_code"]["enum"] == sorted({row[0] for row in ALARMS})
    assert _params(hub["get_shift_output"])["line"]["enum"] == ["Line A", "Line B", "Line C"]
    day = _params(hub["get_shift_output"])["day"]
    assert day["format"] == "date" and day["pattern"] == r"^\d{4}-\d{2}-\d{2}$"
    optional_id = _params(hub["get_energy_usage"])["equipment_id"]["anyOf"]
    assert optional_id == [{"enum": ids, "type": "string"}, {"type": "null"}]


def test_empty_date_range_is_an_observation(hub: dict) -> None:
    out = hub["get_production_summary"].invoke({"line": "Line A", "start_date": "2025-06-01", "end_date": "2025-06-07"})
    assert out.startswith("No production records") and "2026-01-16" in out


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("get_production_summary", {"line": "Line A", "start_date": "29/01/2026"}),
        ("get_shift_output", {"line": "Line A", "day": "2026-02-30"}),
        ("get_production_summary", {"line": "Line A", "start_date": "2026-01-29", "end_date": "2026-01-20"}),
        ("get_production_summary", {"line": "Line Z"}),
        ("get_equipment_status", {"equipment_id": "lathe one"}),
        ("get_sensor_trend", {"equipment_id": "CNC-003", "days": 99}),
        ("list_equipment", {"colour": "red"}),
    ],
)
def test_schema_rejects_bad_arguments(hub: dict, name: str, args: dict) -> None:
    with pytest.raises((ValidationError, ToolException)):
        hub[name].invoke(args)


def test_concurrent_calls_from_threads(hub: dict) -> None:
    names = sorted(VALID_ARGS)
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(i: int) -> None:
        barrier.wait()
        try:
            for k in range(len(names)):
                name = names[(i + k) % len(names)]
                results[i * 100 + k] = hub[name].invoke(VALID_ARGS[name])
            results[i * 100 + 99] = hub["get_equipment_status"].invoke({"equipment_id": "CNC-003"})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 8 * (len(names) + 1)
    assert all(isinstance(v, str) and v for v in results.values())
    assert all(results[i * 100 + 99] == CNC_003_STATUS for i in range(8))


def test_demo_constants() -> None:
    assert DEMO_QUESTION == "CNC-003 상태 확인해줘"
    assert "tool" in DEMO_SYSTEM_PROMPT.lower() and "language" in DEMO_SYSTEM_PROMPT.lower()
