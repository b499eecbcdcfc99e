"""Relevance-ranked offering: tools and argument values in the order a question makes likely
(SPEC R13.1).

Small models pick by position: the first tool offered, the first value of an enum. So
everywhere a model chooses from a list, the list is put in order of relevance to the
question:

* :class:`ToolRanker` scores every tool against the question with Okapi BM25 over a
  document made of the tool's name, description, argument names and descriptions, the
  string values of its argument enums, and the keywords the tool declares in
  ``tool.metadata["keywords"]`` (:data:`KEYWORDS_KEY`; e.g. words in the language its
  users write). A tool that can take an identifier the question names
  (``PO-102`` is one of its enum values, or ``PO-109`` has the shape of its values) ranks
  above every tool that cannot, whatever their words share (:meth:`ToolRanker.scores`). The
  index is built once per agent.
* :func:`named_values` finds the enum values a question names (``PO-103``, ``Line A``),
  in the order the question names them;
  :func:`reactgraph.protocol.action_schema.prefer_named_values` moves them to the front of every
  enum of a schema.

Tokens (:func:`tokenize`), for every script: the text is NFKC-normalised (half-width kana
become full-width) and case-folded; a run of Unicode letters and digits is one word, its
accents folded (``Müller`` → ``muller``, one word), reduced to its Snowball stem in the
text's language (``snowballstemmer``, :data:`reactgraph.core.language.STEMMERS`; a language
without a stemmer is not stemmed); every run of Han, kana or Hangul is split into its
character bigrams (a one-character run is kept whole), since those scripts write words
without spaces: ``"東京駅の在庫"`` gives ``東京 京駅 駅の の在 在庫``. English stop words are
left out (a short list: no library of the dependencies gives stop words, and a word every
tool shares scores little in BM25 anyway). BM25 is written out here (a few lines over a few
dozen tool documents) rather than taken from a package, none of which tokenizes the
scripts without spaces without a dictionary.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import snowballstemmer
from langchain_core.tools import BaseTool

from reactgraph.protocol.action_schema import enum_strings, tool_args_schema, value_schema
from reactgraph.core.language import STEMMERS, common_words, detect_language
from reactgraph.tools.values import ValueReader

KEYWORDS_KEY = "keywords"
"""Key of ``tool.metadata`` holding extra search words for the tool (a list of strings),
e.g. ``["status", "Zustand", "状態"]``."""

_STEMMERS = threading.local()  # a Snowball stemmer keeps the word it works on: one per thread

STEM_CACHE_SIZE = 16384
"""Distinct words whose stems :func:`stem` keeps (the most recently used)."""


@functools.lru_cache(maxsize=STEM_CACHE_SIZE)
def stem(word: str, language: str | None = "en") -> str:
    """The Snowball stem of a lower-cased word in ``language`` (``alarms`` -> ``alarm``;
    ``Rechnungen`` -> ``rechnung`` in ``"de"``), cached: the stemmer is pure Python, and
    every question of a server is stemmed twice (ranking, named values) with words its
    earlier questions mostly had. A language without a Snowball stemmer (or ``None``)
    leaves the word as it is."""
    algorithm = STEMMERS.get(language or "")
    if algorithm is None:
        return word
    stemmers = getattr(_STEMMERS, "by_algorithm", None)
    if stemmers is None:
        stemmers = _STEMMERS.by_algorithm = {}
    stemmer = stemmers.get(algorithm)
    if stemmer is None:
        stemmer = stemmers[algorithm] = snowballstemmer.stemmer(algorithm)
    return stemmer.stemWord(word)

BM25_K1 = 1.2
"""BM25 term-frequency saturation."""

BM25_B = 0.75
"""BM25 document-length normalization."""

_WORD = re.compile(r"[^\W_]+")
_CJK_RUN = re.compile(r"([\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                      r"\uac00-\ud7a3\uf900-\ufaff]+)")


def _fold(word: str) -> str:
    """``word`` without its accents (``müller`` → ``muller``, ``é`` → ``e``)."""
    return "".join(char for char in unicodedata.normalize("NFKD", word) if not unicodedata.combining(char))


_CLITIC = re.compile(r"(?<=[^\W\d_])['\u2019](?:s|t|d|ll|re|ve|m)\b|\b(?:[ldcjmnst]|qu)['\u2019](?=[^\W\d_])")


def _words(text: str) -> list[tuple[str, bool]]:
    """The words of ``text`` as ``(word, cjk)``: NFKC-normalised and case-folded, runs of
    letters and digits split where Han, kana or Hangul start or end (``注文4411の状況`` →
    ``注文``, ``4411``, ``の状況``); accents are kept (the stemmers know them) and folded by
    the callers. A clitic joined by an apostrophe is not a word of its own: ``what's`` is
    ``what``, ``l'état`` is ``état`` (a lone ``s`` would match every tool that says "status")."""
    out: list[tuple[str, bool]] = []
    text = _CLITIC.sub("", unicodedata.normalize("NFKC", text).casefold())
    for run in _WORD.findall(text):
        for index, part in enumerate(_CJK_RUN.split(run)):
            if part:
                out.append((part, bool(index % 2)))
    return out
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from give how i in is it its me my of on or please show "
    "tell that the their them there these this to was what when where which who why with you your".split()
)


def tokenize(text: str, language: str | None = None) -> list[str]:
    """Search tokens of ``text`` (see the module docstring).

    Args:
        text: Any text, e.g. a question or a tool description.
        language: The language whose stemmer reduces its words (ISO 639-1); ``None``
            detects it from ``text`` (:func:`~reactgraph.core.language.detect_language`).

    Returns:
        Case-folded words without accents or English stop words, each reduced to its
        Snowball stem in ``language`` (``running`` -> ``run``, ``alarms`` -> ``alarm``), and
        the character bigrams of Han, kana and Hangul runs, in text order.
    """
    language = language or detect_language(text)
    tokens: list[str] = []
    for word, cjk in _words(text):
        if cjk:
            tokens.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
        elif _fold(word) not in _STOP_WORDS:
            tokens.append(_fold(stem(word, language)) if not word.isdigit() else word)
    return tokens


@functools.lru_cache(maxsize=64)
def _common(language: str | None) -> frozenset[str]:
    """:func:`~reactgraph.core.language.common_words` of ``language``, folded as :func:`tokenize` folds."""
    return frozenset(_fold(word) for word in common_words(language))


def specific_tokens(text: str, language: str | None, languages: Iterable[str] = ()) -> set[str]:
    """The tokens of ``text`` (:func:`tokenize`, stemmed in ``language`` and in each of
    ``languages``) left when its common words are left out: a word written in the common-word
    list of any of those languages (:func:`~reactgraph.core.language.common_words`, compared
    as written, not by stem: "probability" is not "probably"), a Han, kana or Hangul bigram
    that is one, and a one-letter Latin word (the ``s`` of "what's").

    Args:
        text: A question.
        language: Its language (``None``: unknown).
        languages: The tools' languages (:attr:`ToolRanker.languages`).

    Returns:
        The tokens that may name a subject.
    """
    every = list(dict.fromkeys([language, *languages]))
    common = frozenset().union(*(_common(code) for code in every if code))
    kept: list[str] = []
    for word, cjk in _words(text):
        if cjk:
            kept.extend(pair for pair in ([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
                        if pair not in common)
        elif not (_fold(word) in common or (len(word) == 1 and word.isascii() and word.isalpha())):
            kept.append(word)
    text = " ".join(kept)
    return {token for code in every for token in tokenize(text, code or None)}


def _argument_text(schema: Any) -> Iterable[str]:
    if isinstance(schema, dict):
        for name, item in (schema.get("properties") or {}).items():
            yield name.replace("_", " ")
            if isinstance(item, dict) and isinstance(item.get("description"), str):
                yield item["description"]
        for value in schema.values():
            if isinstance(value, (dict, list)):
                yield from _argument_text(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _argument_text(item)


def tool_document(tool: BaseTool) -> str:
    """The text :class:`ToolRanker` indexes for ``tool``: its name (twice, underscores as
    spaces), description, argument names and descriptions, distinct enum values, and
    declared keywords (twice)."""
    schema = tool_args_schema(tool)
    keywords = [str(word) for word in (tool.metadata or {}).get(KEYWORDS_KEY) or ()]
    name = tool.name.replace("_", " ")
    parts = [name, name, tool.description or "", *_argument_text(schema),
             *dict.fromkeys(enum_strings(schema)), *keywords, *keywords]
    return "\n".join(parts)


class ToolRanker:
    """BM25 ranking of a fixed set of tools against questions (SPEC R13.1).

    Args:
        tools: The tools to rank (an agent's registry), in registration order.

    Example::

        ranker = ToolRanker(tools)
        ranker.rank("注文 PO-103 の状況は？")[0]   # ("get_order_status", 5.1)
    """

    def __init__(self, tools: Sequence[BaseTool]) -> None:
        self.names = [tool.name for tool in tools]
        documents = [tool_document(tool) for tool in tools]
        # The tools' own languages (most often one): a question's words are stemmed in each of
        # them too, so a word the question shares with a tool in another language still matches.
        self.languages: list[str] = list(dict.fromkeys(detect_language(document) or "en" for document in documents))
        """The languages the tools are described in, the most used first (["en"] for most toolsets)."""
        self._docs = [Counter(tokenize(document)) for document in documents]
        # What a tool says it is about: the words its name and its description both carry, and
        # its declared keywords. A common word ("order" of get_order_status, "Tell where an order
        # stands") counts as shared only when it is one of these.
        self._subjects = [
            (set(tokenize(tool.name.replace("_", " "))) & set(tokenize(tool.description or "")))
            | set(tokenize(" ".join(str(word) for word in (tool.metadata or {}).get(KEYWORDS_KEY) or ())))
            for tool in tools]
        # What each tool's arguments take (enum ids, formats, patterns, examples' shapes),
        # for the identifier tier of :meth:`scores`.
        self.values = ValueReader({tool.name: value_schema(tool) for tool in tools}, stem)
        self._lengths = [sum(doc.values()) for doc in self._docs]
        self._average = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        frequency: Counter[str] = Counter()
        for doc in self._docs:
            frequency.update(doc.keys())
        count = len(self._docs)
        self._idf = {term: math.log(1 + (count - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}

    def scores(self, query: str, language: str | None = None) -> dict[str, float]:
        """Relevance of every tool for ``query``: ``{name: score}``, 0.0 for no shared term
        and no identifier it takes.

        The score is the tool's BM25 score plus, for every identifier the question names that
        the tool can take (:meth:`reactgraph.tools.values.ValueReader.find`: one of its enum ids, an
        unlisted id of their shape, an e-mail for an e-mail argument, a value of an argument's
        pattern or examples' shape such as ``AB/100`` for "a SKU like AB/123"), the most BM25 any tool can score for
        the query. So tools rank first by how many of the question's identifiers they take,
        then by BM25: "Ersatzteile auf Lager für PO-102" ranks the parts-for-an-order tool
        (it takes ``PO-102``) above the part-search tool whose keywords match more words.
        """
        terms = set(tokenize(query, language))
        for tools_language in self.languages:
            terms.update(tokenize(query, tools_language))
        result: dict[str, float] = {}
        for name, doc, length in zip(self.names, self._docs, self._lengths, strict=True):
            score = 0.0
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / self._average) if self._average else BM25_K1
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
            result[name] = score
        identifiers = [found.value for found in self.values.find(query) if found.identifier]
        if identifiers:
            # Above any BM25 score: each term adds less than idf * (k1 + 1).
            tier = sum(self._idf.get(term, 0.0) for term in terms) * (BM25_K1 + 1) + 1.0
            for name in self.names:
                result[name] += tier * sum(self.values.takes(name, value) for value in identifiers)
        return result

    def shared_subjects(self, query: str, language: str | None = None) -> dict[str, set[str]]:
        """The words of ``query`` each tool's document shares that can name what the question
        is about: tokens other than common words (:func:`specific_tokens`), and common words
        that both the tool's name and its description carry, or its declared keywords ("order"
        for ``get_order_status``, "Tell where an order stands"). "Find a picnic spot" shares
        nothing with ``local_fauna``, "Find information about the local fauna". A number is a
        value, not a subject: the "2" of "a list of 2 or more numbers" is shared with no question.

        Args:
            query: The question.
            language: Its language (as for :meth:`scores`).

        Returns:
            ``{name: tokens}`` for every tool, in registration order (empty sets for none).
        """
        specific = specific_tokens(query, language, self.languages)
        every = set(tokenize(query, language))
        for tools_language in self.languages:
            every.update(tokenize(query, tools_language))
        return {name: {term for term in every
                       if term in doc and not term.isdigit() and (term in specific or term in subject)}
                for name, doc, subject in zip(self.names, self._docs, self._subjects, strict=True)}

    def rank(self, query: str, language: str | None = None) -> list[tuple[str, float]]:
        """Every tool as ``(name, score)``, best first; ties keep registration order
        (``language``: the question's, as for :meth:`scores`)."""
        scores = self.scores(query, language)
        return sorted(scores.items(), key=lambda item: -item[1])

    def order(self, names: Sequence[str], query: str) -> list[str]:
        """``names`` (a subset of the ranked tools) sorted best first for ``query``; names
        this ranker does not know keep their relative order at the end."""
        position = {name: index for index, (name, _) in enumerate(self.rank(query))}
        return sorted(names, key=lambda name: position.get(name, len(position)))


def _enum_reader(values: Iterable[str]) -> ValueReader:
    return _enum_reader_of(tuple(dict.fromkeys(values)))


@functools.lru_cache(maxsize=64)
def _enum_reader_of(values: tuple[str, ...]) -> ValueReader:
    return ValueReader({"": {"type": "object", "properties": {"value": {"type": "string", "enum": list(values)}}}}, stem)


def named_values(query: str, values: Iterable[str]) -> list[str]:
    """The ``values`` the question names, in the order it names them
    (:meth:`reactgraph.tools.values.ValueReader.find` over one enum of them: whole words, letter
    case and accents folded, Latin words by stem — "Which inspections failed?" names
    ``fail``).

    Args:
        query: The question.
        values: Candidate enum values, e.g. every equipment id.

    Returns:
        The named values, e.g. ``["PO-101", "PO-103"]`` for "Compare PO-101 and
        PO-103"; values without tokens are never named.
    """
    known = set(values)
    return [found.value for found in _enum_reader(values).find(query) if found.value in known]


def enum_values(tools: Sequence[BaseTool]) -> list[str]:
    """Every distinct string enum value in the argument schemas of ``tools``."""
    return list(dict.fromkeys(value for tool in tools for value in enum_strings(tool_args_schema(tool))))


def unlisted_values(query: str, values: Iterable[str]) -> list[str]:
    """Identifiers the question writes in the shape of some of ``values`` but that are not
    among them, in the order the question names them: ``["PO-109"]`` for "What is the
    status of PO-109?" when the orders are ``PO-101``…``PO-104`` (see
    :meth:`reactgraph.tools.values.ValueReader.find`). Only shapes with a digit count; a match
    takes the case of the values of its shape when they all share one (``po-109`` ->
    ``PO-109``).

    Args:
        query: The question.
        values: Candidate enum values.

    Returns:
        The unlisted identifiers, without duplicates.
    """
    known = set(values)
    return [found.value for found in _enum_reader(values).find(query) if found.value not in known]


CATALOG_LINE_CHARS = 80
"""Characters of one catalog line (name and first description line) (SPEC R5.1)."""


def catalog_line(tool: BaseTool, limit: int = CATALOG_LINE_CHARS) -> str:
    """``- name: first line of the description``, cut to ``limit`` characters (with "…")."""
    first = (tool.description or "").strip().splitlines()[0] if (tool.description or "").strip() else ""
    line = f"- {tool.name}: {first}" if first else f"- {tool.name}"
    return line if len(line) <= limit else line[: limit - 1] + "…"
