"""The nesting bound and the store's text rule (``reactgraph.core.bounds``)."""

from __future__ import annotations

import json

import pytest

from reactgraph.core.bounds import (
    MAX_NESTING_DEPTH,
    json_text_too_deep,
    nesting_depth,
    storable_problem,
    store_safe,
)
from reactgraph.persistence.checkpointing import json_bytes


def nested(depth: int) -> object:
    value: object = "leaf"
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


def test_depth_counts_lists_and_objects_and_stops_past_the_limit():
    assert nesting_depth("x") == 0 and nesting_depth({}) == 1 and nesting_depth({"a": [1, {"b": 2}]}) == 3
    assert nesting_depth(nested(50_000)) == MAX_NESTING_DEPTH + 1  # no recursion, no full walk
    assert storable_problem({"a": nested(MAX_NESTING_DEPTH - 1), "n": 2**64 - 1}, "the args") is None
    assert storable_problem(nested(MAX_NESTING_DEPTH + 1), "the args") == \
        "the args nest more than 64 levels of lists and objects deep"
    assert storable_problem({"a": [-(2**63) - 1]}, "the args") == "the args hold an integer past 64 bits (19 digits)"
    assert "a lone surrogate" in storable_problem([{"k\udcff": 1}], "the args")
    assert storable_problem({"k": "v\udcff"}, "the args") is None  # in a string the serializer writes "?"


def test_text_depth_reads_brackets_outside_strings_without_parsing():
    quoted = '[[[{{{\\"' * 30  # brackets and escaped quotes inside one string
    assert not json_text_too_deep(f'{{"a": "{quoted}", "b": [1, {{"c": "\\"]"}}]}}', limit=3)
    assert json_text_too_deep('{"a": [1, {"c": [[]]}]}', limit=3)
    assert json_text_too_deep("[" * 100_000) and not json_text_too_deep("[" * MAX_NESTING_DEPTH)
    assert not json_text_too_deep(json.dumps(nested(MAX_NESTING_DEPTH)))
    assert json_text_too_deep(json.dumps(nested(MAX_NESTING_DEPTH + 1)))


def test_lone_surrogates_become_what_the_serializer_stores_and_jsonb_accepts():
    value = {"query": "report-\udcff.txt", "k\ud800": ["ok", ("\udfff",)], "n": 1}
    assert store_safe(value) == {"query": "report-?.txt", "k?": ["ok", ("?",)], "n": 1}
    assert store_safe("plain") == "plain"
    assert json.loads(json_bytes(value)) == {"query": "report-?.txt", "k?": ["ok", ["?"]], "n": 1}
