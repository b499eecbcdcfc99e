"""Secrets kept out of printed lines (``reactgraph.core.redaction``)."""

from __future__ import annotations

from reactgraph.core.redaction import redact, url_secrets


def test_url_credentials_are_masked_wherever_a_url_stands_in_a_line():
    assert redact("threads: postgresql://app:s3cret-pw@db:5432/agents") == "threads: postgresql://app:***@db:5432/agents"
    assert redact("model: gpt-4o at https://sk-live-123456@gateway/v1 · mode: native") == \
        "model: gpt-4o at https://***@gateway/v1 · mode: native"
    assert redact("no url here, user@example.com") == "no url here, user@example.com"


def test_the_values_a_url_took_from_the_environment_are_its_secrets():
    environ = {"TOKEN": "tok-4f9a2c71", "SHORT": "ab", "HOME": "/root"}
    found = url_secrets("https://robot:pw-81be05d3@host/tok-4f9a2c71/mcp?key=k-7781&ab=1", environ)
    assert {"robot", "pw-81be05d3", "k-7781", "tok-4f9a2c71"} <= set(found) and "/root" not in found
    line = "404 for url 'https://robot:pw-81be05d3@host/tok-4f9a2c71/mcp?key=k-7781'"
    assert redact(line, found) == "404 for url 'https://robot:***@host/***/mcp?key=***'"
