"""Secrets kept out of what is printed or logged: credentials in URLs and the
values a configuration took from the environment.

One home for the rule, used wherever a URL or a configuration's value can reach a line a
person reads: the CLI's start-up banner (the model's base URL, the checkpoint database),
MCP failure lines and their log records.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
"""What a secret is replaced with."""

MIN_SECRET_CHARS = 6
"""Shorter values are not masked inside a text (a short value would mask common words)."""

_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s:@]*)(?::(?P<password>[^/\s@]*))?@")


def redact_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it masked: ``scheme://user:pass@host``
    → ``scheme://user:***@host``; ``scheme://token@host`` (a user part alone is usually a
    token) → ``scheme://***@host``."""

    def mask(match: re.Match[str]) -> str:
        if match.group("password") is None:
            return f"{match.group('scheme')}{MASK}@"
        return f"{match.group('scheme')}{match.group('user')}:{MASK}@"

    return _URL_USERINFO.sub(mask, text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL credentials masked (:func:`redact_credentials`) and every value in
    ``secrets`` of at least :data:`MIN_SECRET_CHARS` characters replaced by :data:`MASK`
    (longest first, so a secret holding another is masked whole)."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return redact_credentials(text)


def url_secrets(url: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The parts of ``url`` that may be secrets: its user and password, its query values,
    and every environment value (at least :data:`MIN_SECRET_CHARS` long) it holds — what a
    ``${env:VAR}`` put there."""
    environ = os.environ if environ is None else environ
    parts = urlsplit(url)
    found = [value for value in (parts.username, parts.password) if value]
    found += [value for _key, value in parse_qsl(parts.query, keep_blank_values=False)]
    found += [value for value in environ.values() if len(value) >= MIN_SECRET_CHARS and value in url]
    return found


def mapping_secrets(values: Mapping[str, Any] | None) -> list[str]:
    """The string values of a map of headers or environment variables: each may be a secret."""
    return [value for value in (values or {}).values() if isinstance(value, str)]
