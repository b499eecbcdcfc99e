"""What an answer the model writes must hold to stand in the observation answer's place (SPEC R13.1).

The observation answer (:func:`~reactgraph.answer.grounding.observation_answer`) holds every
part's lines and leads a yes/no question with the verdict the engine's rules give. A written
answer (``answer_from_observations`` off, ``grounding="enforce"``) is checked for the same,
for any tool output and any language:

* *Every part.* A question of two parts or more, each served by its own tool
  (``AgentState.part_tools``), is answered only when the answer passes on some fact of each
  part's data (:func:`left_out_parts`): a figure (any of its readings), a short word cell
  ("shipped", "LOW") or a state of the language table that the tool's successful results
  hold and the question does not write itself — looked for first among the facts no other
  part's tool returned. A part whose tool brought no data has nothing to pass on. Problem
  ``part_left_out``.
* *The verdict.* A yes/no question (:func:`~reactgraph.answer.lead.question_kind`) is
  answered only when the answer opens with the verdict the observations decide
  (:func:`~reactgraph.answer.lead.decided_verdict`), in the words the engine's own lead uses
  (the language table's ``verdict_yes``/``verdict_no``: "Yes", "Nein"… in every language). When no
  rule decides it, a written verdict cannot be checked and is not shown. Problem ``verdict``.

* *A record restated in another language.* An answer that lists the tools' records again
  (:func:`restated_record`: two list lines or more that carry the tools' values but are not
  the tools' own lines) in another language than the tools wrote them in translates each key
  and value, and a small model translates them wrongly ("配送状況: シャッフル" for "status:
  shipped", "チェッカー" for "tracking"): it reads no better than the record as the tool wrote
  it, which the observation answer shows. Problem ``restated_record``.

Measured (bench/README.md, "Answer writer per model"): Qwen2.5-Coder-1.5B answered "is this
machine overdue for inspection?" with "Yes, … is overdue" over a status the tools call normal;
the engine's lead there is "The data does not say."
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from reactgraph.answer.claims import line_cells, word_cells
from reactgraph.answer.grounding import informative, readable_observation
from reactgraph.answer.lead import question_kind
from reactgraph.answer.verdicts import decided_verdict, state_meanings
from reactgraph.core.language import phrase, reads_as
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.values import value_tokens

_OPENING = re.compile(r"^[\s#>*_~\"'(\[「]*([^\W\d_]+)")
_LATIN = r"0-9A-Za-z\u00c0-\u024f"


def _says_word(text: str, word: str) -> bool:
    """Whether ``text`` (lower-cased) holds ``word`` as a whole word: a Latin-script word ends
    where Latin letters end, so a particle of another script may follow it (a Korean or Japanese
    sentence keeps "normal" as the tool wrote it); any other word ends at any letter."""
    if re.fullmatch(rf"[{_LATIN}\s'’-]+", word):
        return re.search(rf"(?<![{_LATIN}]){re.escape(word)}(?![{_LATIN}])", text) is not None
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) is not None


def _part_facts(steps: Iterable[dict[str, Any]], question_values: set[str]) -> tuple[set[str], set[str], set[str]]:
    """What ``steps``' successful results state: ``(figures, word cells, state meanings)`` —
    every reading of their informative values not in ``question_values``, their cells of words
    only (lower-cased), and the states they state (:func:`~reactgraph.answer.lead.state_meanings`)."""
    figures: set[str] = set()
    words: set[str] = set()
    states: set[str] = set()
    for step in steps:
        observation = str(step.get("observation") or "")
        if step.get("error") or holds_no_data(observation):
            continue
        for line in readable_observation(observation).splitlines():
            figures.update(reading for token in value_tokens(line) if informative(token.value)
                           for reading in token.readings)
            words.update(word_cells(line))
            states.update(state_meanings(" ".join(line_cells(line))))
    return figures - question_values, words, states


def left_out_parts(answer: str, steps: Sequence[dict[str, Any]], question: str,
                   part_tools: Sequence[str]) -> list[str]:
    """The parts of a question whose data ``answer`` leaves out (module docstring, *Every part*).

    Args:
        answer: The written answer.
        steps: The turn's step records (``tool_name``, ``observation``, ``error``).
        question: The user's question: its own values are no part's data.
        part_tools: The tool of each part (``AgentState.part_tools``), less the tools whose
            calls change something (a confirmation is no data asked for).

    Returns:
        The tools of ``part_tools`` whose successful results state something and none of whose
        facts the answer passes on: a figure (any reading), a word cell written as a whole word,
        or a state meaning in any of the table's languages. ``[]`` for fewer than two parts.
    """
    if len(part_tools) < 2:
        return []
    question_values = {reading for token in value_tokens(question) for reading in token.readings}
    facts = {name: _part_facts([step for step in steps if step.get("tool_name") == name], question_values)
             for name in dict.fromkeys(part_tools)}
    said_figures = {reading for token in value_tokens(answer) for reading in token.readings}
    said_states = state_meanings(answer)
    lowered = answer.lower()
    left_out: list[str] = []
    for name, (figures, words, states) in facts.items():
        others = [fact for other, fact in facts.items() if other != name]
        own = (figures - {value for fact in others for value in fact[0]},
               words - {word for fact in others for word in fact[1]},
               states - {state for fact in others for state in fact[2]})
        figures, words, states = own if any(own) else (figures, words, states)
        if not (figures or words or states):
            continue
        if figures & said_figures or states & said_states or any(_says_word(lowered, word) for word in words):
            continue
        left_out.append(name)
    return left_out


def written_verdict(answer: str, language: str | None) -> str | None:
    """The verdict ``answer`` opens with: ``"yes"`` or ``"no"`` when its first word (after
    Markdown marks) is the word the language table's ``verdict_yes``/``verdict_no`` lead
    opens with in ``language`` ("Yes", "Nein", and their kin in every language), case aside;
    else ``None``."""
    opening = _OPENING.match(answer)
    if not opening:
        return None
    word = opening.group(1).casefold()
    for verdict in ("yes", "no"):
        lead = _OPENING.match(phrase(f"verdict_{verdict}", language, facts=""))
        if lead and lead.group(1).casefold() == word:
            return verdict
    return None


def wrong_verdict(answer: str, steps: Sequence[dict[str, Any]], question: str, language: str | None) -> bool:
    """Whether a written answer to a yes/no question fails the verdict rule (module docstring,
    *The verdict*): it opens with no verdict, or with another than the one the observations
    decide, or no rule decides one. ``False`` for any other kind of question."""
    if question_kind(question) != "yes_no":
        return False
    decided = decided_verdict(question, steps)
    return decided is None or written_verdict(answer, language) != decided[0]


_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.*\S)")


def restated_record(answer: str, steps: Sequence[dict[str, Any]], language: str | None) -> bool:
    """Whether ``answer`` lists the tools' records again in another language than the tools'
    (module docstring): two list lines or more that each carry a value of the successful
    results (a figure, an id, a date) and are none of their lines (markup aside), while the
    results do not read as ``language`` (:func:`~reactgraph.core.language.reads_as`)."""
    if language is None:
        return False
    results = "\n".join(readable_observation(str(step.get("observation") or ""))
                         for step in steps if not step.get("error"))
    if not results.strip() or reads_as(results, language) is not False:
        return False
    values = {reading for token in value_tokens(results) for reading in token.readings}
    own = {_plain(line) for line in results.splitlines() if line.strip()}
    restated = 0
    for line in answer.splitlines():
        listed = _LIST_LINE.match(line)
        if not listed or _plain(listed.group(1)) in own:
            continue
        if any(reading in values for token in value_tokens(listed.group(1)) for reading in token.readings):
            restated += 1
    return restated >= 2


def _plain(line: str) -> str:
    """A line without Markdown emphasis and list marks, its cells' separators as " | "."""
    text = re.sub(r"[*_`]+", "", line).strip(" -•\t")
    return re.sub(r"\s*(?:\||·)\s*", " | ", text)


def written_problems(answer: str, steps: Sequence[dict[str, Any]], question: str, part_tools: Sequence[str],
                     language: str | None) -> list[str]:
    """The answer check's labels of this module, next to
    :func:`~reactgraph.answer.fitness.answer_problems`' and
    :func:`~reactgraph.answer.claims.claim_problems`'.

    Args:
        answer, steps, question, part_tools: As for :func:`left_out_parts`.
        language: The turn's language (the verdict's words).

    Returns:
        ``"part_left_out"`` (:func:`left_out_parts`), ``"verdict"`` (:func:`wrong_verdict`) and
        ``"restated_record"`` (:func:`restated_record`), those found, in this order.
    """
    problems = ["part_left_out"] if left_out_parts(answer, steps, question, part_tools) else []
    problems += ["verdict"] if wrong_verdict(answer, steps, question, language) else []
    return problems + (["restated_record"] if restated_record(answer, steps, language) else [])
