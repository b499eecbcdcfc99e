"""The routes of the HTTP API, one router per concern, which
:func:`reactgraph.server.app.create_app` includes in this order (the order of the paths in
the OpenAPI schema):

- :mod:`~reactgraph.server.routers.runs`: start, follow up, resume and stop a run;
- :mod:`~reactgraph.server.routers.approvals`: decide on the calls a paused run waits on;
- :mod:`~reactgraph.server.routers.threads`: read, list and delete threads;
- :mod:`~reactgraph.server.routers.health`: ``GET /healthz``;
- :mod:`~reactgraph.server.routers.page`: the web page, its icon and static files.

A route finds the app's agents and state through ``request.app.state`` (see
:func:`~reactgraph.server.app.create_app`); the bearer scheme of the guarded routers is
given when the app includes them, since only an app with a key declares it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def app_routes(routes: list[Any]) -> Iterator[Any]:
    """Every route of ``routes`` (an app's ``app.routes``), the routes of an included
    router in its place: FastAPI keeps an included router as one branch whose routes it
    holds in ``original_router``, while a request's path is matched against each route.

    Args:
        routes: An app's routes; none of its routers is included with a prefix.

    Returns:
        The routes in the order they are matched (``path``, ``methods``, ``matches``).
    """
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from app_routes(inner.routes)
        else:
            yield route
