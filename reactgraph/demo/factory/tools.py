"""LangChain tool hub for the seed-003 demo plant.

:func:`build_factory_hub` returns ``StructuredTool`` objects grouped into
connectors (see :data:`CONNECTORS`): query tools, and one that changes the plant
(``create_work_order``, in :data:`WRITE_TOOLS`: approval required). Every tool:

* takes a strict pydantic ``args_schema`` (per-field descriptions, numeric
  ranges, and enums wherever the plant's data allows: the known equipment ids
  and alarm codes, line names, machine kinds; dates carry ``format: date``
  besides their pattern, because llama.cpp grammars cannot use regex patterns).
  A model whose output is constrained to these schemas can only name a machine
  that exists. Sloppy equipment ids / line names / alarm codes are
  normalized *before* validation (``cnc003``, ``CNC 003``, ``cnc-3`` ->
  ``CNC-003``; ``a``/``line-a`` -> ``Line A``). Malformed input (an unknown
  equipment id, a date that is not ``YYYY-MM-DD``) makes ``tool.invoke`` raise
  ``pydantic.ValidationError`` naming the allowed values; the engine reports
  that as an observation.
* runs parameterized SQL on its own connection (thread-safe): read-only for the
  query tools, a separate read-write one for a write tool, which writes its own
  table (``work_order_requests``) and nothing else.
* returns a human-readable ``str``; domain misses (unknown id, no rows in a
  date range) are returned as explanatory text, never raised.

Units: utilization %, temperature °C, vibration mm/s, downtime minutes,
energy kWh, cost USD. Data is pinned to the reference date 2026-01-29 and
daily series cover 2026-01-16 .. 2026-01-29.
"""

from __future__ import annotations

import difflib
import inspect
import re
import sqlite3
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from .db import ALARMS, DATA_START, EQUIPMENT, REFERENCE_DATE, connect_for_writes, connect_readonly, ensure_database

# --------------------------------------------------------------------------- argument types

_ID_RE = re.compile(r"^([A-Z]{2,5})[\s_\-#]*0*(\d{1,3})$")
_KINDS = ("CNC lathe", "CNC mill", "press", "robot", "conveyor", "compressor", "injection molder")
EQUIPMENT_IDS: tuple[str, ...] = tuple(row[0] for row in EQUIPMENT)
"""Every machine of the demo plant, the enum of equipment id arguments."""
ALARM_CODES: tuple[str, ...] = tuple(sorted({row[0] for row in ALARMS}))
"""Every alarm code the demo plant has raised, the enum of alarm code arguments."""


def normalize_equipment_id(value: object) -> object:
    """Normalize ``'cnc003'``, ``'CNC 003'``, ``'cnc-3'`` to ``'CNC-003'``; other text is upper-cased."""
    if not isinstance(value, str):
        return value
    text = value.strip().upper()
    m = _ID_RE.match(text)
    return f"{m.group(1)}-{int(m.group(2)):03d}" if m else text


def _norm_line(value: object) -> object:
    if not isinstance(value, str):
        return value
    key = re.sub(r"[\s_\-]+", " ", value.strip().lower()).removeprefix("line").strip()
    if key in {"a", "b", "c"}:
        return f"Line {key.upper()}"
    return "Utility" if key.startswith("util") else value


def _norm_kind(value: object) -> object:
    if not isinstance(value, str):
        return value
    key = value.strip().lower().rstrip("s")
    return next((k for k in _KINDS if k.lower() == key), value)


def _norm_alarm(value: object) -> object:
    if not isinstance(value, str):
        return value
    m = re.match(r"^([EWI])[\s\-_]*(\d{4})$", value.strip().upper())
    return f"{m.group(1)}-{m.group(2)}" if m else value.strip().upper()


def _real_date(value: str) -> str:
    date.fromisoformat(value)  # rejects 2026-02-30 etc.
    return value


EquipmentId = Annotated[Literal[EQUIPMENT_IDS], BeforeValidator(normalize_equipment_id)]
_DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
DateStr = Annotated[str, Field(pattern=_DATE_PATTERN), AfterValidator(_real_date),
                    WithJsonSchema({"type": "string", "format": "date", "pattern": _DATE_PATTERN})]
ProductionLine = Annotated[Literal["Line A", "Line B", "Line C"], BeforeValidator(_norm_line)]
PlantLine = Annotated[Literal["Line A", "Line B", "Line C", "Utility"], BeforeValidator(_norm_line)]
Kind = Annotated[Literal[_KINDS], BeforeValidator(_norm_kind)]
AlarmCode = Annotated[Literal[ALARM_CODES], BeforeValidator(_norm_alarm)]

_EID = "Equipment ID like CNC-003"
_START = "First day, YYYY-MM-DD (default: 6 days before end_date)"
_END = "Last day, YYYY-MM-DD (default: 2026-01-29, the data reference date)"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Range(_Args):
    start_date: DateStr | None = Field(None, description=_START)
    end_date: DateStr | None = Field(None, description=_END)

    @model_validator(mode="after")
    def _ordered(self) -> _Range:
        if self.start_date and self.end_date and self.start_date > self.end_date:
            raise ValueError("start_date must be on or before end_date")
        return self


class EquipmentArgs(_Args):
    equipment_id: EquipmentId = Field(description=_EID)


class ListEquipmentArgs(_Args):
    line: PlantLine | None = Field(None, description="Only this line (Line A/B/C or Utility)")
    kind: Kind | None = Field(None, description="Only this machine kind")
    state: Literal["normal", "warning", "stopped"] | None = Field(None, description="Only this state")


class TrendArgs(_Args):
    equipment_id: EquipmentId = Field(description=_EID)
    metric: Literal["all", "utilization", "temperature", "vibration"] = Field("all", description="Metric to show")
    days: int = Field(7, ge=2, le=14, description="Number of days up to 2026-01-29 (2-14)")


class CompareArgs(_Args):
    equipment_ids: list[EquipmentId] = Field(min_length=2, max_length=6, description="2-6 equipment IDs, e.g. ['CNC-001', 'CNC-003']")


class LineFilterArgs(_Args):
    line: PlantLine | None = Field(None, description="Only this line (default: whole plant)")


class ActiveAlarmArgs(_Args):
    severity: Literal["info", "warning", "critical"] | None = Field(None, description="Only this severity")
    equipment_id: EquipmentId | None = Field(None, description=_EID)
    line: PlantLine | None = Field(None, description="Only machines on this line")


class AlarmCodeArgs(_Args):
    alarm_code: AlarmCode = Field(description="Alarm code like W-1105 (E=critical, W=warning, I=info)")


class AlarmHistoryArgs(_Range):
    equipment_id: EquipmentId | None = Field(None, description=_EID + "; omit for all machines")


class MaintHistoryArgs(_Args):
    equipment_id: EquipmentId = Field(description=_EID)
    limit: int = Field(10, ge=1, le=50, description="Maximum number of work orders (newest first)")


class ScheduledArgs(_Args):
    equipment_id: EquipmentId | None = Field(None, description=_EID + "; omit for all machines")
    days_ahead: int = Field(14, ge=1, le=90, description="Look-ahead window in days after 2026-01-29")


class WorkOrderArgs(_Args):
    equipment_id: EquipmentId = Field(description=_EID)
    description: str = Field(min_length=3, max_length=500, description="What the technicians should do")
    priority: Literal["low", "normal", "high", "urgent"] = Field("normal", description="How soon it is needed")


class DueArgs(_Args):
    within_days: int = Field(7, ge=0, le=60, description="Also list inspections due within this many days")
    line: PlantLine | None = Field(None, description="Only this line")


class LineRangeArgs(_Range):
    line: ProductionLine = Field(description="Production line: Line A (machining), Line B (stamping), Line C (molding)")


class ShiftArgs(_Args):
    line: ProductionLine = Field(description="Production line: Line A, Line B or Line C")
    day: DateStr = Field(description="Production day, YYYY-MM-DD (data: 2026-01-16 to 2026-01-29)")


class OptLineRangeArgs(_Range):
    line: ProductionLine | None = Field(None, description="Only this line (default: all lines)")


class InspectionArgs(OptLineRangeArgs):
    result: Literal["pass", "fail"] | None = Field(None, description="Only inspections with this result")
    limit: int = Field(20, ge=1, le=50, description="Maximum rows (newest first)")


class TopDefectArgs(OptLineRangeArgs):
    limit: int = Field(5, ge=1, le=10, description="Number of defect types to list")


class PartQueryArgs(_Args):
    query: str = Field(min_length=2, max_length=60, description="Part number (P-1001) or words from the part name")


class KindFilterArgs(_Args):
    kind: Kind | None = Field(None, description="Only parts for this machine kind")


class EnergyArgs(_Range):
    equipment_id: EquipmentId | None = Field(None, description=_EID + "; omit for a line/plant total")
    line: PlantLine | None = Field(None, description="Only machines on this line (ignored with equipment_id)")


class TopEnergyArgs(_Range):
    limit: int = Field(5, ge=1, le=14, description="Number of machines to list")


# --------------------------------------------------------------------------- helpers

_REGISTRY: list[tuple[str, Callable[..., str], type[BaseModel]]] = []


def _register(connector: str, schema: type[BaseModel]) -> Callable[[Callable[..., str]], Callable[..., str]]:
    def deco(fn: Callable[..., str]) -> Callable[..., str]:
        _REGISTRY.append((connector, fn, schema))
        return fn

    return deco


def _q(db: Path, sql: str, params: tuple | list = ()) -> list[sqlite3.Row]:
    con = connect_readonly(db)
    try:
        return con.execute(sql, tuple(params)).fetchall()
    finally:
        con.close()


def _n(value: float) -> str:
    """72.3 -> '72.3', 0.35 -> '0.35', 85 -> '85.0'."""
    text = f"{value:.2f}"
    return text[:-1] if text.endswith("0") else text


def _pct(num: float, den: float) -> str:
    return f"{100 * num / den:.1f}%" if den else "n/a"


def _window(start: str | None, end: str | None, days: int = 7) -> tuple[str, str]:
    end_d = date.fromisoformat(end) if end else REFERENCE_DATE
    start_d = date.fromisoformat(start) if start else end_d - timedelta(days=days - 1)
    return start_d.isoformat(), end_d.isoformat()


def _no_data(what: str, start: str, end: str) -> str:
    return f"No {what} between {start} and {end}. Data covers {DATA_START} to {REFERENCE_DATE}."


def _equipment(db: Path, equipment_id: str) -> tuple[sqlite3.Row | None, str]:
    eid = str(normalize_equipment_id(equipment_id))
    rows = _q(db, "SELECT * FROM equipment WHERE id = ?", (eid,))
    if rows:
        return rows[0], ""
    ids = [r["id"] for r in _q(db, "SELECT id FROM equipment ORDER BY id")]
    close = difflib.get_close_matches(eid, ids, n=3, cutoff=0.6)
    hint = f" Closest matches: {', '.join(close)}." if close else ""
    return None, f"Unknown equipment ID '{eid}'.{hint} Valid IDs: {', '.join(ids)}."


def _where(filters: list[tuple[str, object]]) -> tuple[str, list[object]]:
    """Build ' WHERE a = ? AND ...' from (fixed SQL fragment, value) pairs, skipping None values."""
    used = [(frag, val) for frag, val in filters if val is not None]
    sql = " WHERE " + " AND ".join(frag for frag, _ in used) if used else ""
    return sql, [val for _, val in used]


_SEVERITY_ORDER = "CASE a.severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END"

# --------------------------------------------------------------------------- equipment


@_register("equipment", EquipmentArgs)
def get_equipment_status(db: Path, equipment_id: str) -> str:
    """Get current state, sensor readings and active alarms of one machine.

    Returns lines 'Equipment ID', 'Name', 'State' (normal/warning/stopped),
    'Utilization' (%), 'Temperature' (°C), 'Vibration' (mm/s), 'Last inspection'
    (YYYY-MM-DD) and 'Active alarms' ('CODE: message' joined by '; ', or 'none').
    """
    row, err = _equipment(db, equipment_id)
    if row is None:
        return err
    alarms = _q(db, "SELECT code, message FROM alarms WHERE equipment_id = ? AND active = 1 ORDER BY raised_at", (row["id"],))
    return "\n".join([
        f"Equipment ID: {row['id']}",
        f"Name: {row['name']}",
        f"State: {row['state']}",
        f"Utilization: {_n(row['utilization'])}%",
        f"Temperature: {_n(row['temperature'])}°C",
        f"Vibration: {_n(row['vibration'])} mm/s",
        f"Last inspection: {row['last_inspection']}",
        f"Active alarms: {'; '.join(f'{a[0]}: {a[1]}' for a in alarms) or 'none'}",
    ])


@_register("equipment", ListEquipmentArgs)
def list_equipment(db: Path, line: str | None = None, kind: str | None = None, state: str | None = None) -> str:
    """List machines with state and readings, optionally filtered.

    One line per machine: id | name | kind | line | state | utilization % |
    temperature °C | vibration mm/s.
    """
    where, params = _where([("line = ?", line), ("kind = ?", kind), ("state = ?", state)])
    rows = _q(db, "SELECT * FROM equipment" + where + " ORDER BY id", params)
    if not rows:
        return "No machines match these filters."
    head = f"{len(rows)} machine(s):"
    return "\n".join([head] + [
        f"{r['id']} | {r['name']} | {r['kind']} | {r['line']} | {r['state']} | util {_n(r['utilization'])}% | "
        f"{_n(r['temperature'])}°C | {_n(r['vibration'])} mm/s" for r in rows])


@_register("equipment", TrendArgs)
def get_sensor_trend(db: Path, equipment_id: str, metric: str = "all", days: int = 7) -> str:
    """Show the daily sensor trend of one machine over recent days.

    Lists one line per day (utilization %, temperature °C, vibration mm/s),
    the machine's limits, and the first-to-last change per metric.
    """
    row, err = _equipment(db, equipment_id)
    if row is None:
        return err
    start, end = _window(None, None, days)
    rows = _q(db, "SELECT * FROM sensor_readings WHERE equipment_id = ? AND day BETWEEN ? AND ? ORDER BY day",
              (row["id"], start, end))
    metrics = ("utilization", "temperature", "vibration") if metric == "all" else (metric,)
    unit = {"utilization": "%", "temperature": "°C", "vibration": " mm/s"}
    lines = [f"Sensor trend for {row['id']} ({row['name']}), {start} to {end}; limits: vibration "
             f"{_n(row['vib_threshold'])} mm/s, temperature {_n(row['temp_threshold'])}°C"]
    lines += [r["day"] + " | " + " | ".join(f"{m} {_n(r[m])}{unit[m]}" for m in metrics) for r in rows]
    for m in metrics:
        first, last = rows[0][m], rows[-1][m]
        lines.append(f"Change in {m}: {_n(first)} -> {_n(last)}{unit[m]} ({last - first:+.2f})")
    return "\n".join(lines)


@_register("equipment", CompareArgs)
def compare_equipment(db: Path, equipment_ids: list[str]) -> str:
    """Compare current readings, limits and alarms of 2-6 machines.

    One line per machine, readings shown with their limits, plus which machine
    is closest to (or furthest over) its vibration and temperature limits.
    """
    lines, known = [], []
    for eid in dict.fromkeys(normalize_equipment_id(e) for e in equipment_ids):
        row, err = _equipment(db, str(eid))
        if row is None:
            lines.append(err)
            continue
        known.append(row)
        n_alarms = _q(db, "SELECT COUNT(*) FROM alarms WHERE equipment_id = ? AND active = 1", (row["id"],))[0][0]
        lines.append(
            f"{row['id']} | {row['name']} | {row['state']} | util {_n(row['utilization'])}% | "
            f"temp {_n(row['temperature'])}°C (limit {_n(row['temp_threshold'])}) | vib {_n(row['vibration'])} mm/s "
            f"(limit {_n(row['vib_threshold'])}) | last inspection {row['last_inspection']} | active alarms {n_alarms}")
    if len(known) >= 2:
        for col, thr, label in (("vibration", "vib_threshold", "vibration"), ("temperature", "temp_threshold", "temperature")):
            worst = max(known, key=lambda r: r[col] / r[thr])
            lines.append(f"Highest {label} relative to limit: {worst['id']} ({_pct(worst[col], worst[thr])} of limit)")
    return "\n".join(lines)


@_register("equipment", LineFilterArgs)
def check_threshold_violations(db: Path, line: str | None = None) -> str:
    """Find machines whose temperature or vibration is near/over its limit.

    Lists readings at >= 90% of the limit as 'NEAR LIMIT' and above it as
    'EXCEEDED', with the reading as a percentage of the limit.
    """
    where, params = _where([("line = ?", line)])
    hits = []
    for r in _q(db, "SELECT * FROM equipment" + where + " ORDER BY id", params):
        for col, thr, unit in (("vibration", "vib_threshold", " mm/s"), ("temperature", "temp_threshold", "°C")):
            ratio = r[col] / r[thr]
            if ratio >= 0.9:
                flag = "EXCEEDED" if ratio > 1 else "NEAR LIMIT"
                hits.append(f"{r['id']} ({r['name']}) | {col} {_n(r[col])}{unit} vs limit {_n(r[thr])}{unit} "
                            f"({ratio:.0%}) | {flag}")
    scope = line or "the plant"
    return "\n".join([f"{len(hits)} limit issue(s) in {scope}:"] + hits) if hits else f"No readings at or above 90% of a limit in {scope}."


# --------------------------------------------------------------------------- alarms


@_register("alarms", ActiveAlarmArgs)
def list_active_alarms(db: Path, severity: str | None = None, equipment_id: str | None = None, line: str | None = None) -> str:
    """List currently active alarms, most severe first.

    One line per alarm: code | severity | equipment (name) | message | raised at
    (YYYY-MM-DD HH:MM).
    """
    if equipment_id is not None:
        row, err = _equipment(db, equipment_id)
        if row is None:
            return err
        equipment_id = row["id"]
    where, params = _where([("a.active = ?", 1), ("a.severity = ?", severity),
                            ("a.equipment_id = ?", equipment_id), ("e.line = ?", line)])
    rows = _q(db, "SELECT a.*, e.name FROM alarms a JOIN equipment e ON e.id = a.equipment_id" + where
              + f" ORDER BY {_SEVERITY_ORDER}, a.raised_at DESC", params)
    if not rows:
        return "No active alarms match these filters."
    return "\n".join([f"{len(rows)} active alarm(s):"] + [
        f"{r['code']} | {r['severity']} | {r['equipment_id']} ({r['name']}) | {r['message']} | raised {r['raised_at']}"
        for r in rows])


@_register("alarms", AlarmCodeArgs)
def get_alarm_details(db: Path, alarm_code: str) -> str:
    """Get details of an alarm code: machine, severity, times, status.

    One block per occurrence with equipment, severity, message, raised/cleared
    times, how long it has been active (as of 2026-01-29) and current readings.
    """
    rows = _q(db, "SELECT a.*, e.name, e.state, e.temperature, e.vibration FROM alarms a "
                  "JOIN equipment e ON e.id = a.equipment_id WHERE a.code = ? ORDER BY a.raised_at", (alarm_code,))
    if not rows:
        codes = [r[0] for r in _q(db, "SELECT DISTINCT code FROM alarms ORDER BY code")]
        return f"Unknown alarm code '{alarm_code}'. Known codes: {', '.join(codes)}."
    out = []
    for r in rows:
        raised = date.fromisoformat(r["raised_at"][:10])
        status = f"ACTIVE for {(REFERENCE_DATE - raised).days} day(s)" if r["active"] else f"cleared {r['cleared_at']}"
        out.append(f"Alarm {r['code']} ({r['severity']}): {r['message']}\nEquipment: {r['equipment_id']} ({r['name']}), "
                   f"state {r['state']}, temperature {_n(r['temperature'])}°C, vibration {_n(r['vibration'])} mm/s\n"
                   f"Raised: {r['raised_at']} | Status: {status}")
    return "\n".join(out)


@_register("alarms", AlarmHistoryArgs)
def get_alarm_history(db: Path, equipment_id: str | None = None, start_date: str | None = None,
                      end_date: str | None = None) -> str:
    """List alarms raised in a date range (active and cleared).

    Defaults to the 30 days up to 2026-01-29. One line per alarm: raised at |
    code | severity | equipment | message | 'active' or 'cleared <time>'.
    """
    start, end = _window(start_date, end_date, 30)
    if equipment_id is not None:
        row, err = _equipment(db, equipment_id)
        if row is None:
            return err
        equipment_id = row["id"]
    where, params = _where([("equipment_id = ?", equipment_id), ("substr(raised_at, 1, 10) BETWEEN ? AND ?", start)])
    rows = _q(db, "SELECT * FROM alarms" + where + " ORDER BY raised_at", [*params, end])
    if not rows:
        return f"No alarms raised between {start} and {end}" + (f" for {equipment_id}." if equipment_id else ".")
    return "\n".join([f"{len(rows)} alarm(s) raised {start} to {end}:"] + [
        f"{r['raised_at']} | {r['code']} | {r['severity']} | {r['equipment_id']} | {r['message']} | "
        + ("active" if r["active"] else f"cleared {r['cleared_at']}") for r in rows])


# --------------------------------------------------------------------------- maintenance


def _wo_line(r: sqlite3.Row) -> str:
    hours = f" | {_n(r['hours'])} h" if r["hours"] is not None else ""
    return f"{r['day']} | {r['wo_id']} | {r['equipment_id']} | {r['type']} | {r['status']} | {r['technician']}{hours} | {r['description']}"


@_register("maintenance", MaintHistoryArgs)
def get_maintenance_history(db: Path, equipment_id: str, limit: int = 10) -> str:
    """List past and in-progress work orders of one machine, newest first.

    One line per work order: date | WO id | equipment | type | status |
    technician | labour hours | description.
    """
    row, err = _equipment(db, equipment_id)
    if row is None:
        return err
    rows = _q(db, "SELECT * FROM maintenance WHERE equipment_id = ? AND status != 'scheduled' ORDER BY day DESC LIMIT ?",
              (row["id"], limit))
    if not rows:
        return f"No maintenance history for {row['id']}."
    return "\n".join([f"Maintenance history of {row['id']} ({row['name']}):"] + [_wo_line(r) for r in rows])


@_register("maintenance", ScheduledArgs)
def get_scheduled_maintenance(db: Path, equipment_id: str | None = None, days_ahead: int = 14) -> str:
    """List scheduled and in-progress work orders in the coming days.

    Window starts at 2026-01-29. One line per work order: date | WO id |
    equipment | type | status | technician | description.
    """
    if equipment_id is not None:
        row, err = _equipment(db, equipment_id)
        if row is None:
            return err
        equipment_id = row["id"]
    horizon = (REFERENCE_DATE + timedelta(days=days_ahead)).isoformat()
    where, params = _where([("equipment_id = ?", equipment_id),
                            ("(status = 'in_progress' OR (status = 'scheduled' AND day <= ?))", horizon)])
    rows = _q(db, "SELECT * FROM maintenance" + where + " ORDER BY day", params)
    if not rows:
        return f"No work orders scheduled up to {horizon}."
    return "\n".join([f"{len(rows)} open work order(s) up to {horizon}:"] + [_wo_line(r) for r in rows])


@_register("maintenance", DueArgs)
def get_maintenance_due(db: Path, within_days: int = 7, line: str | None = None) -> str:
    """List machines whose periodic inspection is overdue or due soon.

    Due date = last inspection + inspection interval; compared to 2026-01-29.
    Each line shows last inspection, interval, due date, OVERDUE/due-in days
    and any open work order for the machine.
    """
    where, params = _where([("line = ?", line)])
    out = []
    for r in _q(db, "SELECT * FROM equipment" + where + " ORDER BY id", params):
        due = date.fromisoformat(r["last_inspection"]) + timedelta(days=r["inspection_interval_days"])
        delta = (due - REFERENCE_DATE).days
        if delta > within_days:
            continue
        wo = _q(db, "SELECT wo_id, day FROM maintenance WHERE equipment_id = ? AND status != 'completed' ORDER BY day", (r["id"],))
        status = f"OVERDUE by {-delta} day(s)" if delta < 0 else f"due in {delta} day(s)"
        open_wo = ", ".join(f"{w['wo_id']} on {w['day']}" for w in wo) or "none"
        out.append((delta, f"{r['id']} ({r['name']}) | last inspection {r['last_inspection']} | every "
                           f"{r['inspection_interval_days']} d | due {due} | {status} | open work orders: {open_wo}"))
    if not out:
        return f"No inspections overdue or due within {within_days} day(s) of {REFERENCE_DATE}."
    return "\n".join([f"{len(out)} machine(s) overdue or due within {within_days} day(s):"] + [t for _, t in sorted(out)])


# --------------------------------------------------------------------------- production


@_register("production", LineRangeArgs)
def get_production_summary(db: Path, line: str, start_date: str | None = None, end_date: str | None = None) -> str:
    """Summarize daily output vs target, defects and downtime of a line.

    One line per day (output / target, attainment %, defects and defect rate,
    downtime min) followed by a totals line. Default: last 7 days.
    """
    start, end = _window(start_date, end_date)
    rows = _q(db, "SELECT day, SUM(output) o, SUM(target) t, SUM(defects) d, SUM(downtime_min) dt FROM production "
                  "WHERE line = ? AND day BETWEEN ? AND ? GROUP BY day ORDER BY day", (line, start, end))
    if not rows:
        return _no_data(f"production records for {line}", start, end)
    lines = [f"Production of {line}, {start} to {end}:"]
    lines += [f"{r['day']} | output {r['o']} / target {r['t']} ({_pct(r['o'], r['t'])}) | defects {r['d']} "
              f"({_pct(r['d'], r['o'])}) | downtime {r['dt']} min" for r in rows]
    o, t, d, dt = (sum(r[k] for r in rows) for k in ("o", "t", "d", "dt"))
    lines.append(f"Total | output {o} / target {t} ({_pct(o, t)}) | defects {d} ({_pct(d, o)}) | downtime {dt} min")
    return "\n".join(lines)


@_register("production", ShiftArgs)
def get_shift_output(db: Path, line: str, day: str) -> str:
    """Show per-shift output, target, defects and downtime for one day.

    Shifts: day, evening, night (weekends run the day shift only).
    """
    rows = _q(db, "SELECT * FROM production WHERE line = ? AND day = ? ORDER BY "
                  "CASE shift WHEN 'day' THEN 0 WHEN 'evening' THEN 1 ELSE 2 END", (line, day))
    if not rows:
        return _no_data(f"shifts for {line}", day, day)
    return "\n".join([f"Shift output of {line} on {day}:"] + [
        f"{r['shift']} shift | output {r['output']} / target {r['target']} ({_pct(r['output'], r['target'])}) | "
        f"defects {r['defects']} | downtime {r['downtime_min']} of {r['planned_min']} min" for r in rows])


@_register("production", LineRangeArgs)
def get_line_oee(db: Path, line: str, start_date: str | None = None, end_date: str | None = None) -> str:
    """Compute OEE (availability x performance x quality) for a line.

    Availability = run time / planned time; performance = output / (target x
    availability); quality = good / total output. All as %. Default: last 7 days.
    """
    start, end = _window(start_date, end_date)
    r = _q(db, "SELECT COUNT(*) n, SUM(output) o, SUM(target) t, SUM(defects) d, SUM(downtime_min) dt, "
               "SUM(planned_min) p FROM production WHERE line = ? AND day BETWEEN ? AND ?", (line, start, end))[0]
    if not r["n"]:
        return _no_data(f"production records for {line}", start, end)
    availability = (r["p"] - r["dt"]) / r["p"]
    performance = min(1.0, r["o"] / (r["t"] * availability)) if availability else 0.0
    quality = (r["o"] - r["d"]) / r["o"] if r["o"] else 0.0
    return "\n".join([
        f"OEE of {line}, {start} to {end} ({r['n']} shifts):",
        f"Availability: {availability:.1%} (downtime {r['dt']} of {r['p']} planned min)",
        f"Performance: {performance:.1%}",
        f"Quality: {quality:.1%} ({r['d']} defects of {r['o']} units)",
        f"OEE: {availability * performance * quality:.1%}",
    ])


@_register("production", OptLineRangeArgs)
def get_downtime_report(db: Path, line: str | None = None, start_date: str | None = None, end_date: str | None = None) -> str:
    """Report unplanned downtime per line and the worst shifts.

    Per line: total downtime minutes and share of planned time; then the
    three shifts with the most downtime. Default: last 7 days.
    """
    start, end = _window(start_date, end_date)
    where, params = _where([("line = ?", line), ("day BETWEEN ? AND ?", start)])
    params.append(end)
    per_line = _q(db, "SELECT line, SUM(downtime_min) dt, SUM(planned_min) p FROM production" + where
                  + " GROUP BY line ORDER BY line", params)
    if not per_line:
        return _no_data("production records", start, end)
    worst = _q(db, "SELECT line, day, shift, downtime_min FROM production" + where
               + " ORDER BY downtime_min DESC, day DESC LIMIT 3", params)
    lines = [f"Downtime {start} to {end}:"]
    lines += [f"{r['line']} | {r['dt']} min of {r['p']} planned ({_pct(r['dt'], r['p'])})" for r in per_line]
    lines += ["Worst shifts:"] + [f"{r['line']} | {r['day']} {r['shift']} shift | {r['downtime_min']} min" for r in worst]
    return "\n".join(lines)


# --------------------------------------------------------------------------- quality


@_register("quality", LineRangeArgs)
def get_defect_rate(db: Path, line: str, start_date: str | None = None, end_date: str | None = None) -> str:
    """Get a line's production defect rate per day and in total.

    Rates are defects / output in %, plus the number of failed sample
    inspections in the window. Default: last 7 days.
    """
    start, end = _window(start_date, end_date)
    rows = _q(db, "SELECT day, SUM(output) o, SUM(defects) d FROM production WHERE line = ? AND day BETWEEN ? AND ? "
                  "GROUP BY day ORDER BY day", (line, start, end))
    if not rows:
        return _no_data(f"production records for {line}", start, end)
    fails = _q(db, "SELECT COUNT(*) FROM quality_inspections WHERE line = ? AND result = 'fail' AND day BETWEEN ? AND ?",
               (line, start, end))[0][0]
    o, d = sum(r["o"] for r in rows), sum(r["d"] for r in rows)
    return "\n".join([f"Defect rate of {line}, {start} to {end}: {_pct(d, o)} ({d} of {o} units)"]
                     + [f"{r['day']} | {_pct(r['d'], r['o'])} ({r['d']} of {r['o']})" for r in rows]
                     + [f"Failed sample inspections: {fails}"])


@_register("quality", InspectionArgs)
def list_quality_inspections(db: Path, line: str | None = None, start_date: str | None = None, end_date: str | None = None,
                             result: str | None = None, limit: int = 20) -> str:
    """List sample quality inspections with result and defect breakdown.

    One line per inspection: id | line | date | product | defects / sample |
    pass/fail | defect types with counts. Default: last 7 days, newest first.
    """
    start, end = _window(start_date, end_date)
    where, params = _where([("q.line = ?", line), ("q.result = ?", result), ("q.day BETWEEN ? AND ?", start)])
    rows = _q(db, "SELECT q.*, group_concat(d.defect_type || ' x' || d.qty, ', ') kinds FROM quality_inspections q "
                  "LEFT JOIN quality_defects d ON d.inspection_id = q.id" + where
              + " GROUP BY q.id ORDER BY q.day DESC, q.id LIMIT ?", [*params, end, limit])
    if not rows:
        return _no_data("matching inspections", start, end)
    return "\n".join([f"{len(rows)} inspection(s):"] + [
        f"{r['id']} | {r['line']} | {r['day']} | {r['product']} | {r['defects']} / {r['sample_size']} | {r['result']} | "
        f"{r['kinds'] or 'no defects'}" for r in rows])


@_register("quality", TopDefectArgs)
def get_top_defects(db: Path, line: str | None = None, start_date: str | None = None, end_date: str | None = None,
                    limit: int = 5) -> str:
    """Rank defect types found in sample inspections by count.

    One line per defect type: rank | type | count | share of all defects.
    Default: last 7 days, all lines.
    """
    start, end = _window(start_date, end_date)
    where, params = _where([("q.line = ?", line), ("q.day BETWEEN ? AND ?", start)])
    rows = _q(db, "SELECT d.defect_type t, SUM(d.qty) n FROM quality_defects d JOIN quality_inspections q "
                  "ON q.id = d.inspection_id" + where + " GROUP BY d.defect_type ORDER BY n DESC, t", [*params, end])
    if not rows:
        return _no_data("recorded defects", start, end)
    total = sum(r["n"] for r in rows)
    return "\n".join([f"Top defects {start} to {end} ({line or 'all lines'}, {total} total):"] + [
        f"{i}. {r['t']} | {r['n']} | {_pct(r['n'], total)}" for i, r in enumerate(rows[:limit], 1)])


# --------------------------------------------------------------------------- inventory


def _part_line(r: sqlite3.Row) -> str:
    status = "OUT OF STOCK" if r["stock"] == 0 else "LOW" if r["stock"] <= r["reorder_level"] else "ok"
    kind = "all kinds" if r["kind"] == "any" else r["kind"]
    return (f"{r['part_no']} | {r['name']} | for {kind} | stock {r['stock']} (reorder at {r['reorder_level']}) | "
            f"{status} | {r['location']} | lead time {r['lead_time_days']} d | ${r['unit_cost']:.2f}")


@_register("inventory", PartQueryArgs)
def check_spare_part_stock(db: Path, query: str) -> str:
    """Look up spare-part stock by part number or name words.

    One line per matching part: part no | name | compatible kind | stock
    (reorder level) | ok/LOW/OUT OF STOCK | location | lead time | unit cost.
    """
    text = query.strip()
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = _q(db, "SELECT * FROM parts WHERE part_no = ? OR name LIKE ? ESCAPE '\\' OR kind LIKE ? ESCAPE '\\' "
                  "ORDER BY part_no", (text.upper(), like, like))
    if not rows:
        return f"No spare part matches '{text}'. Use a part number like P-1001 or a word such as 'bearing' or 'filter'."
    return "\n".join(_part_line(r) for r in rows)


@_register("inventory", KindFilterArgs)
def list_low_stock_parts(db: Path, kind: str | None = None) -> str:
    """List spare parts at or below their reorder level.

    Same line format as check_spare_part_stock; out-of-stock parts first.
    """
    sql = "SELECT * FROM parts WHERE stock <= reorder_level"
    rows = _q(db, sql + (" AND (kind = ? OR kind = 'any')" if kind else "") + " ORDER BY stock, part_no",
              (kind,) if kind else ())
    if not rows:
        return "No spare parts at or below reorder level."
    return "\n".join([f"{len(rows)} part(s) at or below reorder level:"] + [_part_line(r) for r in rows])


@_register("inventory", EquipmentArgs)
def find_parts_for_equipment(db: Path, equipment_id: str) -> str:
    """List spare parts compatible with a machine and their stock.

    Matches parts for the machine's kind plus general-purpose parts; same
    line format as check_spare_part_stock.
    """
    row, err = _equipment(db, equipment_id)
    if row is None:
        return err
    rows = _q(db, "SELECT * FROM parts WHERE kind = ? OR kind = 'any' ORDER BY part_no", (row["kind"],))
    return "\n".join([f"Spare parts for {row['id']} ({row['name']}, {row['kind']}):"] + [_part_line(r) for r in rows])


# --------------------------------------------------------------------------- energy


@_register("energy", EnergyArgs)
def get_energy_usage(db: Path, equipment_id: str | None = None, line: str | None = None, start_date: str | None = None,
                     end_date: str | None = None) -> str:
    """Report electricity use in kWh for a machine, a line or the plant.

    For one machine: kWh per day and total. Otherwise: total kWh and one line
    per machine with its kWh and share. Default: last 7 days.
    """
    start, end = _window(start_date, end_date)
    if equipment_id is not None:
        row, err = _equipment(db, equipment_id)
        if row is None:
            return err
        rows = _q(db, "SELECT day, kwh FROM energy WHERE equipment_id = ? AND day BETWEEN ? AND ? ORDER BY day",
                  (row["id"], start, end))
        if not rows:
            return _no_data(f"energy data for {row['id']}", start, end)
        total = sum(r["kwh"] for r in rows)
        return "\n".join([f"Energy of {row['id']} ({row['name']}), {start} to {end}: {total:.1f} kWh"]
                         + [f"{r['day']} | {r['kwh']:.1f} kWh" for r in rows])
    where, params = _where([("e.line = ?", line), ("g.day BETWEEN ? AND ?", start)])
    rows = _q(db, "SELECT g.equipment_id id, e.name, SUM(g.kwh) kwh FROM energy g JOIN equipment e ON e.id = g.equipment_id"
              + where + " GROUP BY g.equipment_id ORDER BY kwh DESC", [*params, end])
    if not rows:
        return _no_data("energy data", start, end)
    total = sum(r["kwh"] for r in rows)
    return "\n".join([f"Energy of {line or 'the plant'}, {start} to {end}: {total:.1f} kWh"]
                     + [f"{r['id']} ({r['name']}) | {r['kwh']:.1f} kWh | {_pct(r['kwh'], total)}" for r in rows])


@_register("energy", TopEnergyArgs)
def get_top_energy_consumers(db: Path, start_date: str | None = None, end_date: str | None = None, limit: int = 5) -> str:
    """Rank machines by electricity use (kWh) in a date range.

    One line per machine: rank | id (name) | kWh | share of plant total.
    """
    start, end = _window(start_date, end_date)
    rows = _q(db, "SELECT g.equipment_id id, e.name, SUM(g.kwh) kwh FROM energy g JOIN equipment e ON e.id = g.equipment_id "
                  "WHERE g.day BETWEEN ? AND ? GROUP BY g.equipment_id ORDER BY kwh DESC", (start, end))
    if not rows:
        return _no_data("energy data", start, end)
    total = sum(r["kwh"] for r in rows)
    return "\n".join([f"Top energy consumers {start} to {end} (plant total {total:.1f} kWh):"] + [
        f"{i}. {r['id']} ({r['name']}) | {r['kwh']:.1f} kWh | {_pct(r['kwh'], total)}" for i, r in enumerate(rows[:limit], 1)])


@_register("maintenance", WorkOrderArgs)
def create_work_order(db: Path, equipment_id: str, description: str, priority: str = "normal") -> str:
    """Create a maintenance work order for one machine (a person must approve it).

    Returns the new work order id, the machine, the priority and the task.
    """
    row, err = _equipment(db, equipment_id)
    if row is None:
        return err
    con = connect_for_writes(db)
    try:
        con.execute("BEGIN IMMEDIATE")
        count = con.execute("SELECT COUNT(*) FROM work_order_requests").fetchone()[0]
        wo_id = f"WO-R{count + 1:04d}"
        con.execute("INSERT INTO work_order_requests VALUES (?,?,?,?,?)",
                    (wo_id, row["id"], priority, description.strip(), datetime.now(timezone.utc).isoformat(timespec="seconds")))
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    finally:
        con.close()
    return f"Created work order {wo_id} for {row['id']} ({row['name']}): priority {priority}, task: {description.strip()}. Status: requested."


# --------------------------------------------------------------------------- hub

KEYWORDS: dict[str, tuple[str, ...]] = {
    "get_equipment_status": ("status", "state", "condition", "check", "reading", "current", "machine",
                             "running", "normal", "health", "working",
                             "상태", "현황", "확인", "점검", "장비", "설비", "현재"),
    "list_equipment": ("list", "all", "machines", "inventory of equipment", "which", "목록", "전체", "장비", "설비"),
    "get_sensor_trend": ("trend", "history", "daily", "over time", "temperature", "vibration", "utilization",
                         "추이", "추세", "변화", "온도", "진동", "가동률", "센서"),
    "compare_equipment": ("compare", "comparison", "versus", "vs", "difference", "between", "비교", "차이", "대비"),
    "check_threshold_violations": ("threshold", "limit", "exceed", "over", "overheating", "within limits",
                                   "한계", "초과", "임계", "기준", "과열"),
    "list_active_alarms": ("alarms", "active", "alerts", "warnings", "critical", "알람", "경보", "경고", "활성"),
    "get_alarm_details": ("alarm code", "details", "meaning", "알람", "코드", "상세", "내용"),
    "get_alarm_history": ("alarm history", "past alarms", "raised", "cleared", "알람", "이력", "기록", "과거"),
    "get_maintenance_history": ("maintenance history", "work orders", "repairs", "past maintenance",
                                "정비", "보수", "수리", "이력", "작업", "내역"),
    "get_scheduled_maintenance": ("scheduled", "upcoming", "planned", "next maintenance", "정비", "예정", "계획", "일정"),
    "get_maintenance_due": ("due", "overdue", "inspection", "periodic", "점검", "예정", "기한", "도래", "지연"),
    "create_work_order": ("create work order", "new work order", "request maintenance", "schedule a repair", "fix",
                          "작업지시", "작업 지시", "정비 요청", "수리 요청", "생성"),
    "get_production_summary": ("production", "output", "target", "summary", "생산", "생산량", "실적", "목표", "요약"),
    "get_shift_output": ("shift", "day", "per shift", "교대", "근무조", "일별", "생산"),
    "get_line_oee": ("oee", "efficiency", "availability", "performance", "설비종합효율", "효율", "가용률", "성능"),
    "get_downtime_report": ("downtime", "stoppage", "unplanned", "stopped", "비가동", "정지", "중단", "다운타임"),
    "get_defect_rate": ("defect rate", "scrap", "yield", "quality", "불량률", "불량", "수율", "품질"),
    "list_quality_inspections": ("quality", "inspections", "pass", "fail", "sample", "품질", "검사", "합격", "불합격"),
    "get_top_defects": ("defect types", "top defects", "most common defects", "불량", "유형", "결함", "상위"),
    "check_spare_part_stock": ("spare part", "stock", "part number", "inventory", "부품", "재고", "예비품", "수량"),
    "list_low_stock_parts": ("low stock", "reorder", "shortage", "out of stock", "부족", "재고", "재주문", "품절", "부품"),
    "find_parts_for_equipment": ("compatible parts", "parts for", "spare parts for", "호환", "부품", "예비품", "장비"),
    "get_energy_usage": ("energy", "electricity", "power", "kwh", "consumption", "에너지", "전력", "전기", "사용량"),
    "get_top_energy_consumers": ("top consumers", "most energy", "ranking", "largest", "에너지", "전력", "순위", "많이"),
}
"""Search words of each tool beyond its name and description (English synonyms and the
Korean the plant's users write), read by relevance ranking (SPEC R13.1) through
``tool.metadata["keywords"]``."""

WRITE_TOOLS = frozenset({"create_work_order"})
"""Tools that change the plant: their ``metadata["approval"]`` is ``"always"``, so a person
approves each call before it runs (SPEC R13.3)."""

CONNECTORS: dict[str, list[str]] = {}
for _connector, _fn, _schema in _REGISTRY:
    CONNECTORS.setdefault(_connector, []).append(_fn.__name__)


def _bind(fn: Callable[..., str], db: Path) -> Callable[..., str]:
    def call(**kwargs: object) -> str:
        return fn(db, **kwargs)

    call.__name__ = fn.__name__
    return call


def build_factory_hub(db_path: str | Path | None = None) -> list[BaseTool]:
    """Return the plant's tools, bound to a seeded database.

    ``db_path`` defaults to :func:`~reactgraph.demo.factory.db.default_db_path`;
    :func:`ensure_database` is called first (creating and seeding the file if
    needed). Tools are sync, thread-safe and ordered by connector (see
    :data:`CONNECTORS`); each carries ``metadata={"connector": name, "keywords": [...]}``
    (:data:`KEYWORDS`). The query tools read through read-only connections; the
    :data:`WRITE_TOOLS` write through a connection of their own and carry
    ``metadata["approval"] = "always"``; every tool declares ``metadata["side_effects"]``
    (only the write tools have any: a repeated read runs again).
    """
    db = ensure_database(db_path)
    return [
        StructuredTool.from_function(
            func=_bind(fn, db), name=fn.__name__, description=inspect.cleandoc(fn.__doc__ or fn.__name__),
            args_schema=schema,
            metadata={"connector": connector, "keywords": list(KEYWORDS.get(fn.__name__, ())),
                      "side_effects": fn.__name__ in WRITE_TOOLS,
                      **({"approval": "always"} if fn.__name__ in WRITE_TOOLS else {})},
            tags=[f"connector:{connector}"],
        )
        for connector, fn, schema in _REGISTRY
    ]
