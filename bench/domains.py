"""Right tool, right value, right language on four trades the engine has never seen.

Four small domains of the bench's own, with in-memory deterministic data and five or seven
LangChain tools each, whose docstrings and schemas differ on purpose:

* **shop**: SKUs with a slash (``AB/100``), six-digit order numbers, customer e-mails, an enum
  of countries; Google-style ``Args:`` docstrings, reST ``:param:`` docstrings and plain prose;
  schemas with ``pattern``, ``format: email``, ``enum`` and ``examples``.
* **helpdesk**: UUID tickets, staff e-mail ids, dates of on-site visits, an enum of services,
  free-text knowledge-base search.
* **library**: dashed ISBN-13s (``978-3-16-148410-0``, typed with or without dashes), card
  numbers ``M00042``, an enum of branch names with a date, free-text catalogue search; replies
  as a JSON object, as a table with a header row, and a polite sentence for an unknown card;
  Google-style, numpy-style and one-line docstrings.
* **clinic**: appointment ids ``APT-2026-00417``, patient numbers ``P-88-1043``, room codes
  ``R2.14``, a doctor enum of Latin-script surnames with a date (two required arguments), an
  optional ``days_ahead: int = 7``, a booking tool (it confirms without writing), free-text
  service search; replies as ``key=value`` lines (``error=not_found`` for an unknown
  appointment), as CSV with a header row (the header alone when nothing is planned), a ``·``
  list and prose; reST ``:param:``/``:type:`` fields, descriptions with an ``Example:`` line.

Questions in English, Korean, Japanese, Chinese, Spanish, German, French, Portuguese,
Italian, Russian, Vietnamese and Indonesian; each names the
tool and argument values that answer it, the facts (values) the answer must carry, and its
language. Kinds: ``tool`` (the data exists), ``not_found`` (the value the question names does
not exist: the answer must say that nothing was found, and the run must not end ``covered``),
``no_tool`` (a greeting or a question no tool serves: no call expected).

Scoring per question (:func:`score_domain_run`): right tool with the right argument, the
answer carries the facts, the answer in the question's language (py3langid restricted to the
bench's languages, on the answer's lead line and on the whole answer, with values, ids and
table rows removed), invented values (numbers, ids, e-mails of the answer found in no
observation, argument or the question), nothing-found reported as covered, model calls and
seconds. The runner is :mod:`answer_quality`'s (``ReActAgent.astream_events`` as the CLI
consumes it, the same call counter).

Usage::

    python bench/domains.py                           # every question, ReActAgent with default settings
    python bench/domains.py --domains shop --langs ja zh --verbose
    python bench/domains.py --rows reactgraph create_agent --json out.json
    python bench/domains.py --local-models smollm2-135m qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answer_quality as aq  # noqa: E402  (the bench's shared runner and number rules)

# --------------------------------------------------------------------------- shop data

PRODUCTS: dict[str, dict[str, Any]] = {
    "AB/100": {"name": "Garden hose 20 m", "category": "garden", "price": "24.90", "stock": 12},
    "AB/205": {"name": "Hose reel", "category": "garden", "price": "59.00", "stock": 0},
    "KT/310": {"name": "Cast iron pan 28 cm", "category": "kitchen", "price": "45.50", "stock": 7},
    "KT/412": {"name": "Chef knife 21 cm", "category": "kitchen", "price": "89.00", "stock": 3},
    "TL/517": {"name": "Cordless drill 18 V", "category": "tools", "price": "129.00", "stock": 15},
    "TL/620": {"name": "Socket set 94 pieces", "category": "tools", "price": "74.99", "stock": 4},
}
"""The shop's articles by SKU (prices in EUR)."""

ORDERS: dict[str, dict[str, Any]] = {
    "482913": {"email": "mina.park@example.com", "status": "shipped", "date": "2026-11-28", "sku": "AB/100",
               "qty": 2, "total": "49.80", "tracking": "TRK77120453"},
    "519004": {"email": "lukas.weber@example.de", "status": "processing", "date": "2026-12-01", "sku": "KT/412",
               "qty": 1, "total": "89.00", "tracking": ""},
    "530771": {"email": "sofia.garcia@example.es", "status": "delivered", "date": "2026-11-20", "sku": "TL/517",
               "qty": 1, "total": "129.00", "tracking": "TRK77098812"},
    "607215": {"email": "yuki.tanaka@example.jp", "status": "cancelled", "date": "2026-11-30", "sku": "TL/620",
               "qty": 2, "total": "149.98", "tracking": ""},
    "611480": {"email": "claire.martin@example.fr", "status": "shipped", "date": "2026-12-02", "sku": "KT/310",
               "qty": 1, "total": "45.50", "tracking": "TRK77135566"},
    "615932": {"email": "wang.lei@example.cn", "status": "processing", "date": "2026-12-03", "sku": "AB/205",
               "qty": 1, "total": "59.00", "tracking": ""},
}
"""The shop's orders by six-digit number."""

SHIPPING: dict[str, tuple[str, str]] = {
    "DE": ("2 to 3", "4.90"), "FR": ("3 to 4", "6.90"), "ES": ("4 to 6", "7.90"), "KR": ("8 to 12", "24.00"),
    "JP": ("7 to 10", "22.00"), "CN": ("9 to 14", "19.50"), "US": ("6 to 9", "18.00"),
}
"""Delivery days and the flat shipping fee (EUR) per destination country."""


def _product_line(sku: str) -> str:
    p = PRODUCTS[sku]
    return f"{sku} | {p['name']} | {p['category']} | {p['price']} EUR | {p['stock']} in stock"


class _SkuArgs(BaseModel):
    sku: str = Field(description="The article's SKU: two capital letters, a slash and three digits, like AB/100.",
                     pattern=r"^[A-Z]{2}/\d{3}$", examples=["AB/100", "KT/412"])


def get_product(sku: str) -> str:
    """Look up one article of the shop: its name, category, price and how many are in stock.

    Args:
        sku: The article's SKU, two capital letters, a slash and three digits (like AB/100).

    Returns:
        One line: SKU | name | category | price | stock.
    """
    if sku.strip().upper() not in PRODUCTS:
        raise ToolException(f"Unknown SKU {sku}. Valid SKUs look like AB/100.")
    return _product_line(sku.strip().upper())


class _OrderArgs(BaseModel):
    order_number: str = Field(description="The six-digit order number printed on the receipt.",
                              pattern=r"^\d{6}$", examples=["482913"])


def get_order_status(order_number: str) -> str:
    """Tell where an order stands.

    :param order_number: the six-digit number of the order, e.g. 482913.
    :returns: the order's status, date, article, quantity, total and tracking code.
    """
    order = ORDERS.get(order_number.strip())
    if order is None:
        return f"No order found with number {order_number}."
    tracking = order["tracking"] or "none yet"
    return (f"Order {order_number}: {order['status']} (placed {order['date']}) | {order['qty']} x {order['sku']} | "
            f"total {order['total']} EUR | tracking {tracking}")


class _CustomerArgs(BaseModel):
    email: str = Field(description="The customer's e-mail address.", json_schema_extra={"format": "email"},
                       examples=["mina.park@example.com"])


def find_orders_by_customer(email: str) -> str:
    """Lists every order a customer placed, found by the e-mail address the customer
    registered with; the reply is a JSON list (empty when the address placed no order)."""
    rows = [{"order": number, "status": o["status"], "date": o["date"], "total": f"{o['total']} EUR"}
            for number, o in ORDERS.items() if o["email"] == email.strip().lower()]
    return json.dumps(rows)


class _SearchArgs(BaseModel):
    query: str = Field(description="Words of the article's name.", examples=["hose", "knife"])
    category: Literal["garden", "kitchen", "tools"] | None = Field(
        default=None, description="Only articles of this category.")


def search_products(query: str, category: str | None = None) -> str:
    """Search the catalogue by words of the article name, optionally within one category.

    Args:
        query: Words of the name, like "drill" or "pan".
        category: garden, kitchen or tools.
    """
    words = [w for w in query.lower().split() if w]
    hits = [sku for sku, p in PRODUCTS.items()
            if (category is None or p["category"] == category) and any(w in p["name"].lower() for w in words)]
    if not hits:
        return f"0 articles match '{query}'."
    return f"{len(hits)} article(s):\n" + "\n".join(_product_line(sku) for sku in hits)


class _ShippingArgs(BaseModel):
    country: Literal["DE", "FR", "ES", "KR", "JP", "CN", "US"] = Field(
        description="Destination country as an ISO 3166 alpha-2 code.")


def get_shipping_estimate(country: str) -> str:
    """Delivery time and shipping fee for a parcel to a country.

    :param country: ISO 3166 alpha-2 code of the destination (DE, FR, ES, KR, JP, CN, US).
    """
    days, fee = SHIPPING[country]
    return f"Shipping to {country}: {days} business days, fee {fee} EUR."


# --------------------------------------------------------------------------- helpdesk data

TICKETS: dict[str, dict[str, str]] = {
    "3f9c2a7e-5b1d-4c8e-9a2f-6d1e8b7c4a01": {"title": "VPN disconnects every hour", "status": "open",
                                             "priority": "high", "assignee": "j.kim@helpdesk.example",
                                             "opened": "2026-12-01"},
    "8b2e4d10-7c3a-4f5b-b6e1-2a9d0c5f7e32": {"title": "Printer on floor 3 jams", "status": "in progress",
                                             "priority": "medium", "assignee": "a.dubois@helpdesk.example",
                                             "opened": "2026-11-29"},
    "c47a1e95-0d2b-4e6f-8c3a-9b5e1f2d6a73": {"title": "New laptop setup", "status": "resolved", "priority": "low",
                                             "assignee": "m.suzuki@helpdesk.example", "opened": "2026-11-25"},
    "e1d5b8c2-9f4a-4a7d-b2c6-5e8f3a1d0b94": {"title": "Mailbox quota exceeded", "status": "open",
                                             "priority": "medium", "assignee": "j.kim@helpdesk.example",
                                             "opened": "2026-12-03"},
}
"""Helpdesk tickets by UUID."""

STAFF: tuple[str, ...] = ("j.kim@helpdesk.example", "a.dubois@helpdesk.example", "m.suzuki@helpdesk.example",
                          "l.chen@helpdesk.example")
"""Staff e-mail ids (``l.chen`` has no ticket)."""

VISITS: dict[str, list[tuple[str, str, str, str]]] = {
    "2026-12-08": [("09:30", "Room 2.14", "monitor swap", "a.dubois@helpdesk.example"),
                   ("14:00", "Reception", "badge reader repair", "l.chen@helpdesk.example")],
    "2026-12-09": [("11:00", "Lab 1", "network port patch", "j.kim@helpdesk.example")],
}
"""On-site visits booked per day: time, place, job, technician."""

SERVICES: dict[str, str] = {
    "vpn": "degraded since 2026-12-05 08:40, packet loss 12%",
    "email": "operational",
    "wiki": "operational",
    "printing": "outage since 2026-12-05 13:05, 3 printers offline",
}
"""Current status of each service."""

ARTICLES: dict[str, tuple[str, str]] = {
    "KB-1042": ("Reset your VPN token", "vpn token reset authenticator"),
    "KB-2210": ("Clear a printer paper jam", "printer jam paper tray"),
    "KB-3307": ("Free up mailbox space", "mailbox quota email archive"),
    "KB-4115": ("Set up a new laptop", "laptop setup enrolment"),
}
"""Knowledge-base articles: id -> (title, keywords)."""


class _TicketArgs(BaseModel):
    ticket_id: str = Field(description="The ticket's UUID.", json_schema_extra={"format": "uuid"},
                           examples=["3f9c2a7e-5b1d-4c8e-9a2f-6d1e8b7c4a01"])


def get_ticket(ticket_id: str) -> str:
    """Fetch one helpdesk ticket.

    Args:
        ticket_id: The ticket's UUID, as in the confirmation e-mail.

    Returns:
        Title, status, priority, assignee and opening date.
    """
    ticket = TICKETS.get(ticket_id.strip().lower())
    if ticket is None:
        raise ToolException(f"Ticket {ticket_id} does not exist.")
    return (f"Ticket {ticket_id}: {ticket['title']} | status {ticket['status']} | priority {ticket['priority']} | "
            f"assignee {ticket['assignee']} | opened {ticket['opened']}")


class _StaffArgs(BaseModel):
    staff_email: str = Field(description="The staff member's e-mail id.", json_schema_extra={"format": "email"},
                             examples=["j.kim@helpdesk.example"])


def list_staff_tickets(staff_email: str) -> str:
    """Tickets assigned to one member of the helpdesk staff.

    :param staff_email: e-mail id of the staff member, like j.kim@helpdesk.example.
    :returns: one line per ticket.
    """
    who = staff_email.strip().lower()
    if who not in STAFF:
        return f"Unknown staff member {staff_email}."
    rows = [f"{tid} | {t['title']} | {t['status']} | {t['priority']}" for tid, t in TICKETS.items()
            if t["assignee"] == who]
    return "\n".join(rows) if rows else f"No tickets assigned to {staff_email}."


class _VisitArgs(BaseModel):
    day: str = Field(description="The day, as YYYY-MM-DD.", json_schema_extra={"format": "date"},
                     examples=["2026-12-08"])


def get_onsite_visits(day: str) -> str:
    """Shows the on-site visits technicians have booked for a given day, with the time,
    the place, the job and the technician of each; a day with no visit says so."""
    rows = VISITS.get(day.strip(), [])
    if not rows:
        return f"No visits booked on {day}."
    return "\n".join(f"{t} | {place} | {job} | {tech}" for t, place, job, tech in rows)


class _ServiceArgs(BaseModel):
    service: Literal["vpn", "email", "wiki", "printing"] = Field(description="Which IT service.")


def get_service_status(service: str) -> str:
    """Current status of an IT service (vpn, email, wiki or printing), with the time an
    incident began."""
    return f"{service}: {SERVICES[service]}"


class _KbArgs(BaseModel):
    query: str = Field(description="What the user wants to do or fix.", examples=["reset VPN token", "printer jam"])


def search_knowledge_base(query: str) -> str:
    """Search the helpdesk's how-to articles.

    Args:
        query: A few words of the problem, like "printer jam".
    """
    words = [w for w in re.split(r"\W+", query.lower()) if len(w) > 2]
    hits = [aid for aid, (title, keys) in ARTICLES.items() if any(w in (title.lower() + " " + keys) for w in words)]
    if not hits:
        return "[]"
    return "\n".join(f"{aid} | {ARTICLES[aid][0]}" for aid in hits)


# --------------------------------------------------------------------------- library data

BOOKS: dict[str, dict[str, Any]] = {
    "978-3-16-148410-0": {"title": "The Silent Orchard", "author": "Ines Calder", "year": 2019, "copies": 3,
                          "available": 1, "shelf": "823.92 CAL", "next_due": "2026-12-10",
                          "subjects": "novel orchard family"},
    "978-0-306-40615-7": {"title": "Rivers of Salt", "author": "Tomas Ekberg", "year": 2015, "copies": 2,
                          "available": 0, "shelf": "910.4 EKB", "next_due": "2026-12-15",
                          "subjects": "travel desert rivers"},
    "978-1-4028-9462-6": {"title": "A Grammar of Clouds", "author": "Aiko Morita", "year": 2021, "copies": 4,
                          "available": 4, "shelf": "551.57 MOR", "next_due": None,
                          "subjects": "weather clouds meteorology"},
    "978-2-07-036822-8": {"title": "Le Jardin d'hiver", "author": "Claire Vasseur", "year": 2008, "copies": 1,
                          "available": 1, "shelf": "843.914 VAS", "next_due": None,
                          "subjects": "novel garden winter french"},
    "978-4-06-293417-5": {"title": "Night Train to Sendai", "author": "Kenji Hoshino", "year": 2017, "copies": 2,
                          "available": 1, "shelf": "895.63 HOS", "next_due": "2026-12-20",
                          "subjects": "novel train japan"},
}
"""The library's titles by ISBN-13 (written with dashes)."""

MEMBERS: dict[str, dict[str, str]] = {
    "M00042": {"name": "Noor Haddad", "since": "2021-03-14", "valid_until": "2027-03-14", "fines": "2.50",
               "branch": "central"},
    "M00107": {"name": "Lucas Ferreira", "since": "2024-09-02", "valid_until": "2027-09-02", "fines": "0.00",
               "branch": "harbour"},
    "M00318": {"name": "Giulia Romano", "since": "2019-01-22", "valid_until": "2026-12-31", "fines": "7.80",
               "branch": "northgate"},
}
"""Library members by card number (``M`` and five digits)."""

LOANS: dict[str, list[tuple[str, str, int]]] = {
    "M00042": [("978-3-16-148410-0", "2026-12-10", 1), ("978-0-306-40615-7", "2026-12-15", 0)],
    "M00107": [("978-4-06-293417-5", "2026-12-20", 2)],
}
"""Books on loan per member: ISBN, due date, renewals so far (``M00318`` has none)."""

BRANCH_HOURS: dict[str, dict[int, str]] = {
    "central": {0: "09:00-20:00", 1: "09:00-20:00", 2: "09:00-20:00", 3: "09:00-20:00", 4: "09:00-18:00",
                5: "10:00-16:00"},
    "harbour": {1: "09:00-19:00", 2: "09:00-19:00", 3: "13:00-19:00", 4: "09:00-17:00", 5: "10:00-14:00"},
    "northgate": {0: "10:00-18:00", 2: "10:00-18:00", 4: "10:00-18:00", 5: "10:00-13:00"},
    "riverside": {0: "09:00-17:00", 1: "09:00-17:00", 2: "09:00-17:00", 3: "09:00-17:00", 4: "09:00-17:00"},
}
"""Weekly opening hours per branch (Monday is 0; a missing day is closed)."""

HOLIDAYS: dict[str, str] = {"2026-12-24": "09:00-12:00", "2026-12-25": "", "2026-12-26": "", "2027-01-01": ""}
"""Days every branch keeps other hours (``""``: closed)."""

RIVERSIDE_REOPENS = "2027-01-11"
"""The riverside branch is closed for renovation until this day."""


def _norm_isbn(isbn: str) -> str:
    return re.sub(r"[\s-]", "", isbn)


def _book_by_isbn(isbn: str) -> tuple[str, dict[str, Any]] | None:
    digits = _norm_isbn(isbn)
    return next(((key, book) for key, book in BOOKS.items() if _norm_isbn(key) == digits), None)


class _IsbnArgs(BaseModel):
    isbn: str = Field(description="ISBN-13 of the title, with or without dashes.",
                      pattern=r"^97[89][\d-]{10,14}$", examples=["978-3-16-148410-0", "9783161484100"])


def get_book(isbn: str) -> str:
    """Catalogue record of one title.

    Args:
        isbn: The book's ISBN-13 (978-... or 979-...), dashes optional.

    Returns:
        A JSON object with title, author, year, copies owned, copies available now, shelf mark
        and the earliest due date of a copy on loan; ``{"isbn": ..., "found": false}`` when the
        library has no such title.
    """
    hit = _book_by_isbn(isbn)
    if hit is None:
        return json.dumps({"isbn": isbn.strip(), "found": False})
    key, book = hit
    record = {"isbn": key, "found": True, **{k: v for k, v in book.items() if k != "subjects"}}
    return json.dumps(record, ensure_ascii=False)


class _MemberArgs(BaseModel):
    member_no: str = Field(description="Library card number: M followed by five digits.", pattern=r"^M\d{5}$",
                           examples=["M00042"])


def get_member(member_no: str) -> str:
    """Card holder details for a library card number (name, since when, card expiry, unpaid fines, home branch)."""
    key = member_no.strip().upper()
    member = MEMBERS.get(key)
    if member is None:
        return (f"I'm sorry, but we could not locate a library card with the number {member_no}. "
                "Please check the number printed on the back of the card.")
    return (f"Card {key}: {member['name']}, member since {member['since']}, card valid until "
            f"{member['valid_until']}, unpaid fines {member['fines']} EUR, home branch {member['branch']}.")


def member_loans(member_no: str) -> str:
    """What a card holder currently has checked out.

    Parameters
    ----------
    member_no : str
        Card number such as M00042.

    Returns
    -------
    str
        A table with a header row (isbn | title | due | renewals), one row per book on loan.
    """
    key = member_no.strip().upper()
    if key not in MEMBERS:
        return f"I'm sorry, but we could not locate a library card with the number {member_no}."
    rows = LOANS.get(key, [])
    if not rows:
        return f"Card {key} has no books on loan."
    return "isbn | title | due | renewals\n" + "\n".join(
        f"{isbn} | {BOOKS[isbn]['title']} | {due} | {renewals}" for isbn, due, renewals in rows)


class _HoursArgs(BaseModel):
    branch: Literal["central", "harbour", "northgate", "riverside"] = Field(description="Which branch library.")
    day: str = Field(description="Calendar day, YYYY-MM-DD.", json_schema_extra={"format": "date"},
                     examples=["2026-12-12"])


def branch_opening_hours(branch: str, day: str) -> str:
    """When a branch library is open on a given calendar day. Holidays and closures for
    renovation are taken into account; the reply says 'closed' when the doors stay shut."""
    when = date.fromisoformat(day.strip())
    iso = when.isoformat()
    if branch == "riverside" and iso < RIVERSIDE_REOPENS:
        return f"{branch} on {iso}: closed for renovation until {RIVERSIDE_REOPENS}."
    hours = HOLIDAYS[iso] if iso in HOLIDAYS else BRANCH_HOURS[branch].get(when.weekday(), "")
    weekday = when.strftime("%A")
    return f"{branch} on {weekday} {iso}: " + (f"open {hours}." if hours else "closed.")


class _CatalogueArgs(BaseModel):
    text: str = Field(description="Any words: title, author or topic.", examples=["clouds", "Calder"])


def search_catalogue(text: str) -> str:
    """Find titles by words of their title, author or subject."""
    words = [w for w in re.split(r"\W+", text.lower()) if len(w) > 2]
    hits = [isbn for isbn, b in BOOKS.items()
            if any(w in f"{b['title']} {b['author']} {b['subjects']}".lower() for w in words)]
    if not hits:
        return f"No titles match '{text}'."
    return "isbn | title | author | available\n" + "\n".join(
        f"{isbn} | {BOOKS[isbn]['title']} | {BOOKS[isbn]['author']} | {BOOKS[isbn]['available']}" for isbn in hits)


# --------------------------------------------------------------------------- clinic data

CLINIC_TODAY = date(2026, 12, 7)
"""The clinic's "today" (its replies are deterministic: "the next 7 days" count from here)."""

APPOINTMENTS: dict[str, dict[str, str]] = {
    "APT-2026-00417": {"patient": "P-88-1043", "doctor": "Okafor", "date": "2026-12-09", "time": "10:30",
                       "room": "R2.14", "service": "SRV-310", "status": "confirmed",
                       "note": "fasting 8 h before the blood test"},
    "APT-2026-00452": {"patient": "P-91-2207", "doctor": "Lindqvist", "date": "2026-12-08", "time": "14:15",
                       "room": "R1.03", "service": "SRV-415", "status": "confirmed",
                       "note": "bring previous x-rays"},
    "APT-2026-00468": {"patient": "P-88-1043", "doctor": "Nguyen", "date": "2026-12-15", "time": "09:00",
                       "room": "R3.02", "service": "SRV-520", "status": "waiting_list", "note": ""},
    "APT-2026-00471": {"patient": "P-75-0318", "doctor": "Santos", "date": "2026-12-11", "time": "16:40",
                       "room": "R2.07", "service": "SRV-120", "status": "cancelled",
                       "note": "cancelled by patient on 2026-12-04"},
    "APT-2026-00489": {"patient": "P-91-2207", "doctor": "Okafor", "date": "2026-12-21", "time": "11:00",
                       "room": "R2.14", "service": "SRV-310", "status": "confirmed", "note": ""},
}
"""Appointments by id (``APT``, the year, five digits)."""

PATIENTS: dict[str, dict[str, str]] = {
    "P-88-1043": {"name": "Olena Kovalenko", "born": "1988", "insurer": "MedSure", "policy": "MS-55120",
                  "allergies": "penicillin", "last_visit": "2026-11-18"},
    "P-91-2207": {"name": "Tran Thi Mai", "born": "1991", "insurer": "HealthPlus", "policy": "HP-30871",
                  "allergies": "none known", "last_visit": "2026-10-02"},
    "P-75-0318": {"name": "Bruno Esposito", "born": "1975", "insurer": "self-pay", "policy": "-",
                  "allergies": "latex", "last_visit": "2026-08-27"},
}
"""Patients by patient number (``P``, two digits of the birth year, four digits)."""

FREE_SLOTS: dict[tuple[str, str], list[tuple[str, str, int]]] = {
    ("Okafor", "2026-12-10"): [("08:30", "R2.14", 20), ("11:10", "R2.14", 20), ("15:00", "R2.16", 40)],
    ("Lindqvist", "2026-12-10"): [("13:00", "R1.03", 30)],
    ("Nguyen", "2026-12-14"): [("09:40", "R3.02", 20), ("10:20", "R3.02", 20)],
    ("Santos", "2026-12-09"): [("17:00", "R2.07", 30)],
}
"""Free slots per doctor and day: time, room, minutes (a pair not listed has none)."""

SERVICES_OFFERED: dict[str, dict[str, str]] = {
    "SRV-120": {"name": "Flu vaccination", "price": "35.00", "minutes": "15", "referral": "no",
                "keywords": "flu shot influenza vaccine"},
    "SRV-310": {"name": "Blood test, full panel", "price": "48.00", "minutes": "10", "referral": "no",
                "keywords": "blood test lab fasting"},
    "SRV-415": {"name": "Physiotherapy session", "price": "62.00", "minutes": "45", "referral": "yes",
                "keywords": "physiotherapy back pain rehabilitation"},
    "SRV-520": {"name": "Skin check", "price": "80.00", "minutes": "30", "referral": "no",
                "keywords": "skin check dermatology mole"},
    "SRV-640": {"name": "Travel vaccination consult", "price": "55.00", "minutes": "30", "referral": "no",
                "keywords": "travel vaccine malaria yellow fever"},
}
"""The clinic's services by code."""

ROOMS: dict[str, dict[str, str]] = {
    "R1.03": {"floor": "1", "wing": "west", "lift": "A", "step_free": "yes"},
    "R2.07": {"floor": "2", "wing": "west", "lift": "A", "step_free": "yes"},
    "R2.14": {"floor": "2", "wing": "east", "lift": "B", "step_free": "yes"},
    "R2.16": {"floor": "2", "wing": "east", "lift": "B", "step_free": "no"},
    "R3.02": {"floor": "3", "wing": "north", "lift": "C", "step_free": "yes"},
}
"""Consulting rooms by code (``R``, floor, dot, two digits)."""

DOCTORS = ("Okafor", "Lindqvist", "Nguyen", "Santos")
"""The clinic's doctors (the ``doctor`` enum: Latin-script surnames)."""


class _AppointmentArgs(BaseModel):
    appointment_id: str = Field(description="Appointment id: APT, the year and five digits.",
                                pattern=r"^APT-\d{4}-\d{5}$", examples=["APT-2026-00417"])


def get_appointment(appointment_id: str) -> str:
    """Retrieve a single appointment record.

    :param appointment_id: the id printed on the reminder, e.g. APT-2026-00417.
    :returns: key=value lines (patient, doctor, date, time, room, service, status, note);
        ``error=not_found`` when there is no such appointment.
    """
    key = appointment_id.strip().upper()
    apt = APPOINTMENTS.get(key)
    if apt is None:
        return f"error=not_found\nappointment_id={appointment_id.strip()}"
    return f"appointment_id={key}\n" + "\n".join(f"{k}={v}" for k, v in apt.items())


class _PatientArgs(BaseModel):
    patient_no: str = Field(description="Patient number, e.g. P-88-1043.", pattern=r"^P-\d{2}-\d{4}$",
                            examples=["P-88-1043"])


def get_patient(patient_no: str) -> str:
    """Patient file summary: full name, year of birth, insurer and policy number, known
    allergies and the date of the last visit.
    Example: get_patient("P-88-1043")"""
    key = patient_no.strip().upper()
    p = PATIENTS.get(key)
    if p is None:
        raise ToolException(f"Patient {patient_no} is not registered at this clinic.")
    return (f"{key}: {p['name']}; born {p['born']}; insurer {p['insurer']} (policy {p['policy']}); "
            f"allergies: {p['allergies']}; last visit {p['last_visit']}")


class _SlotArgs(BaseModel):
    doctor: Literal["Okafor", "Lindqvist", "Nguyen", "Santos"] = Field(description="The doctor's surname.")
    day: str = Field(description="The day, YYYY-MM-DD.", json_schema_extra={"format": "date"},
                     examples=["2026-12-10"])


def doctor_free_slots(doctor: str, day: str) -> str:
    """Open consultation slots of one doctor on one day.

    :param doctor: surname of the doctor (Okafor, Lindqvist, Nguyen or Santos).
    :type doctor: str
    :param day: calendar day in ISO format.
    :type day: str
    :returns: CSV with a header row ``time,room,minutes``; only the header when the doctor
        has no free slot that day.
    """
    rows = FREE_SLOTS.get((doctor, day.strip()), [])
    return "time,room,minutes\n" + "\n".join(f"{t},{room},{minutes}" for t, room, minutes in rows)


class _UpcomingArgs(BaseModel):
    patient_no: str = Field(description="Patient number, e.g. P-88-1043.", pattern=r"^P-\d{2}-\d{4}$",
                            examples=["P-88-1043"])
    days_ahead: int = Field(default=7, ge=1, le=90, description="How many days ahead to look (default 7).")


def upcoming_appointments(patient_no: str, days_ahead: int = 7) -> str:
    """A patient's appointments from today on, looking days_ahead days into the future
    (one week unless told otherwise). The reply is comma-separated with a header line
    (appointment,date,time,doctor,room,status); a patient with nothing planned gets the
    header alone."""
    key = patient_no.strip().upper()
    if key not in PATIENTS:
        raise ToolException(f"Patient {patient_no} is not registered at this clinic.")
    last = date.fromordinal(CLINIC_TODAY.toordinal() + int(days_ahead)).isoformat()
    rows = sorted((a["date"], a["time"], aid, a) for aid, a in APPOINTMENTS.items()
                  if a["patient"] == key and CLINIC_TODAY.isoformat() <= a["date"] <= last)
    return "appointment,date,time,doctor,room,status\n" + "\n".join(
        f"{aid},{d},{t},{a['doctor']},{a['room']},{a['status']}" for d, t, aid, a in rows)


class _BookArgs(BaseModel):
    patient_no: str = Field(description="Patient number, e.g. P-88-1043.", pattern=r"^P-\d{2}-\d{4}$")
    doctor: Literal["Okafor", "Lindqvist", "Nguyen", "Santos"] = Field(description="The doctor's surname.")
    day: str = Field(description="The day, YYYY-MM-DD.", json_schema_extra={"format": "date"})


def book_appointment(patient_no: str, doctor: str, day: str) -> str:
    """Book the first free slot of a doctor on a day for a patient and return the new
    appointment id. (The bench's clinic confirms without writing: every run sees the same data;
    the tool declares ``side_effects`` as a real booking tool would, and no approval, which the
    bench cannot give.)"""
    key = patient_no.strip().upper()
    if key not in PATIENTS:
        raise ToolException(f"Patient {patient_no} is not registered at this clinic.")
    slots = FREE_SLOTS.get((doctor, day.strip()), [])
    if not slots:
        raise ToolException(f"Dr. {doctor} has no free slot on {day}.")
    t, room, minutes = slots[0]
    return (f"Booked APT-2026-00500 for {key} with Dr. {doctor} on {day.strip()} at {t} in room {room} "
            f"({minutes} min).")


class _ServiceSearchArgs(BaseModel):
    text: str = Field(description="What the patient wants done, in a few words.", examples=["flu shot", "blood test"])


def find_service(text: str) -> str:
    """Look through the clinic's list of treatments and check-ups: code, name, price, length
    and whether a referral is needed.
    Example: "flu shot" or "skin check"."""
    words = [w for w in re.split(r"\W+", text.lower()) if len(w) > 2]
    hits = [code for code, s in SERVICES_OFFERED.items()
            if any(w in f"{s['name']} {s['keywords']}".lower() for w in words)]
    if not hits:
        return "0 services."
    return "\n".join(f"{code} · {s['name']} · {s['price']} EUR · {s['minutes']} min · referral {s['referral']}"
                     for code, s in ((c, SERVICES_OFFERED[c]) for c in hits))


class _RoomArgs(BaseModel):
    room: str = Field(description="Room code such as R2.14.", pattern=r"^R\d\.\d{2}$", examples=["R2.14"])


def room_directions(room: str) -> str:
    """How to find a consulting room (floor, wing, lift, step-free access)."""
    key = room.strip().upper()
    r = ROOMS.get(key)
    if r is None:
        raise ToolException(f"There is no room {room}.")
    return (f"Room {key} is on floor {r['floor']}, {r['wing']} wing: from the reception take lift {r['lift']}. "
            f"Step-free: {r['step_free']}.")


def _tool(func: Any, schema: type[BaseModel], metadata: dict[str, Any] | None = None) -> BaseTool:
    """A structured tool from ``func`` with its docstring as the description (its own style
    kept), ``schema`` as its arguments and ``metadata`` as the tool's own; a
    :class:`ToolException` becomes the error text."""
    return StructuredTool.from_function(func=func, name=func.__name__, description=(func.__doc__ or "").strip(),
                                        args_schema=schema, metadata=metadata)


def build_domain_tools(domain: str) -> list[BaseTool]:
    """The tools of ``domain``: five for ``shop``, ``helpdesk`` and ``library``, seven for ``clinic``.

    Raises:
        KeyError: Another domain name.
    """
    return {
        "shop": lambda: [_tool(get_product, _SkuArgs), _tool(get_order_status, _OrderArgs),
                         _tool(find_orders_by_customer, _CustomerArgs), _tool(search_products, _SearchArgs),
                         _tool(get_shipping_estimate, _ShippingArgs)],
        "helpdesk": lambda: [_tool(get_ticket, _TicketArgs), _tool(list_staff_tickets, _StaffArgs),
                             _tool(get_onsite_visits, _VisitArgs), _tool(get_service_status, _ServiceArgs),
                             _tool(search_knowledge_base, _KbArgs)],
        "library": lambda: [_tool(get_book, _IsbnArgs), _tool(get_member, _MemberArgs),
                            _tool(member_loans, _MemberArgs), _tool(branch_opening_hours, _HoursArgs),
                            _tool(search_catalogue, _CatalogueArgs)],
        "clinic": lambda: [_tool(get_appointment, _AppointmentArgs), _tool(get_patient, _PatientArgs),
                           _tool(doctor_free_slots, _SlotArgs), _tool(upcoming_appointments, _UpcomingArgs),
                           _tool(book_appointment, _BookArgs, {"side_effects": True}), _tool(find_service, _ServiceSearchArgs),
                           _tool(room_directions, _RoomArgs)],
    }[domain]()


DOMAINS = ("shop", "helpdesk", "library", "clinic")

# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class DomainQuestion:
    """One question of the domain bench.

    Attributes:
        domain: ``shop``, ``helpdesk``, ``library`` or ``clinic``.
        lang: The question's language (ISO 639-1).
        text: The question as a user writes it.
        kind: ``tool``, ``not_found`` or ``no_tool``.
        tool: The tool that answers it (``""`` for ``no_tool``).
        args: Argument values a call must carry (compared case-insensitively, strings stripped).
        facts: Values the answer must carry (numbers, ids, dates, e-mails: they read the same in
            every language). Every fact is in the tool's output for ``args`` (a unit test checks).
    """

    domain: str
    lang: str
    text: str
    kind: str = "tool"
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    facts: tuple[str, ...] = ()


_T1, _T2, _T3, _T4 = TICKETS
_Q = DomainQuestion

QUESTIONS: tuple[DomainQuestion, ...] = (
    # shop
    _Q("shop", "en", "How many AB/100 garden hoses are in stock?", tool="get_product", args={"sku": "AB/100"}, facts=("12",)),
    _Q("shop", "de", "Was kostet der Artikel KT/412?", tool="get_product", args={"sku": "KT/412"}, facts=("89.00",)),
    _Q("shop", "fr", "Combien coûte l'article TL/517 ?", tool="get_product", args={"sku": "TL/517"}, facts=("129.00",)),
    _Q("shop", "ja", "商品KT/310の在庫はいくつありますか？", tool="get_product", args={"sku": "KT/310"}, facts=("7",)),
    _Q("shop", "zh", "商品TL/620还有多少库存？", tool="get_product", args={"sku": "TL/620"}, facts=("4",)),
    _Q("shop", "ko", "AB/205 상품 가격이 얼마예요?", tool="get_product", args={"sku": "AB/205"}, facts=("59.00",)),
    _Q("shop", "es", "¿Cuál es el estado del pedido 482913?", tool="get_order_status", args={"order_number": "482913"},
       facts=("TRK77120453", "2026-11-28")),
    _Q("shop", "de", "Wo ist meine Bestellung 519004?", tool="get_order_status", args={"order_number": "519004"},
       facts=("2026-12-01",)),
    _Q("shop", "ja", "注文番号611480の配送状況を教えてください。", tool="get_order_status", args={"order_number": "611480"},
       facts=("TRK77135566",)),
    _Q("shop", "en", "What is the total of order 607215?", tool="get_order_status", args={"order_number": "607215"},
       facts=("149.98",)),
    _Q("shop", "fr", "Quelles commandes a passées claire.martin@example.fr ?", tool="find_orders_by_customer",
       args={"email": "claire.martin@example.fr"}, facts=("611480",)),
    _Q("shop", "zh", "客户 wang.lei@example.cn 下了哪些订单？", tool="find_orders_by_customer",
       args={"email": "wang.lei@example.cn"}, facts=("615932",)),
    _Q("shop", "en", "Do you sell a cordless drill?", tool="search_products", args={"query": "drill"}, facts=("TL/517",)),
    _Q("shop", "es", "¿Cuánto tarda un envío a ES y cuánto cuesta?", tool="get_shipping_estimate", args={"country": "ES"},
       facts=("7.90",)),
    _Q("shop", "ko", "KR로 배송하면 배송비가 얼마예요?", tool="get_shipping_estimate", args={"country": "KR"}, facts=("24.00",)),
    _Q("shop", "de", "Welche Versandkosten fallen nach DE an?", tool="get_shipping_estimate", args={"country": "DE"},
       facts=("4.90",)),
    _Q("shop", "en", "What does article ZZ/999 cost?", kind="not_found", tool="get_product", args={"sku": "ZZ/999"}),
    _Q("shop", "fr", "Où en est la commande 999999 ?", kind="not_found", tool="get_order_status",
       args={"order_number": "999999"}),
    _Q("shop", "ja", "nobody@example.org の注文を見せてください。", kind="not_found", tool="find_orders_by_customer",
       args={"email": "nobody@example.org"}),
    _Q("shop", "fr", "Bonjour ! Merci beaucoup, bonne journée.", kind="no_tool"),
    _Q("shop", "de", "Wie wird das Wetter morgen in Berlin?", kind="no_tool"),
    _Q("shop", "zh", "你好！", kind="no_tool"),
    # helpdesk
    _Q("helpdesk", "en", f"What is the status of ticket {_T1}?", tool="get_ticket", args={"ticket_id": _T1},
       facts=("j.kim@helpdesk.example",)),
    _Q("helpdesk", "ko", f"티켓 {_T2} 담당자가 누구예요?", tool="get_ticket", args={"ticket_id": _T2},
       facts=("a.dubois@helpdesk.example",)),
    _Q("helpdesk", "es", f"¿Cuándo se abrió el ticket {_T3}?", tool="get_ticket", args={"ticket_id": _T3},
       facts=("2026-11-25",)),
    _Q("helpdesk", "zh", f"工单 {_T4} 是什么时候创建的？", tool="get_ticket", args={"ticket_id": _T4},
       facts=("2026-12-03",)),
    _Q("helpdesk", "de", "Welche Tickets hat j.kim@helpdesk.example?", tool="list_staff_tickets",
       args={"staff_email": "j.kim@helpdesk.example"}, facts=(_T1, _T4)),
    _Q("helpdesk", "ja", "m.suzuki@helpdesk.example の担当チケットは？", tool="list_staff_tickets",
       args={"staff_email": "m.suzuki@helpdesk.example"}, facts=(_T3,)),
    _Q("helpdesk", "en", "Which on-site visits are booked on 2026-12-08?", tool="get_onsite_visits",
       args={"day": "2026-12-08"}, facts=("09:30", "14:00")),
    _Q("helpdesk", "fr", "Quelles interventions sont prévues le 2026-12-09 ?", tool="get_onsite_visits",
       args={"day": "2026-12-09"}, facts=("11:00",)),
    _Q("helpdesk", "ja", "2026-12-08の訪問予定を教えて。", tool="get_onsite_visits", args={"day": "2026-12-08"},
       facts=("09:30",)),
    _Q("helpdesk", "es", "¿Funciona la VPN ahora mismo?", tool="get_service_status", args={"service": "vpn"},
       facts=("12",)),
    _Q("helpdesk", "zh", "打印服务(printing)现在状态如何？", tool="get_service_status", args={"service": "printing"},
       facts=("13:05",)),
    _Q("helpdesk", "de", "Ist der Dienst email gerade gestört?", tool="get_service_status", args={"service": "email"},
       facts=("operational",)),
    _Q("helpdesk", "ko", "VPN 토큰을 재설정하는 방법 문서가 있어요?", tool="search_knowledge_base", args={},
       facts=("KB-1042",)),
    _Q("helpdesk", "en", "Is there a how-to article for a printer jam?", tool="search_knowledge_base", args={},
       facts=("KB-2210",)),
    _Q("helpdesk", "fr", "Y a-t-il un article pour libérer de l'espace dans la boîte mail (mailbox) ?",
       tool="search_knowledge_base", args={}, facts=("KB-3307",)),
    _Q("helpdesk", "en", "Show ticket 00000000-0000-4000-8000-000000000000.", kind="not_found", tool="get_ticket",
       args={"ticket_id": "00000000-0000-4000-8000-000000000000"}),
    _Q("helpdesk", "zh", "2026-12-10 有哪些上门服务？", kind="not_found", tool="get_onsite_visits",
       args={"day": "2026-12-10"}),
    _Q("helpdesk", "es", "¿Qué tickets tiene p.ruiz@helpdesk.example?", kind="not_found", tool="list_staff_tickets",
       args={"staff_email": "p.ruiz@helpdesk.example"}),
    _Q("helpdesk", "ko", "l.chen@helpdesk.example 담당 티켓 있어요?", kind="not_found", tool="list_staff_tickets",
       args={"staff_email": "l.chen@helpdesk.example"}),
    _Q("helpdesk", "ja", "こんにちは！よろしくお願いします。", kind="no_tool"),
    _Q("helpdesk", "es", "¡Hola! ¿Me cuentas un chiste?", kind="no_tool"),
    _Q("helpdesk", "ko", "안녕하세요, 좋은 하루 보내세요!", kind="no_tool"),
    _Q("helpdesk", "en", "Who won the football world cup in 2014?", kind="no_tool"),
    # library
    _Q("library", "en", "What's up with member M00042?", tool="get_member", args={"member_no": "M00042"},
       facts=("2.50",)),
    _Q("library", "ko", "M00107 회원 카드는 언제까지 쓸 수 있어요?", tool="get_member", args={"member_no": "M00107"},
       facts=("2027-09-02",)),
    _Q("library", "de", "Hat M00318 noch offene Gebühren?", tool="get_member", args={"member_no": "M00318"},
       facts=("7.80",)),
    _Q("library", "ja", "M00042さんが今借りている本と返却期限を教えて", tool="member_loans", args={"member_no": "M00042"},
       facts=("2026-12-10", "2026-12-15")),
    _Q("library", "pt", "Quais livros o sócio M00107 tem emprestados agora?", tool="member_loans",
       args={"member_no": "M00107"}, facts=("Night Train to Sendai",)),
    _Q("library", "es", "¿Cuántos ejemplares tenéis de 978-3-16-148410-0 y cuántos quedan libres?", tool="get_book",
       args={"isbn": "978-3-16-148410-0"}, facts=("3", "1")),
    _Q("library", "fr", "Qui a écrit le 978-2-07-036822-8, et c'est sorti en quelle année ?", tool="get_book",
       args={"isbn": "978-2-07-036822-8"}, facts=("Claire Vasseur", "2008")),
    _Q("library", "zh", "978-0-306-40615-7 这本书什么时候能还回来？", tool="get_book",
       args={"isbn": "978-0-306-40615-7"}, facts=("2026-12-15",)),
    _Q("library", "it", "In che scaffale trovo il libro 9781402894626?", tool="get_book",
       args={"isbn": "9781402894626"}, facts=("551.57",)),
    _Q("library", "en", "Got anything by Aiko Morita?", tool="search_catalogue", args={},
       facts=("978-1-4028-9462-6",)),
    _Q("library", "ko", "Tomas Ekberg 작가 책 있어요?", tool="search_catalogue", args={}, facts=("978-0-306-40615-7",)),
    _Q("library", "fr", "Vous avez « Le Jardin d'hiver » ?", tool="search_catalogue", args={},
       facts=("978-2-07-036822-8",)),
    _Q("library", "en", "Is the harbour branch open on 2026-12-26?", tool="branch_opening_hours",
       args={"branch": "harbour", "day": "2026-12-26"}, facts=("closed",)),
    _Q("library", "es", "¿A qué hora abre la biblioteca central el sábado 2026-12-12?", tool="branch_opening_hours",
       args={"branch": "central", "day": "2026-12-12"}, facts=("10:00",)),
    _Q("library", "it", "La sede northgate è aperta il 2026-12-24? Fino a che ora?", tool="branch_opening_hours",
       args={"branch": "northgate", "day": "2026-12-24"}, facts=("12:00",)),
    _Q("library", "zh", "riverside 分馆 2026-12-14 几点开门？", tool="branch_opening_hours",
       args={"branch": "riverside", "day": "2026-12-14"}, facts=("2027-01-11",)),
    _Q("library", "pt", "Até que horas fica aberta a unidade harbour no dia 2026-12-15?", tool="branch_opening_hours",
       args={"branch": "harbour", "day": "2026-12-15"}, facts=("19:00",)),
    _Q("library", "ja", "会員番号M99999の情報を見せて", kind="not_found", tool="get_member", args={"member_no": "M99999"}),
    _Q("library", "de", "Habt ihr das Buch 978-1-11-111111-1?", kind="not_found", tool="get_book",
       args={"isbn": "978-1-11-111111-1"}),
    _Q("library", "it", "Quali libri ha in prestito la tessera M00318?", kind="not_found", tool="member_loans",
       args={"member_no": "M00318"}),
    _Q("library", "it", "Ciao! Grazie mille per l'aiuto.", kind="no_tool"),
    _Q("library", "pt", "Qual é a capital da Austrália?", kind="no_tool"),
    _Q("library", "en", "hey there :)", kind="no_tool"),
    # clinic
    _Q("clinic", "en", "Anything I should know about appointment APT-2026-00417?", tool="get_appointment",
       args={"appointment_id": "APT-2026-00417"}, facts=("2026-12-09", "10:30")),
    _Q("clinic", "ru", "Во сколько у меня приём APT-2026-00452 и в каком кабинете?", tool="get_appointment",
       args={"appointment_id": "APT-2026-00452"}, facts=("14:15", "R1.03")),
    _Q("clinic", "en", "Is my appointment APT-2026-00471 still on?", tool="get_appointment",
       args={"appointment_id": "APT-2026-00471"}, facts=("cancelled",)),
    _Q("clinic", "id", "Siapa dokter yang menangani janji APT-2026-00489?", tool="get_appointment",
       args={"appointment_id": "APT-2026-00489"}, facts=("Okafor",)),
    _Q("clinic", "vi", "Lịch hẹn APT-2026-00468 của tôi là ngày nào vậy?", tool="get_appointment",
       args={"appointment_id": "APT-2026-00468"}, facts=("2026-12-15",)),
    _Q("clinic", "ja", "患者P-88-1043の保険証の番号を教えてください。", tool="get_patient",
       args={"patient_no": "P-88-1043"}, facts=("MS-55120",)),
    _Q("clinic", "pt", "Em que ano nasceu a paciente P-91-2207?", tool="get_patient",
       args={"patient_no": "P-91-2207"}, facts=("1991",)),
    _Q("clinic", "it", "Il paziente P-75-0318 ha qualche allergia?", tool="get_patient",
       args={"patient_no": "P-75-0318"}, facts=("latex",)),
    _Q("clinic", "ko", "P-88-1043 환자는 마지막으로 언제 왔었어요?", tool="get_patient",
       args={"patient_no": "P-88-1043"}, facts=("2026-11-18",)),
    _Q("clinic", "ru", "Есть ли у доктора Окафор свободное время 2026-12-10?", tool="doctor_free_slots",
       args={"doctor": "Okafor", "day": "2026-12-10"}, facts=("08:30",)),
    _Q("clinic", "en", "Can I still get in to see Dr Lindqvist on 2026-12-10? What time?", tool="doctor_free_slots",
       args={"doctor": "Lindqvist", "day": "2026-12-10"}, facts=("13:00",)),
    _Q("clinic", "vi", "Bác sĩ Nguyen còn giờ trống nào vào ngày 2026-12-14 không?", tool="doctor_free_slots",
       args={"doctor": "Nguyen", "day": "2026-12-14"}, facts=("09:40", "10:20")),
    _Q("clinic", "it", "La dottoressa Santos ha un posto libero il 2026-12-09?", tool="doctor_free_slots",
       args={"doctor": "Santos", "day": "2026-12-09"}, facts=("17:00",)),
    _Q("clinic", "id", "Apa saja jadwal kontrol pasien P-91-2207 dalam dua minggu ke depan?",
       tool="upcoming_appointments", args={"patient_no": "P-91-2207", "days_ahead": 14},
       facts=("APT-2026-00452", "APT-2026-00489")),
    _Q("clinic", "en", "What's coming up for P-88-1043 this week?", tool="upcoming_appointments",
       args={"patient_no": "P-88-1043"}, facts=("APT-2026-00417",)),
    _Q("clinic", "en", "Please book P-88-1043 in with Dr Okafor on 2026-12-10.", tool="book_appointment",
       args={"patient_no": "P-88-1043", "doctor": "Okafor", "day": "2026-12-10"}, facts=("APT-2026-00500", "08:30")),
    _Q("clinic", "ja", "インフルエンザの予防接種はいくらですか？", tool="find_service", args={}, facts=("35.00",)),
    _Q("clinic", "pt", "Vocês fazem fisioterapia? Precisa de encaminhamento?", tool="find_service", args={},
       facts=("SRV-415",)),
    _Q("clinic", "ko", "점 같은 거 피부 검사(skin check) 받으려면 얼마예요?", tool="find_service", args={},
       facts=("80.00",)),
    _Q("clinic", "it", "A che piano si trova la stanza R2.14?", tool="room_directions", args={"room": "R2.14"},
       facts=("2",)),
    _Q("clinic", "id", "Ruang R3.02 ada di lantai berapa, dan lewat lift mana?", tool="room_directions",
       args={"room": "R3.02"}, facts=("3",)),
    _Q("clinic", "ru", "Покажите, пожалуйста, запись APT-2026-09999.", kind="not_found", tool="get_appointment",
       args={"appointment_id": "APT-2026-09999"}),
    _Q("clinic", "id", "Tolong cek data pasien P-00-0000.", kind="not_found", tool="get_patient",
       args={"patient_no": "P-00-0000"}),
    _Q("clinic", "vi", "Xin chào! Cảm ơn bạn rất nhiều nhé.", kind="no_tool"),
    _Q("clinic", "ko", "내일 서울 날씨 어때요?", kind="no_tool"),
)
"""The question set: the measure, never tuned to."""

LANGUAGES: tuple[str, ...] = ("en", "ko", "ja", "zh", "es", "de", "fr", "pt", "it", "ru", "vi", "id")
"""The languages of the questions; the detector chooses among these."""

# --------------------------------------------------------------------------- scoring rules

NOT_FOUND_CUES: tuple[str, ...] = (
    "not found", "no order", "no ticket", "no visit", "no result", "nothing", "unknown", "does not exist",
    "doesn't exist", "no such", "could not find", "couldn't find", "cannot find", "no record", "none",
    "no tool returned",
    "없", "찾을 수", "존재하지", "반환하지 않았",
    "見つかり", "見つから", "ありません", "存在しません", "不明", "返しませんでした",
    "没有", "未找到", "找不到", "不存在", "无",
    "no se encontr", "no existe", "no hay", "ningún", "ninguna", "no encontr", "desconocid",
    "nicht gefunden", "keine", "kein ", "existiert nicht", "unbekannt", "nichts",
    "introuvable", "aucun", "n'existe pas", "pas trouvé", "inconnu", "rien",
    "could not locate", "no book", "no loan",
    "não encontr", "não existe", "nenhum", "não há", "não tem", "desconhecid",
    "non trovat", "non esiste", "nessun", "non ci sono", "non risulta", "non ha", "sconosciut",
    "not registered", "no appointment", "no free slot",
    "не найден", "не найдена", "не найдено", "нет", "не существует", "не вернул", "неизвестн", "отсутству",
    "không tìm thấy", "không có", "không tồn tại", "không trả về",
    "tidak ditemukan", "tidak ada", "tidak terdaftar", "tidak dikenal", "belum terdaftar",
)
"""How an answer says that nothing was found, in the bench's languages ("returned no data",
the engine's own sentence for it, among them)."""

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
# ASCII boundaries: a value beside Hangul or CJK ("UUID에", "关于AB/100的") is still whole.
_UUID = re.compile(r"(?<![0-9A-Za-z-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                   r"(?![0-9A-Za-z-])")
# four or more digit groups joined by dashes (an ISBN-13 as printed): one code, not five numbers
_DASHED = re.compile(r"(?<![0-9A-Za-z-])\d+(?:-\d+){3,}(?![0-9A-Za-z-])")
_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_TIME = re.compile(r"(?<!\d)(\d{1,2}):(\d{2})(?!\d)")
_MIXED = re.compile(r"(?<![A-Za-z0-9_/])(?=[A-Za-z0-9/-]*\d)(?=[A-Za-z0-9/-]*[A-Za-z])[A-Za-z0-9]+(?:[/-][A-Za-z0-9]+)+|"
                    r"(?<![A-Za-z0-9_/])(?=[A-Za-z]*\d)(?:[A-Za-z]{2,}\d+|[A-Za-z]\d{4,})(?![A-Za-z0-9_])")
# a letter, a floor number, a dot and digits (a room code R2.14): one code, not a decimal number
_ROOM = re.compile(r"(?<![A-Za-z0-9_./])[A-Za-z]\d+\.\d+(?!\.?\d|[A-Za-z])")
_NUMBER = re.compile(r"(?<![\d.])\d+(?:[.,]\d+)?(?![\d])")
_LIST_NUMBER = re.compile(r"^(\s*(?:[-*]\s*)?)\d{1,2}[.)](?=\s)", re.MULTILINE)


def values_of(text: str) -> dict[str, set[str]]:
    """The values a text states, by kind.

    Args:
        text: An answer, an observation, a question or a call's arguments.

    Returns:
        ``{"email": …, "uuid": …, "date": …, "time": …, "code": …, "number": …}``: e-mails and
        UUIDs lower-cased, ISO dates, ``HH:MM`` times (``9:30`` is ``09:30``), codes (``AB/100``, ``KB-1042``,
        ``TRK77120453``, ``M00042``, the dashed ISBN ``978-3-16-148410-0``, the room code ``R2.14``, upper-cased) and the remaining numbers normalized
        (:func:`answer_quality._norm_number`; a decimal comma reads as a point; list
        numbering at a line start is not a number).
    """
    found: dict[str, set[str]] = {k: set() for k in ("email", "uuid", "date", "time", "code", "number")}
    rest = text
    for kind, pattern in (("email", _EMAIL), ("uuid", _UUID), ("code", _DASHED), ("date", _DATE), ("time", _TIME),
                          ("code", _MIXED), ("code", _ROOM)):
        for m in pattern.finditer(rest):
            found[kind].add(m.group(0).lower() if kind in ("email", "uuid") else m.group(0).upper()
                            if kind == "code" else f"{int(m.group(1)):02d}:{m.group(2)}" if kind == "time"
                            else m.group(0))
        rest = pattern.sub(" ", rest)
    rest = _LIST_NUMBER.sub(r"\1 ", rest)
    found["number"] = {aq._norm_number(m.group(0).replace(",", ".")) for m in _NUMBER.finditer(rest)}
    return found


def invented_values(answer: str, sources: Sequence[str]) -> list[str]:
    """The values of ``answer`` that no source states.

    A number is grounded by an equal or rounded number of a source, or by a part of a
    source's date or time (``2026年11月28日`` for ``2026-11-28``); a date by the same date;
    an e-mail, UUID or code only by itself.

    Returns:
        Sorted ``kind:value`` strings.
    """
    have = values_of("\n".join(sources))
    numbers = set(have["number"])
    for d in have["date"]:
        numbers |= {aq._norm_number(p) for p in d.split("-")}
    for t in have["time"]:
        numbers |= {aq._norm_number(p) for p in t.split(":")}
    for code in have["code"]:
        numbers |= {aq._norm_number(p) for p in re.findall(r"\d+", code)}
    said = values_of(answer)
    out = {f"number:{n}" for n in said["number"] if not any(aq._same_number(n, m) for m in numbers)}
    for kind in ("email", "uuid", "date", "time", "code"):
        out |= {f"{kind}:{v}" for v in said[kind] - have[kind]}
    return sorted(out)


def fact_in_answer(fact: str, answer: str) -> bool:
    """Whether ``answer`` states ``fact``: a number (equal or rounded, decimal comma allowed), a
    date (ISO, or its year, month and day as numbers, as ``2026年11月28日`` writes it), a time of
    day (``9:30`` for ``09:30``), or any
    other value as a case-insensitive substring."""
    if _DATE.fullmatch(fact):
        if fact in answer:
            return True
        numbers = values_of(answer)["number"]
        return all(aq._norm_number(p) in numbers for p in fact.split("-"))
    if _TIME.fullmatch(fact):  # a time of day, with or without its leading zero
        return bool(values_of(fact)["time"] & values_of(answer)["time"])
    if re.fullmatch(r"\d+(?:\.\d+)?", fact):
        return any(aq._same_number(n, aq._norm_number(fact)) for n in values_of(answer)["number"])
    return fact.lower() in answer.lower()


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    identifier.set_languages(list(LANGUAGES))
    return identifier


def _prose(text: str) -> str:
    """``text`` without values, table rows and Markdown marks: what is left is the language."""
    lines = [line for line in text.splitlines() if line.count("|") < 2]
    rest = "\n".join(lines)
    for pattern in (_EMAIL, _UUID, _DASHED, _DATE, _TIME, _MIXED, _ROOM, _NUMBER):
        rest = pattern.sub(" ", rest)
    return re.sub(r"[*_`#>|\[\]()]", " ", rest)


def detect_language(text: str) -> str | None:
    """The language of ``text``'s prose (py3langid among :data:`LANGUAGES`), ``None`` when no
    prose is left (an answer that is only values or a table)."""
    prose = _prose(text)
    if sum(ch.isalpha() for ch in prose) < 2:
        return None
    return str(_identifier().classify(prose)[0])


_WORD = re.compile(r"[^\W\d_]+")


def engine_lines(answer: str, observations: Sequence[str]) -> list[str]:
    """The answer's lines that someone wrote for the reader, not the tools' own text: prose
    lines (not table rows, with some letters left once values are removed) of which fewer than
    80 % of the words occur in ``observations`` (the tools' results, and their descriptions:
    a tool's own line, reformatted with `` · `` or bullets, is data)."""
    seen = {w.lower() for text in observations for w in _WORD.findall(text)}
    out = []
    for line in answer.splitlines():
        if line.count("|") >= 2 or sum(ch.isalpha() for ch in _prose(line)) < 3:
            continue
        words = [w.lower() for w in _WORD.findall(_prose(line))]
        if words and sum(w in seen for w in words) >= 0.8 * len(words):
            continue
        out.append(line)
    return out


def lead_line(answer: str) -> str:
    """The answer's first line that has prose (not a table row)."""
    return next((line for line in answer.splitlines() if line.strip() and line.count("|") < 2), "")


@dataclass
class DomainScore:
    """How one run scored.

    Attributes:
        right_call: A call of the expected tool carried every expected argument value; for a
            ``no_tool`` question: no call.
        facts_found: The question's facts the answer states.
        carries_facts: ``tool``: every fact stated; ``not_found``: the answer says nothing was
            found; ``no_tool``: a non-empty answer.
        lead_language: The lead line's prose is in the question's language.
        answer_language: Every line written for the reader (:func:`engine_lines`: the lead,
            notes, "nothing found"; not the tools' own data lines) is in the question's
            language, and there is at least one.
        invented: Values of the answer no source states.
        not_found_covered: A ``not_found`` question whose run ended ``covered``.
        tool_free_answer: A ``tool`` question answered without any call.
    """

    right_call: bool
    facts_found: list[str]
    carries_facts: bool
    lead_language: bool
    answer_language: bool
    invented: list[str]
    not_found_covered: bool = False
    tool_free_answer: bool = False
    detected: str | None = None


def _same_arg(have: Any, want: Any) -> bool:
    if isinstance(have, str) and isinstance(want, str):
        return have.strip().lower() == want.strip().lower()
    return have == want


@functools.lru_cache(maxsize=4)
def tool_descriptions(domain: str) -> list[str]:
    """The descriptions of ``domain``'s tools: the tools' own text, like their results (an
    answer listing what the agent can look up quotes them; the engine does not translate them)."""
    return [tool.description for tool in build_domain_tools(domain)]


def score_domain_run(question: DomainQuestion, calls: Sequence[aq.Call], answer: str,
                     finish_reason: str | None) -> DomainScore:
    """Score one run of the domain bench.

    Args:
        question: The question.
        calls: The run's tool calls (tool, arguments, observation, error).
        answer: The final streamed answer.
        finish_reason: ``done``'s finish reason.

    Returns:
        The :class:`DomainScore` (rules in its attributes and in bench/README.md).
    """
    sources = [question.text] + [json.dumps(c.args, ensure_ascii=False) + "\n" + c.observation + "\n" + (c.error or "")
                                 for c in calls]
    invented = invented_values(answer, sources)
    lead_lang = detect_language(lead_line(answer))
    written = engine_lines(answer, [c.observation + "\n" + (c.error or "") for c in calls]
                           + tool_descriptions(question.domain))
    langs = [detect_language(line) for line in written]
    shape = {"lead_language": lead_lang == question.lang,
             "answer_language": bool(langs) and all(lang == question.lang for lang in langs),
             "invented": invented, "detected": ",".join(sorted({str(lang) for lang in langs})) or None}
    if question.kind == "no_tool":
        return DomainScore(not calls, [], bool(answer.strip()), **shape)
    right = any(c.tool == question.tool and isinstance(c.args, dict)
                and all(_same_arg(c.args.get(k), v) for k, v in question.args.items()) for c in calls)
    if question.kind == "not_found":
        said = any(cue in answer.lower() for cue in NOT_FOUND_CUES)
        return DomainScore(right, [], said, not_found_covered=finish_reason == "covered", **shape)
    found = [f for f in question.facts if fact_in_answer(f, answer)]
    return DomainScore(right, found, len(found) == len(question.facts),
                       tool_free_answer=not calls and bool(answer.strip()), **shape)


SEARCH_PROBES: dict[str, dict[str, str]] = {
    "KB-1042": {"query": "vpn token"}, "KB-2210": {"query": "printer jam"}, "KB-3307": {"query": "mailbox"},
    "978-1-4028-9462-6": {"text": "Morita"}, "978-0-306-40615-7": {"text": "Ekberg"},
    "978-2-07-036822-8": {"text": "Jardin"},
    "35.00": {"text": "flu"}, "SRV-415": {"text": "physiotherapy"}, "80.00": {"text": "skin check"},
}
"""Arguments of a free-text search that finds a question's first fact (the question names no
argument a call must carry: any wording of the search counts)."""


def ground_truth(question: DomainQuestion, tools: dict[str, BaseTool]) -> str:
    """The expected tool's output for the expected arguments (``""`` for ``no_tool``; the
    error text for a value that does not exist)."""
    if not question.tool:
        return ""
    args = dict(question.args) or SEARCH_PROBES.get(question.facts[0], {})
    try:
        return str(tools[question.tool].invoke(args))
    except ToolException as exc:
        return str(exc)


# --------------------------------------------------------------------------- report


@dataclass
class DomainRow:
    """Totals of one row (a model and an agent)."""

    row: str
    runs: int = 0
    tool_runs: int = 0
    not_found_runs: int = 0
    right_call: int = 0
    carries: int = 0
    tool_carries: int = 0
    lead_language: int = 0
    answer_language: int = 0
    invented_runs: int = 0
    not_found_covered: int = 0
    tool_free: int = 0
    calls: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, kind: str, score: DomainScore, model_calls: int, seconds: float) -> None:
        """Count one scored run."""
        self.runs += 1
        self.tool_runs += kind == "tool"
        self.not_found_runs += kind == "not_found"
        self.right_call += score.right_call
        self.carries += score.carries_facts
        self.tool_carries += kind == "tool" and score.carries_facts
        self.lead_language += score.lead_language
        self.answer_language += score.answer_language
        self.invented_runs += bool(score.invented)
        self.not_found_covered += score.not_found_covered
        self.tool_free += score.tool_free_answer
        self.calls.append(model_calls)
        self.seconds.append(seconds)

    def summary(self) -> dict[str, Any]:
        """The row's figures as plain values (for the table and ``--json``)."""
        n = self.runs or 1
        return {"row": self.row, "runs": self.runs, "right_call": self.right_call / n,
                "carries_fact": self.carries / n, "lead_language": self.lead_language / n,
                "answer_language": self.answer_language / n, "runs_with_invented_values": self.invented_runs,
                "not_found_covered": self.not_found_covered, "not_found_runs": self.not_found_runs,
                "tool_free_answers": self.tool_free,
                "median_calls": statistics.median(self.calls) if self.calls else 0,
                "median_s": statistics.median(self.seconds) if self.seconds else 0.0,
                "mean_s": statistics.fmean(self.seconds) if self.seconds else 0.0}


def domain_table(rows: Sequence[DomainRow]) -> str:
    """The compact Markdown summary: one line per row."""
    head = ("| row | runs | right tool+arg | carries fact | lead in lang | answer in lang | invented | "
            "not-found as covered | no-call answers | median calls | median s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        s = r.summary()
        lines.append(f"| {r.row} | {r.runs} | {100 * s['right_call']:.0f}% ({r.right_call}) | "
                     f"{100 * s['carries_fact']:.0f}% ({r.carries}) | {100 * s['lead_language']:.0f}% ({r.lead_language}) | "
                     f"{100 * s['answer_language']:.0f}% ({r.answer_language}) | {r.invented_runs} | "
                     f"{r.not_found_covered}/{r.not_found_runs} | {r.tool_free} | {s['median_calls']:.0f} | "
                     f"{s['median_s']:.1f} |")
    return "\n".join(lines)


def rescore(paths: Sequence[Path]) -> str:
    """Score the runs saved by ``--json`` again with the current rules; one row per row name
    over all the files. Returns the table (:func:`domain_table`)."""
    rows: dict[str, DomainRow] = {}
    for path in paths:
        for run in json.loads(path.read_text(encoding="utf-8"))["runs"]:
            q = run["question"]
            question = DomainQuestion(**{**q, "facts": tuple(q["facts"])})
            calls = [aq.Call(**c) for c in run["calls"]]
            score = score_domain_run(question, calls, run["answer"], run["finish_reason"])
            rows.setdefault(run["row"], DomainRow(run["row"])).add(question.kind, score, run["model_calls"],
                                                                   run["seconds"])
    return domain_table(list(rows.values()))


# --------------------------------------------------------------------------- main


async def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, open the model, run the questions, print the summary table.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    parser.add_argument("--langs", nargs="+", choices=LANGUAGES, help="only questions in these languages")
    parser.add_argument("--questions", type=int, help="the first N questions (after the filters)")
    parser.add_argument("--rows", nargs="+", choices=("reactgraph", "create_agent"), default=["reactgraph"],
                        help="reactgraph: ReActAgent with default settings; create_agent: langchain's, same model")
    parser.add_argument("--local-models", nargs="+", metavar="NAME", help="catalogue models to run one after another")
    parser.add_argument("--run-timeout", type=float, default=600.0,
                        help="seconds a run may take before it counts as unanswered (default 600)")
    parser.add_argument("--json", dest="json_out", help="write the rows and every run to this JSON file")
    parser.add_argument("--verbose", action="store_true", help="print each run's calls, answer and score")
    parser.add_argument("--rescore", nargs="+", metavar="JSON",
                        help="run nothing: score the runs of these --json files again with the current rules "
                             "and print one table (several files, e.g. one per domain, are merged)")
    args = parser.parse_args(argv)
    if args.rescore:
        print(rescore([Path(p) for p in args.rescore]))
        return 0

    from langchain.agents import create_agent

    from reactgraph import ReActAgent
    from reactgraph.models import open_model

    questions = [q for q in QUESTIONS if q.domain in args.domains and (not args.langs or q.lang in args.langs)]
    questions = questions[: args.questions] if args.questions else questions
    hubs = {d: build_domain_tools(d) for d in args.domains}
    rows: dict[str, DomainRow] = {}
    records: list[dict[str, Any]] = []
    model_lines: list[str] = []
    for local_model in args.local_models or [None]:
        async with open_model(local_model=local_model) as resolved:
            suffix = f" · {local_model}" if local_model else ""
            agents: dict[tuple[str, str], Any] = {}
            for d, hub in hubs.items():
                for row in args.rows:
                    agents[(row, d)] = (create_agent(resolved.llm, hub) if row == "create_agent" else
                                        ReActAgent(resolved.llm, hub, abilities=resolved.abilities,
                                                   fallbacks=resolved.fallbacks))
            print(f"model: {resolved.description} · {len(questions)} questions", file=sys.stderr, flush=True)
            for number, question in enumerate(questions, 1):
                for row in args.rows:
                    agent = agents[(row, question.domain)]
                    run = (aq.run_create_agent(agent, question.text, 13) if row == "create_agent"
                           else aq.run_reactgraph(agent, row, question.text))
                    record = await aq.run_bounded(run, args.run_timeout, row, question.text)
                    score = score_domain_run(question, record.calls, record.answer, record.finish_reason)
                    name = row + suffix
                    rows.setdefault(name, DomainRow(name)).add(question.kind, score, record.model_calls, record.seconds)
                    records.append({"row": name, "question": asdict(question), "calls": [asdict(c) for c in record.calls],
                                    "answer": record.answer, "finish_reason": record.finish_reason,
                                    "model_calls": record.model_calls, "seconds": record.seconds,
                                    "error": record.error, "score": asdict(score)})
                    mark = (f"call {score.right_call:d} fact {score.carries_facts:d} lang {score.answer_language:d}"
                            f"({score.detected}) invented {len(score.invented)}")
                    print(f"  [{number}/{len(questions)}] {name} | {question.lang} | {question.text[:60]} | "
                          f"{record.finish_reason} | {mark} | {record.seconds:.0f} s", file=sys.stderr, flush=True)
                    if args.verbose:
                        for c in record.calls:
                            print(f"      call {c.tool}({json.dumps(c.args, ensure_ascii=False)}) -> "
                                  f"{(c.error or c.observation)[:120]!r}", file=sys.stderr)
                        print(f"      answer: {' '.join(record.answer.split())[:400]}", file=sys.stderr)
                        if score.invented:
                            print(f"      invented: {', '.join(score.invented)}", file=sys.stderr)
            model_lines.append(aq.model_line(resolved))
    print(f"\n{len(questions)} questions ({', '.join(args.domains)}), {date.today().isoformat()}")
    print("\n".join(model_lines) + "\n")
    print(domain_table(list(rows.values())))
    if args.json_out:
        payload = {"date": date.today().isoformat(), "models": model_lines,
                   "rows": [r.summary() for r in rows.values()], "runs": records}
        Path(args.json_out).write_text(json.dumps(payload, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
