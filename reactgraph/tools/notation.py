"""How values are written: text folded for comparing (:func:`fold`), dates in the notations of
several languages and scripts read to ISO form (:func:`find_dates`), times of day
(:func:`clock_readings`), every reading of a written number (:func:`number_readings`), and the
example values a tool's description writes (:func:`description_examples`).
:mod:`reactgraph.tools.values` reads the values of a text with them and re-exports these names.

The date and month words of :data:`DATE_MARKERS` and :data:`MONTH_NAMES` are notation, not
prose: they read a date a question or an answer writes, in the scripts and languages listed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping


def fold(text: str) -> str:
    """``text`` for comparing: Unicode-compatibility normalised (full-width letters and digits
    become plain ones), case-folded, accents removed (``Müller`` -> ``muller``)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


DATE_MARKERS: Mapping[str, tuple[str, str, str]] = {
    "cjk": ("\u5e74", "\u6708", "\u65e5"),  # year, month, day in Chinese and Japanese writing
    "hangul": ("\ub144", "\uc6d4", "\uc77c"),  # year, month, day in Hangul
}
"""The year, month and day markers of dates written ``2026年3月5日``, per script."""

MONTH_NAMES: Mapping[str, int] = {
    name: number
    for number, names in enumerate([
        "january jan januar janvier enero janeiro gennaio",
        "february feb februar fevrier febrero fevereiro febbraio",
        "march mar marz mars marzo marco",
        "april apr avril abril aprile",
        "may mai mayo maio maggio",
        "june jun juni juin junio junho giugno",
        "july jul juli juillet julio julho luglio",
        "august aug august aout agosto",
        "september sep sept septembre septiembre setembro settembre",
        "october oct oktober octobre octubre outubro ottobre okt",
        "november nov novembre noviembre novembro",
        "december dec dezember decembre diciembre dezembro dicembre dez",
    ], start=1)
    for name in names.split()
}
"""Month names (accents folded, :func:`fold`) in English, German, French, Spanish, Portuguese
and Italian, with their common abbreviations → month number."""

_ISO_DATE = r"(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+\-]\d{2}:?\d{2})?)?"
_MARKED = "|".join(
    rf"(?:(\d{{4}})\s*{year}\s*)?(\d{{1,2}})\s*{month}\s*(\d{{1,2}})\s*{day}"
    for year, month, day in DATE_MARKERS.values()
)
_MONTH_WORD = r"(?<![^\W\d_])([^\W\d_]{3,10})\.?"
_DATE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(rf"(?<![\d\-]){_ISO_DATE}(?![\d])")),
    ("ymd", re.compile(r"(?<![\d.\-/])(\d{4})[/.](\d{1,2})[/.](\d{1,2})(?![\d])")),
    ("marked", re.compile(_MARKED)),
    ("dmy_word", re.compile(rf"(?<!\d)(\d{{1,2}})(?:\.|st|nd|rd|th|er|º)?\s+(?:de\s+)?{_MONTH_WORD}\s+(?:de\s+)?(\d{{4}})(?!\d)",
                            re.IGNORECASE)),
    ("mdy_word", re.compile(rf"{_MONTH_WORD}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.IGNORECASE)),
    ("numeric", re.compile(r"(?<![\d.\-/])(\d{1,2})([/.\-])(\d{1,2})\2(\d{4})(?![\d])")),
]


def _iso(year: int | None, month: int, day: int) -> str | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{year:04d}-{month:02d}-{day:02d}" if year else f"--{month:02d}-{day:02d}"


def find_dates(text: str, *, day_first: bool = True) -> list[tuple[int, int, str]]:
    """The dates ``text`` writes, in any notation of :data:`_DATE_PATTERNS`, as
    ``(start, end, iso)``.

    Args:
        text: Any text.
        day_first: How to read a numeric date whose day and month could be either
            (``05/03/2026``): day first (the notation of most languages) by default; a part
            over 12 decides by itself.

    Returns:
        Non-overlapping spans in text order: ISO dates (a time after one is part of it, the
        date kept), ``2026/3/5``, ``2026年3月5日``/``3月5日`` (``--03-05`` without a year),
        ``5. März 2026``, ``5 de marzo de 2026``, ``March 5, 2026``, ``05/03/2026``,
        ``05.03.2026``.
    """
    spans: list[tuple[int, int, str]] = []
    for kind, pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end, _ in spans):
                continue
            groups = match.groups()
            iso: str | None = None
            if kind in ("iso", "ymd"):
                iso = _iso(int(groups[0]), int(groups[1]), int(groups[2]))
            elif kind == "marked":
                for index in range(0, len(groups), 3):
                    if groups[index + 1]:
                        year = groups[index]
                        iso = _iso(int(year) if year else None, int(groups[index + 1]), int(groups[index + 2]))
                        break
            elif kind == "dmy_word":
                month = MONTH_NAMES.get(fold(groups[1]))
                iso = _iso(int(groups[2]), month, int(groups[0])) if month else None
            elif kind == "mdy_word":
                month = MONTH_NAMES.get(fold(groups[0]))
                iso = _iso(int(groups[2]), month, int(groups[1])) if month else None
            else:
                first, second, year = int(groups[0]), int(groups[2]), int(groups[3])
                if first > 12 or (day_first and second <= 12):
                    iso = _iso(year, second, first)
                else:
                    iso = _iso(year, first, second)
            if iso:
                spans.append((match.start(), match.end(), iso))
    return sorted(spans)


TIME_OF_DAY = re.compile(r"(?<![\d:.,])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d:])")
"""A time of day on the 24-hour clock: ``9:05``, ``10:15``, ``23:59:30``."""

DATE_TIME = re.compile(r"[T ]((?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?)")
"""The time of an ISO date-time (``2026-12-06T10:15:00``), its group 1."""

_MASK_GROUP = r"(?:Y{2,4}|y{2,4}|A{2,4}|a{2,4}|M{1,2}|m{1,2}|D{1,2}|d{1,2}|J{1,2}|j{1,2}|H{1,2}|h{1,2}|S{1,2}|s{1,2}|T)"
FORMAT_MASK = re.compile(rf"(?=.*([A-Za-z])\1){_MASK_GROUP}(?:[-/.: ]{_MASK_GROUP}|T{_MASK_GROUP}){{1,5}}")
"""A date or time written as its format's letters (``YYYY-MM-DD``, ``DD.MM.YYYY``, ``hh:mm``,
``AAAA-MM-JJ``), some letter doubled: a description's placeholder, never a day or a time
(searched with ``fullmatch``; ``m/s`` and ``my_data`` are no masks)."""

CLOCK_MARKER = re.compile(r"\s*[AaPp]\.?\s?[Mm]\.?")
"""What may follow a time of day in one value: a 12-hour clock's marker (``AM``, ``p.m.``)."""


def clock_readings(written: str) -> tuple[str, ...]:
    """The readings of a time of day written ``H:MM`` or ``HH:MM:SS``: its normal form first
    (``HH:MM``, with ``:SS`` when the seconds are not zero), then ``HH:MM``, then its hour and
    minute as numbers (``hour=10`` passes the ``10`` of "at 10:15")."""
    hour, minute, *second = (int(part) for part in written.split(":"))
    clock = f"{hour:02d}:{minute:02d}"
    value = clock + (f":{second[0]:02d}" if second and second[0] else "")
    return tuple(dict.fromkeys((value, clock, str(hour), str(minute))))


def number_readings(text: str) -> list[str]:
    """Every reading of a written number, in normal form (no thousands separators, no
    trailing zeros, ``.`` as the decimal point), the likeliest first.

    ``1,250.50`` -> ``["1250.5"]``; ``1.234,5`` -> ``["1234.5"]``; ``1,250`` ->
    ``["1250", "1.25"]`` (a thousands separator in English, a decimal comma elsewhere);
    ``1.250`` -> ``["1.25", "1250"]``; ``48,70`` -> ``["48.7"]``; ``007`` -> ``["7"]``.
    """
    commas, dots = text.count(","), text.count(".")
    readings: list[str] = []
    if commas and dots:  # the last separator is the decimal one
        decimal = "," if text.rfind(",") > text.rfind(".") else "."
        other = "." if decimal == "," else ","
        readings.append(text.replace(other, "").replace(decimal, "."))
    elif commas or dots:
        separator = "," if commas else "."
        parts = text.split(separator)
        grouped = all(len(part) == 3 for part in parts[1:]) and 1 <= len(parts[0]) <= 3
        as_thousands = "".join(parts)
        as_decimal = "".join(parts[:-1]) + "." + parts[-1] if len(parts) == 2 else None
        if grouped and (separator == "," or len(parts) > 2):
            readings.append(as_thousands)
            if as_decimal:
                readings.append(as_decimal)
        elif grouped:
            readings.extend([value for value in (as_decimal, as_thousands) if value])
        elif as_decimal:
            readings.append(as_decimal)
        else:
            readings.append(as_thousands)
    else:
        readings.append(text)
    return list(dict.fromkeys(normal_number(reading) for reading in readings))


def normal_number(plain: str) -> str:
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    plain = plain.lstrip("0") or "0"
    return "0" + plain if plain.startswith(".") else plain


_EXAMPLE_LEAD = re.compile(
    r"(?:\be\.\s?g\.|\beg\.|\bi\.\s?e\.|\bfor (?:example|instance)|\bsuch as|\blike|\bexamples?|\bformat|\bz\.\s?b\."
    r"|\bp\.\s?ej\.|\bpar exemple|\bpor ejemplo|\bbeispielsweise|\bz\.B\.)\s*[:,]?\s*",
    re.IGNORECASE,
)
_EXAMPLE_ITEM = re.compile(r"""["'`\u201c\u2018]([^"'`\u201d\u2019]{1,60})["'`\u201d\u2019]|([^\s,;()\[\]]+)""")


def description_examples(description: str) -> list[str]:
    """The example values a description gives ("a SKU like AB/123", "e.g. 2024-01-31",
    "for example `481516`, `481517`"): the quoted text or the token after each example
    phrase, and the ones listed after it with ``,`` or ``or``; only examples with a digit or
    an ``@`` (a word example says nothing about a value's shape)."""
    found: list[str] = []
    for lead in _EXAMPLE_LEAD.finditer(description):
        position = lead.end()
        for _ in range(4):
            item = _EXAMPLE_ITEM.match(description, position)
            if item is None:
                break
            text = (item.group(1) or item.group(2) or "").rstrip(".:")
            if not (any(char.isdigit() for char in text) or "@" in text):
                break
            found.append(text)
            rest = re.match(r"\s*(?:,|\bor\b|/)\s*", description[item.end():])
            if rest is None:
                break
            position = item.end() + rest.end()
    return list(dict.fromkeys(found))
