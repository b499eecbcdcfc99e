"""Embedded SQLite database for the seed-003 demo plant.

The database is created and seeded on first use by :func:`ensure_database`.
Seeding is deterministic (fixed data plus ``random.Random(3)`` for the daily
series) and idempotent: a ``meta`` row marks a seeded file, and the check runs
inside ``BEGIN IMMEDIATE`` so two processes racing on a fresh file seed it once.

Tables (units in brackets):

* ``equipment``  - machines: id (``CNC-003``), name, kind, line, location,
  state (normal/warning/stopped), utilization [%], temperature [°C],
  vibration [mm/s], last_inspection (YYYY-MM-DD), vib_threshold [mm/s],
  temp_threshold [°C], inspection_interval_days, rated_kw [kW].
* ``sensor_readings`` - daily utilization/temperature/vibration per machine.
* ``alarms`` - alarm code (``W-1105``), equipment, severity (info/warning/
  critical), message, raised_at / cleared_at (``YYYY-MM-DD HH:MM``), active.
* ``maintenance`` - work orders (completed, in_progress, scheduled).
* ``production`` - output/target/defects/downtime [min] per line, date, shift.
* ``quality_inspections`` + ``quality_defects`` - sampled inspections.
* ``parts`` - spare parts with stock, reorder level, compatible equipment kind.
* ``energy`` - daily consumption [kWh] per machine.

All data is pinned to the reference date :data:`REFERENCE_DATE` (2026-01-29).
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta
from pathlib import Path

from reactgraph.core.paths import data_home

REFERENCE_DATE = date(2026, 1, 29)
DATA_START = date(2026, 1, 16)
DAYS = [DATA_START + timedelta(days=i) for i in range((REFERENCE_DATE - DATA_START).days + 1)]
SEED_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS equipment (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, line TEXT NOT NULL,
    location TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('normal','warning','stopped')),
    utilization REAL NOT NULL, temperature REAL NOT NULL, vibration REAL NOT NULL,
    last_inspection TEXT NOT NULL, vib_threshold REAL NOT NULL, temp_threshold REAL NOT NULL,
    inspection_interval_days INTEGER NOT NULL, rated_kw REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sensor_readings (
    equipment_id TEXT NOT NULL REFERENCES equipment(id), day TEXT NOT NULL,
    utilization REAL NOT NULL, temperature REAL NOT NULL, vibration REAL NOT NULL,
    PRIMARY KEY (equipment_id, day));
CREATE TABLE IF NOT EXISTS alarms (
    id INTEGER PRIMARY KEY, code TEXT NOT NULL, equipment_id TEXT NOT NULL REFERENCES equipment(id),
    severity TEXT NOT NULL CHECK (severity IN ('info','warning','critical')), message TEXT NOT NULL,
    raised_at TEXT NOT NULL, cleared_at TEXT, active INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS maintenance (
    wo_id TEXT PRIMARY KEY, equipment_id TEXT NOT NULL REFERENCES equipment(id),
    type TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('completed','in_progress','scheduled')),
    day TEXT NOT NULL, technician TEXT NOT NULL, hours REAL, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS production (
    line TEXT NOT NULL, day TEXT NOT NULL, shift TEXT NOT NULL, output INTEGER NOT NULL,
    target INTEGER NOT NULL, defects INTEGER NOT NULL, downtime_min INTEGER NOT NULL,
    planned_min INTEGER NOT NULL, PRIMARY KEY (line, day, shift));
CREATE TABLE IF NOT EXISTS quality_inspections (
    id TEXT PRIMARY KEY, line TEXT NOT NULL, day TEXT NOT NULL, product TEXT NOT NULL,
    sample_size INTEGER NOT NULL, defects INTEGER NOT NULL, result TEXT NOT NULL, inspector TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS quality_defects (
    inspection_id TEXT NOT NULL REFERENCES quality_inspections(id), defect_type TEXT NOT NULL,
    qty INTEGER NOT NULL, PRIMARY KEY (inspection_id, defect_type));
CREATE TABLE IF NOT EXISTS parts (
    part_no TEXT PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, stock INTEGER NOT NULL,
    reorder_level INTEGER NOT NULL, unit_cost REAL NOT NULL, location TEXT NOT NULL,
    lead_time_days INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS energy (
    equipment_id TEXT NOT NULL REFERENCES equipment(id), day TEXT NOT NULL, kwh REAL NOT NULL,
    PRIMARY KEY (equipment_id, day));
"""

# id, name, kind, line, location, state, util %, temp °C, vib mm/s, last inspection,
# vib threshold, temp threshold, inspection interval (days), rated kW
EQUIPMENT = [
    ("CNC-001", "CNC Mill #1", "CNC mill", "Line A", "Bay 1", "normal", 85.4, 41.2, 0.3, "2026-01-15", 0.5, 60, 30, 22.0),
    ("CNC-002", "CNC Mill #2", "CNC mill", "Line A", "Bay 1", "normal", 81.0, 43.5, 0.35, "2026-01-08", 0.5, 60, 30, 22.0),
    ("CNC-003", "CNC Lathe #1", "CNC lathe", "Line A", "Bay 2", "warning", 72.3, 48.7, 1.2, "2026-01-10", 0.5, 60, 30, 18.5),
    ("CNC-004", "CNC Lathe #2", "CNC lathe", "Line A", "Bay 2", "normal", 78.6, 44.1, 0.4, "2026-01-20", 0.5, 60, 30, 18.5),
    ("PRS-001", "Stamping Press 400t", "press", "Line B", "Bay 3", "normal", 76.2, 52.0, 2.1, "2026-01-12", 3.5, 70, 45, 55.0),
    ("PRS-002", "Stamping Press 250t", "press", "Line B", "Bay 3", "normal", 69.8, 49.3, 1.8, "2026-01-05", 3.5, 70, 45, 37.0),
    ("RBT-001", "Welding Robot #1", "robot", "Line B", "Bay 4", "normal", 88.1, 38.4, 0.6, "2025-12-28", 1.5, 55, 60, 7.5),
    ("RBT-002", "Handling Robot #2", "robot", "Line C", "Bay 6", "normal", 74.5, 36.9, 0.5, "2025-11-20", 1.5, 55, 60, 7.5),
    ("CNV-001", "Transfer Conveyor B1", "conveyor", "Line B", "Bay 4", "normal", 91.0, 31.5, 0.8, "2026-01-02", 2.0, 50, 45, 3.7),
    ("CNV-002", "Outfeed Conveyor C1", "conveyor", "Line C", "Bay 6", "normal", 86.7, 33.2, 0.9, "2025-12-01", 2.0, 50, 45, 3.7),
    ("INJ-001", "Injection Molder 350t", "injection molder", "Line C", "Bay 5", "normal", 83.9, 62.4, 0.7, "2026-01-14", 1.8, 80, 30, 45.0),
    ("INJ-002", "Injection Molder 180t", "injection molder", "Line C", "Bay 5", "warning", 79.2, 78.5, 0.8, "2026-01-06", 1.8, 75, 30, 30.0),
    ("CMP-001", "Air Compressor #1", "compressor", "Utility", "Compressor room", "normal", 64.0, 71.2, 2.4, "2026-01-18", 4.5, 90, 30, 75.0),
    ("CMP-002", "Air Compressor #2", "compressor", "Utility", "Compressor room", "stopped", 0.0, 24.5, 0.0, "2025-12-22", 4.5, 90, 30, 75.0),
]

# code, equipment, severity, message, raised_at, cleared_at (None = still active)
ALARMS = [
    ("I-0409", "CNV-001", "info", "belt tracking adjusted", "2026-01-06 07:45", "2026-01-06 08:10"),
    ("W-1102", "CNC-001", "warning", "coolant level low", "2026-01-09 13:05", "2026-01-09 14:20"),
    ("E-2104", "PRS-001", "critical", "die overload protection tripped", "2026-01-12 10:32", "2026-01-12 16:05"),
    ("W-1103", "CNC-004", "warning", "spindle load high", "2026-01-14 21:47", "2026-01-14 22:30"),
    ("I-0412", "CNV-002", "info", "inspection overdue", "2026-01-16 00:00", None),
    ("W-4107", "RBT-001", "warning", "weld current deviation", "2026-01-19 11:20", "2026-01-19 12:02"),
    ("W-3302", "CMP-001", "warning", "oil temperature high", "2026-01-21 15:55", "2026-01-21 18:40"),
    ("W-1105", "CNC-003", "warning", "vibration rising", "2026-01-22 10:15", None),
    ("W-2210", "INJ-002", "warning", "barrel temperature above threshold", "2026-01-24 15:40", None),
    ("E-3301", "CMP-002", "critical", "discharge pressure drop, unit tripped", "2026-01-27 03:12", None),
]

# wo_id, equipment, type, status, day, technician, hours, description
MAINTENANCE = [
    ("WO-250388", "RBT-002", "inspection", "completed", "2025-11-20", "S. Lee", 2.0, "Routine inspection; cable dress and grease OK"),
    ("WO-250401", "CNV-002", "inspection", "completed", "2025-12-01", "D. Choi", 1.5, "Belt and roller inspection; no findings"),
    ("WO-250412", "CNC-003", "inspection", "completed", "2025-12-11", "J. Park", 1.5, "Routine inspection; spindle runout 3 µm, OK"),
    ("WO-250430", "CMP-002", "inspection", "completed", "2025-12-22", "D. Choi", 1.0, "Routine inspection; unloader valve response slow, monitor"),
    ("WO-250441", "RBT-001", "preventive", "completed", "2025-12-28", "S. Lee", 3.0, "Replaced welding tip, recalibrated TCP"),
    ("WO-260001", "CNV-001", "inspection", "completed", "2026-01-02", "D. Choi", 1.0, "Belt tracking adjusted, rollers OK"),
    ("WO-260004", "PRS-002", "inspection", "completed", "2026-01-05", "M. Kim", 2.0, "Hydraulic pressure and die alignment OK"),
    ("WO-260005", "INJ-002", "inspection", "completed", "2026-01-06", "M. Kim", 1.5, "Heater bands checked; zone 3 draws slightly high current"),
    ("WO-260006", "CNC-002", "inspection", "completed", "2026-01-08", "J. Park", 1.5, "Routine inspection; no findings"),
    ("WO-260007", "CNC-003", "inspection", "completed", "2026-01-10", "J. Park", 2.0, "Spindle bearing inspection; minor wear noted, re-check in 3 weeks"),
    ("WO-260009", "PRS-001", "corrective", "completed", "2026-01-12", "M. Kim", 5.5, "Reset overload protection, inspected and reshimmed die"),
    ("WO-260011", "INJ-001", "inspection", "completed", "2026-01-14", "M. Kim", 1.5, "Screw and check ring wear within limits"),
    ("WO-260013", "CNC-001", "preventive", "completed", "2026-01-15", "J. Park", 2.5, "Coolant flush and way-lube refill"),
    ("WO-260016", "CMP-001", "preventive", "completed", "2026-01-18", "D. Choi", 2.0, "Oil change and air filter replacement"),
    ("WO-260019", "CNC-004", "inspection", "completed", "2026-01-20", "J. Park", 1.5, "Spindle load check after W-1103; OK"),
    ("WO-260027", "CMP-002", "corrective", "in_progress", "2026-01-27", "D. Choi", None, "Diagnose discharge pressure drop; suspect unloader valve"),
    ("WO-260029", "INJ-002", "corrective", "scheduled", "2026-01-30", "M. Kim", None, "Check heater band zone 3 and thermocouple (P-5001, P-5002)"),
    ("WO-260030", "RBT-002", "inspection", "scheduled", "2026-01-30", "S. Lee", None, "Overdue 60-day inspection"),
    ("WO-260032", "CMP-002", "corrective", "scheduled", "2026-01-31", "D. Choi", None, "Replace unloader valve kit (P-7002)"),
    ("WO-260033", "CNV-002", "inspection", "scheduled", "2026-02-02", "D. Choi", None, "Overdue belt and roller inspection"),
    ("WO-260031", "CNC-003", "corrective", "scheduled", "2026-02-03", "J. Park", None, "Replace spindle bearing (P-1001), check tailstock alignment"),
    ("WO-260035", "PRS-002", "preventive", "scheduled", "2026-02-10", "M. Kim", None, "Hydraulic oil filter change (P-2002)"),
]

# part_no, name, compatible kind ('any' = all kinds), stock, reorder level, unit cost USD, location, lead time days
PARTS = [
    ("P-1001", "Spindle bearing 7014C", "CNC lathe", 1, 2, 420.0, "Store A-03", 14),
    ("P-1002", "Chuck jaw set, 3-jaw", "CNC lathe", 4, 2, 185.0, "Store A-03", 7),
    ("P-1101", "Carbide end mill 12 mm", "CNC mill", 36, 20, 28.5, "Store A-01", 5),
    ("P-1102", "Spindle drawbar spring", "CNC mill", 2, 2, 95.0, "Store A-01", 10),
    ("P-2001", "Die cushion seal kit", "press", 3, 2, 310.0, "Store B-02", 21),
    ("P-2002", "Hydraulic oil filter", "press", 1, 3, 64.0, "Store B-02", 7),
    ("P-3001", "Welding tip CuCrZr", "robot", 48, 30, 6.8, "Store B-05", 5),
    ("P-3002", "Servo encoder cable 5 m", "robot", 2, 1, 145.0, "Store B-05", 12),
    ("P-4001", "Conveyor belt 600 mm x 10 m", "conveyor", 1, 1, 890.0, "Store C-01", 20),
    ("P-4002", "Roller bearing 6204-2RS", "conveyor", 24, 10, 7.2, "Store C-01", 4),
    ("P-5001", "Heater band 60 mm, 400 W", "injection molder", 0, 2, 78.0, "Store C-04", 9),
    ("P-5002", "Thermocouple type J", "injection molder", 5, 3, 22.0, "Store C-04", 5),
    ("P-5003", "Check ring (non-return valve)", "injection molder", 2, 1, 265.0, "Store C-04", 18),
    ("P-7001", "Compressor intake air filter", "compressor", 6, 4, 48.0, "Utility store", 6),
    ("P-7002", "Unloader valve kit", "compressor", 1, 1, 530.0, "Utility store", 15),
    ("P-9001", "Coolant concentrate 20 L", "any", 8, 4, 96.0, "Store A-05", 3),
]

LINES = {  # line -> (target per shift, base defect rate, product, sample size, defect types)
    "Line A": (420, 0.008, "Drive shaft DS-20", 50, ("dimensional out of tolerance", "surface roughness", "burr")),
    "Line B": (600, 0.012, "Bracket BK-7", 80, ("crack", "wrinkle", "dent")),
    "Line C": (900, 0.015, "Housing HC-3", 100, ("short shot", "flash", "sink mark", "warpage")),
}
SHIFTS = ("day", "evening", "night")
_PROFILES = {  # equipment -> metric -> (value on DATA_START, curve)
    "CNC-003": {"vibration": (0.35, "quad"), "temperature": (42.0, "lin"), "utilization": (84.0, "lin")},
    "INJ-002": {"temperature": (70.0, "lin")},
}
_METRICS = ("utilization", "temperature", "vibration")


def default_db_path() -> Path:
    """Return the default database location: ``factory.db`` under
    :func:`reactgraph.core.paths.data_home` (``$REACTGRAPH_HOME``, else the XDG data directory)."""
    return data_home() / "factory.db"


def connect_readonly(path: str | Path) -> sqlite3.Connection:
    """Open ``path`` read-only (``file:...?mode=ro`` URI) with ``sqlite3.Row`` rows.

    Any write through the connection raises ``sqlite3.OperationalError``, and so does
    ``ATTACH`` (the connection may attach no database: an attached file would be opened
    read-write); a missing file raises ``sqlite3.OperationalError`` too (call
    :func:`ensure_database` first). The connection may be used across threads
    (``check_same_thread=False``) but callers should not share one concurrently.
    """
    uri = Path(path).expanduser().resolve().as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30)
    con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    con.row_factory = sqlite3.Row
    return con


WORK_ORDER_REQUESTS = """CREATE TABLE IF NOT EXISTS work_order_requests (
    wo_id TEXT PRIMARY KEY, equipment_id TEXT NOT NULL, priority TEXT NOT NULL
    CHECK (priority IN ('low','normal','high','urgent')), description TEXT NOT NULL, created_at TEXT NOT NULL)"""
"""The table the demo's write tool (``create_work_order``) writes: work orders requested
through the agent, kept apart from the seeded ``maintenance`` history."""


def connect_for_writes(path: str | Path) -> sqlite3.Connection:
    """Open ``path`` read-write for the plant's write tools, separate from the read-only
    connections of the query tools; creates :data:`WORK_ORDER_REQUESTS` if needed.

    The connection is in autocommit mode (``isolation_level=None``): callers open their
    own ``BEGIN IMMEDIATE`` transaction. ``ATTACH`` is refused as on the read-only ones.

    Raises:
        sqlite3.Error: The file cannot be opened for writing.
    """
    con = sqlite3.connect(Path(path).expanduser().resolve(), timeout=30, isolation_level=None, check_same_thread=False)
    con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    con.row_factory = sqlite3.Row
    con.execute(WORK_ORDER_REQUESTS)
    return con


def _is_seeded(path: Path) -> bool:
    try:
        con = connect_readonly(path)
    except sqlite3.Error:
        return False
    try:
        return con.execute("SELECT value FROM meta WHERE key = 'seed_version'").fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        con.close()


def ensure_database(path: str | Path | None = None) -> Path:
    """Create, migrate and seed the plant database if needed; return its path.

    ``path`` defaults to :func:`default_db_path`. Parent directories are
    created. Safe to call repeatedly and from several processes at once: the
    schema and seed are written in one ``BEGIN IMMEDIATE`` transaction guarded
    by a ``meta.seed_version`` marker, so an already seeded file is left alone.
    Raises ``sqlite3.Error``/``OSError`` if the location is not writable.
    """
    db = Path(path).expanduser() if path is not None else default_db_path()
    db = db.resolve()
    if db.exists() and _is_seeded(db):
        return db
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            # executescript() would COMMIT early, so run the DDL statement by statement.
            for stmt in filter(str.strip, _SCHEMA.split(";")):
                con.execute(stmt)
            if con.execute("SELECT 1 FROM meta WHERE key = 'seed_version'").fetchone() is None:
                _seed(con)
                con.execute("INSERT INTO meta (key, value) VALUES ('seed_version', ?)", (SEED_VERSION,))
                con.execute("INSERT INTO meta (key, value) VALUES ('reference_date', ?)", (REFERENCE_DATE.isoformat(),))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return db


def _curve(start: float, end: float, t: float, shape: str) -> float:
    return start + (end - start) * (t * t if shape == "quad" else t)


def _seed(con: sqlite3.Connection) -> None:
    rng = random.Random(3)
    con.executemany("INSERT INTO equipment VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", EQUIPMENT)
    con.executemany(
        "INSERT INTO alarms (code, equipment_id, severity, message, raised_at, cleared_at, active) VALUES (?,?,?,?,?,?,?)",
        [(*a, 1 if a[5] is None else 0) for a in ALARMS],
    )
    con.executemany("INSERT INTO maintenance VALUES (?,?,?,?,?,?,?,?)", MAINTENANCE)
    con.executemany("INSERT INTO parts VALUES (?,?,?,?,?,?,?,?)", PARTS)

    last = len(DAYS) - 1
    for eq in EQUIPMENT:
        eid, current, kw = eq[0], dict(zip(_METRICS, eq[6:9])), eq[13]
        for i, day in enumerate(DAYS):
            t = i / last
            if eid == "CMP-002" and day >= date(2026, 1, 27):  # tripped on 2026-01-27
                values = dict(current) if i == last else {"utilization": 0.0, "temperature": 26.0, "vibration": 0.0}
            elif eid == "CMP-002":
                values = {"utilization": 62 + rng.uniform(-3, 3), "temperature": 70 + rng.uniform(-2, 2),
                          "vibration": 2.3 + rng.uniform(-0.2, 0.2)}
            else:
                values = {}
                for m in _METRICS:
                    start, shape = _PROFILES.get(eid, {}).get(m, (current[m], "lin"))
                    noise = 0.0 if i == last else rng.uniform(-0.03, 0.03) * (current[m] or 1) * (0.3 if m != "utilization" else 1)
                    values[m] = _curve(start, current[m], t, shape) + noise
            con.execute(
                "INSERT INTO sensor_readings VALUES (?,?,?,?,?)",
                (eid, day.isoformat(), round(values["utilization"], 1), round(values["temperature"], 1),
                 round(max(values["vibration"], 0.0), 2)),
            )
            kwh = kw * 24 * values["utilization"] / 100 * rng.uniform(0.88, 0.97) + (0.0 if values["utilization"] else kw * 0.2)
            con.execute("INSERT INTO energy VALUES (?,?,?)", (eid, day.isoformat(), round(kwh, 1)))

    inspectors = ("H. Jung", "Y. Han", "E. Seo")
    for line, (target, base_rate, product, sample, defect_types) in LINES.items():
        for day in DAYS:
            weekend = day.weekday() >= 5
            for shift in SHIFTS[:1] if weekend else SHIFTS:
                rate, downtime, defect_rate = rng.uniform(0.90, 0.98), rng.randint(0, 35), base_rate
                if line == "Line A" and day >= date(2026, 1, 22):  # CNC-003 slowed down for vibration
                    rate, downtime = rate - 0.06, downtime + rng.randint(15, 40)
                if line == "Line C" and day >= date(2026, 1, 24):  # INJ-002 running hot
                    defect_rate = 0.035
                output = int(target * rate)
                defects = max(0, int(round(output * defect_rate * rng.uniform(0.7, 1.3))))
                con.execute("INSERT INTO production VALUES (?,?,?,?,?,?,?,?)",
                            (line, day.isoformat(), shift, output, target, defects, downtime, 480))
            if weekend:
                continue
            qi = f"QI-{line[-1]}-{day:%m%d}"
            sick = line == "Line C" and day >= date(2026, 1, 24)
            counts = {d: rng.choice((0, 0, 0, 1, 1)) for d in defect_types}
            if sick:
                counts["short shot"] += rng.randint(2, 3)
                counts["sink mark"] += rng.randint(1, 2)
            total = sum(counts.values())
            result = "fail" if total / sample > 0.05 else "pass"
            con.execute("INSERT INTO quality_inspections VALUES (?,?,?,?,?,?,?,?)",
                        (qi, line, day.isoformat(), product, sample, total, result, rng.choice(inspectors)))
            con.executemany("INSERT INTO quality_defects VALUES (?,?,?)",
                            [(qi, d, n) for d, n in counts.items() if n])
