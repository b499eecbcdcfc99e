"""Demo domains for reactgraph.

Sub-packages provide self-contained, offline tool hubs that exercise the engine
with realistic data. ``reactgraph.demo.factory`` is the seed-003 demo plant: a
factory equipment-management domain backed by an embedded SQLite database.
"""
