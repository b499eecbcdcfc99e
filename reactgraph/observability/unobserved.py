"""The stand-in for a model call that no observer watches: what the engine's hooks get when
a run is not observed, so that they need no test of their own."""

from __future__ import annotations

from typing import Any


class Unobserved:
    """:class:`~reactgraph.observability.observer.ModelCall`'s stand-in for a call no
    observer watches: records nothing."""

    __slots__ = ()

    def __enter__(self) -> Unobserved:
        return self

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        return None

    @staticmethod
    def returned(result: Any) -> Any:
        return result

    @staticmethod
    def chunk(chunk: Any) -> None:
        return None


UNOBSERVED = Unobserved()
"""What :func:`model_call` gives for a call no observer watches."""
