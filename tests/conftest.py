"""Shared fixtures: the small tools of :mod:`tests.helpers` as ``tools``, fast settings, and the
test databases."""

from __future__ import annotations

import os
import stat

import pytest

from reactgraph import AgentSettings
from tests.helpers import as_dict, broken, get_status, hangs, report, slow_async, slow_sync


@pytest.fixture
def tools():
    return [get_status, slow_async, slow_sync, broken, hangs, as_dict, report]


@pytest.fixture
def fast_settings():
    return AgentSettings(max_iterations=8, tool_timeout=0.3, retry_initial_delay=0.01, retry_max_delay=0.02)


TEST_DATABASE_URL_ENV = "REACTGRAPH_TEST_DATABASE_URL"
"""The Postgres database the Postgres tests use (``.ci/run`` sets it; tables are shared,
every test uses thread ids of its own)."""


def require_postgres_url() -> str:
    """The test Postgres URL. Without one the calling test (or fixture, of any scope) is
    skipped, except in CI (``$CI`` set), where a missing database fails it: CI must run the
    Postgres tests."""
    url = os.environ.get(TEST_DATABASE_URL_ENV)
    if not url:
        message = f"no test Postgres: set {TEST_DATABASE_URL_ENV}=postgresql://user:password@127.0.0.1/db"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must run the Postgres tests)")
        pytest.skip(message)
    return url


@pytest.fixture
def postgres_url() -> str:
    """The test Postgres URL (:func:`require_postgres_url`)."""
    return require_postgres_url()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def checkpoint_url(request, tmp_path) -> str:
    """A checkpoint database URL: a fresh SQLite file, or the test Postgres database."""
    if request.param == "sqlite":
        return str(tmp_path / "checkpoints.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture(autouse=True)
def _dev_null_stays_a_device():
    """Fail the test that turns ``/dev/null`` into a regular file.

    Tests run as root in CI; a command that deletes ``/dev/null`` and then writes to it leaves a
    root-owned regular file, after which every apt call on the machine fails (apt's helpers write
    to it as an unprivileged user) — a CI run on that machine then dies before the first test.
    """
    yield
    mode = os.stat("/dev/null").st_mode
    assert stat.S_ISCHR(mode), "/dev/null is no longer a character device after this test"
