"""The question's language, and every sentence the engine writes itself, in that language.

The engine writes a few sentences of its own into answers and notes: the lead of an answer
made of the observations, "no tool returned data", what the agent can look up, the note
under an answer naming values no tool returned, the step summary of a run that stopped.
They all live in one table, :data:`PHRASES` (key → language code → template, in
:mod:`reactgraph.core.phrases`), and are written with :func:`phrase`. The table covers :data:`LANGUAGES`; a language it lacks, or a
question whose language cannot be told (a bare id, one word), gets :data:`NEUTRAL`, a form
of symbols and the values themselves — never English by default.

:func:`detect_language` tells the language of a question once (cached by its text; the
``start_turn`` node stores it in the state as ``language`` for every node of the turn):

* a script that names its language decides alone (Hangul → ``ko``; kana → ``ja``; Han
  without kana → ``zh``; Cyrillic → ``ru``; Thai, Greek, Arabic, Hebrew, Devanagari) when its
  characters, each weighing :data:`SCRIPT_LETTER_WEIGHT` letters, outweigh the other letters:
  a Latin name or enum word in a Korean or Chinese question ("Tomas Ekberg 작가 책 있어요?",
  "riverside 分馆 几点开门？") does not make it a Latin-script one;
* Latin text is classified by ``py3langid`` (a Naive Bayes model over byte n-grams, no
  network) restricted to :data:`LATIN_CANDIDATES` — the table's Latin-script languages and a
  few others, so that a Dutch question is recognised as a language the table lacks rather
  than forced into German — and kept only at :data:`DETECTION_MIN_PROBABILITY` or more.

Ids, numbers, dates, e-mail addresses and URLs are left out before detecting: they are no
one's language. Measured (``bench/README.md``, "Languages"): 57 of 60 short questions in the
table's 12 languages right, the three misses one-word greetings that fall below the
threshold (neutral form); 0.03 ms a question, the model loaded once in about 0.5 s.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Mapping
from typing import Any

from reactgraph.core.phrases import NEUTRAL, PHRASES, phrase  # noqa: F401 (re-exported: the table's old home)

LANGUAGES: tuple[str, ...] = ("en", "ko", "ja", "zh", "es", "de", "fr", "pt", "it", "ru", "vi", "id")
"""The languages :data:`PHRASES` covers (ISO 639-1)."""

LANGUAGE_NAMES: Mapping[str, str] = {
    "en": "English", "ko": "Korean", "ja": "Japanese", "zh": "Chinese", "es": "Spanish", "de": "German",
    "fr": "French", "pt": "Portuguese", "it": "Italian", "ru": "Russian", "vi": "Vietnamese", "id": "Indonesian",
    "nl": "Dutch", "pl": "Polish", "tr": "Turkish", "sv": "Swedish", "cs": "Czech", "ro": "Romanian",
    "th": "Thai", "el": "Greek", "ar": "Arabic", "he": "Hebrew", "hi": "Hindi",
}
"""English names of the languages :func:`detect_language` can return (for prompts that ask a
model to write in one)."""

LATIN_CANDIDATES: tuple[str, ...] = ("en", "es", "de", "fr", "pt", "it", "vi", "id", "nl", "pl", "tr", "sv", "cs", "ro")
"""The languages a Latin-script text is classified among."""

DETECTION_MIN_PROBABILITY = 0.3
"""The least probability (normalised over :data:`LATIN_CANDIDATES`) at which a Latin-script
text's language is taken; below it the language is unknown (``None``)."""

OUTSIDE_TABLE_MIN_PROBABILITY = 0.8
"""The least probability at which a Latin-script text is taken to be in a language
:data:`PHRASES` lacks. A short question is often close between languages ("List open orders"
scores Dutch 0.66, English 0.25): below this the best of the table's languages is taken when it
reaches :data:`DETECTION_MIN_PROBABILITY` of the top score, so a short English question is not
answered in the neutral form."""

MIN_LETTERS = 2
"""Fewer letters than this (after values are left out) tell no language."""

STEMMERS: Mapping[str, str] = {
    "en": "english", "es": "spanish", "de": "german", "fr": "french", "pt": "portuguese", "it": "italian",
    "ru": "russian", "id": "indonesian", "nl": "dutch", "pl": "polish", "tr": "turkish", "sv": "swedish",
    "cs": "czech", "ro": "romanian", "el": "greek", "ar": "arabic", "hi": "hindi",
}
"""Language code → its ``snowballstemmer`` algorithm (languages without one are not stemmed)."""

_SCRIPTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ko", re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")),
    ("ja", re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")),
    ("zh", re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("th", re.compile(r"[\u0e00-\u0e7f]")),
    ("el", re.compile(r"[\u0370-\u03ff]")),
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
)
SCRIPT_LANGUAGES: frozenset[str] = frozenset(code for code, _ in _SCRIPTS)
"""The languages their script alone names (no other language of :data:`LANGUAGE_NAMES` is
written in it)."""

_LETTER = re.compile(r"[^\W\d_]")
_NOT_LANGUAGE = re.compile(
    r"\S+@\S+|\w+://\S+|[0-9A-Za-z_./-]*\d[0-9A-Za-z_./:-]*",  # e-mail addresses, URLs, ids, numbers, dates
)

_identifier: Any = None
_identifier_lock = threading.Lock()


def _latin_identifier() -> Any:
    """The ``py3langid`` classifier restricted to :data:`LATIN_CANDIDATES`, loaded once."""
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE, norm_probs=True)
            identifier.set_languages(list(LATIN_CANDIDATES))
            _identifier = identifier
        return _identifier


SCRIPT_LETTER_WEIGHT = 3
"""Latin letters one character of a script that names its language outweighs in
:func:`detect_language` and :func:`sentence_in`: a Hangul syllable, a kana or a Han character
carries about as much of a sentence as three Latin letters (a Korean word of two syllables, an
English one of six letters)."""


@functools.lru_cache(maxsize=4096)
def detect_language(text: str) -> str | None:
    """The language of ``text`` as an ISO 639-1 code, or ``None`` when it cannot be told.

    Args:
        text: A question (any length; values such as ``AB/100``, ``2026-01-28`` and
            ``ana@example.com`` are ignored).

    Returns:
        A code of :data:`LANGUAGE_NAMES` (``"ja"`` for "注文4411の状況は？", ``"de"`` for
        "Wie ist der Status der Bestellung 4411?"), or ``None`` for a text with fewer than
        :data:`MIN_LETTERS` letters or a Latin text classified below
        :data:`DETECTION_MIN_PROBABILITY` (a bare "hello"). The rule is the module docstring's.
    """
    words = _NOT_LANGUAGE.sub(" ", text or "")
    letters = len(_LETTER.findall(words))
    if letters < MIN_LETTERS:
        return None
    counts = {code: len(pattern.findall(words)) for code, pattern in _SCRIPTS}
    if counts["ja"]:
        counts["ja"] += counts.pop("zh")  # kanji between kana are Japanese
    best = max(counts, key=counts.__getitem__)
    if counts[best] and counts[best] * SCRIPT_LETTER_WEIGHT > letters - counts[best]:
        return best  # "Tomas Ekberg 작가 책 있어요?", "riverside 分馆 几点开门？": the names are no one's language
    ranking = _latin_identifier().rank(words)
    code, probability = ranking[0]
    if code not in LANGUAGES and probability < OUTSIDE_TABLE_MIN_PROBABILITY:
        in_table = next((candidate for candidate in ranking if candidate[0] in LANGUAGES), None)
        if in_table is not None and in_table[1] >= DETECTION_MIN_PROBABILITY * probability:
            code, probability = in_table[0], max(in_table[1], DETECTION_MIN_PROBABILITY)
    return code if probability >= DETECTION_MIN_PROBABILITY else None


READS_AS_RANK = 2
"""How high ``language`` must rank among the Latin-script languages a short text may be in
for :func:`reads_as` to say it is in it: a tool's terse line ("PU-7 · Pump 7 · stopped")
is told apart from Dutch by a word or two, so the first place alone would miss it."""


def reads_as(text: str, language: str) -> bool | None:
    """Whether ``text`` (a tool's line, a lead) reads as ``language``: for a language of its
    own script (:data:`SCRIPT_LANGUAGES`), whether that script is most of its letters (kana
    and Chinese characters for Japanese); for a
    Latin-script one, whether the text is mostly Latin letters and ``language`` is among the
    :data:`READS_AS_RANK` likeliest languages for it. ``None`` when the text has fewer than
    :data:`MIN_LETTERS` letters (bare values are no one's language).

    Args:
        text: Any text; values (ids, dates, numbers, e-mail addresses) are ignored.
        language: An ISO 639-1 code.

    Returns:
        ``True``, ``False`` or ``None`` as above.
    """
    words = _NOT_LANGUAGE.sub(" ", text or "")
    letters = len(_LETTER.findall(words))
    if letters < MIN_LETTERS:
        return None
    counts = {code: len(pattern.findall(words)) for code, pattern in _SCRIPTS}
    if language in SCRIPT_LANGUAGES:  # Japanese is written in kana and in the Chinese characters
        return (counts[language] + (counts["zh"] if language == "ja" else 0)) * 2 > letters
    if sum(counts.values()) * 2 > letters:
        return False
    return language in [code for code, _ in _latin_identifier().rank(words)[:READS_AS_RANK]]


def sentence_in(text: str, language: str) -> bool:
    """Whether ``text`` reads as written in ``language``: :func:`detect_language` says so, or
    ``language`` is one its script names (:data:`SCRIPT_LANGUAGES`) and that script's
    characters, each weighing :data:`SCRIPT_LETTER_WEIGHT` letters, outweigh every other letter
    of it. An answer keeps a tool's words as the tool wrote them: "PRS-002 (Stamping Press)의
    상태는 normal입니다" is Korean though most of its letters are Latin.

    Args:
        text: A line or an answer (values are ignored, as :func:`detect_language` ignores them).
        language: An ISO 639-1 code.

    Returns:
        ``True`` when ``text`` is in ``language`` by either rule.
    """
    if detect_language(text) == language:
        return True
    pattern = dict(_SCRIPTS).get(language)
    if pattern is None:
        return False
    words = _NOT_LANGUAGE.sub(" ", text or "")
    own = len(pattern.findall(words))
    if language == "ja":  # kanji between kana are Japanese
        own += len(dict(_SCRIPTS)["zh"].findall(words))
    return own > 0 and own * SCRIPT_LETTER_WEIGHT > len(_LETTER.findall(words)) - own


_WORD = re.compile(r"[^\W\d_]+")


def without_data_words(text: str, data: str, language: str) -> str:
    """``text`` less the words ``data`` holds (case-folded, whole words): the tools' own words an
    answer keeps as they wrote them — names, states, units — are no one's language. For a
    language its script names (:data:`SCRIPT_LANGUAGES`), the words written in that script stay:
    an answer over data in its own language keeps its language."""
    known = {word.casefold() for word in _WORD.findall(data)}
    own = dict(_SCRIPTS).get(language)

    def keep(match: re.Match[str]) -> str:
        word = match.group(0)
        return word if word.casefold() not in known or (own is not None and own.search(word)) else " "

    return _WORD.sub(keep, text)


def answer_in_language(answer: str, language: str, data: str = "") -> bool:
    """Whether a written answer is in ``language`` (the question's), read on its first line.

    The rule: the first line is :func:`sentence_in` the language, as written or without the words
    of ``data`` (:func:`without_data_words`: "재고 부족한 부품은 P-5001 (Heater band 60 mm, 400 W),
    P-1001 (Spindle bearing 7014C)입니다" is Korean though most of its letters are the tools').
    A first line in another language fails; one that tells no language (an id alone) passes for
    a Latin-script language, and for a language its script names the whole answer decides, by
    the same rule.

    Args:
        answer: The written answer.
        language: The question's language (an ISO 639-1 code).
        data: The text the answer was written from (the tools' successful results); ``""``
            leaves no word out.

    Returns:
        ``True`` when the answer is in ``language`` by the rule above.
    """
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    first = lines[0] if lines else ""

    def is_in(text: str) -> bool:
        return sentence_in(text, language) or bool(data) and sentence_in(
            without_data_words(text, data, language), language)

    if is_in(first):
        return True
    if detect_language(first) is not None:
        return False
    return language not in SCRIPT_LANGUAGES or is_in(answer)


@functools.lru_cache(maxsize=64)
def common_words(language: str | None) -> frozenset[str]:
    """The common words of ``language`` (its stop words: "find", "get", "show", "year" in
    English; "の", "これ" in Japanese), case-folded, from the
    ``stopwordsiso`` lists (58 languages; none of this package's own).

    The lexical gate (:func:`reactgraph.nodes.select_tools.gate_closes`) does not count a word
    of these as the question sharing a subject with a tool: a question that shares only "find"
    with a tool's "Find information about…" is not about that tool.

    Args:
        language: An ISO 639-1 code, or ``None``.

    Returns:
        The folded words; empty for ``None`` or a language the lists lack.
    """
    if not language:
        return frozenset()
    import stopwordsiso  # loaded on first use: a JSON file of a few hundred kilobytes

    if not stopwordsiso.has_lang(language):
        return frozenset()
    return frozenset(word.strip().casefold() for word in stopwordsiso.stopwords(language) if word.strip())


def turn_language(state: Mapping[str, Any]) -> str | None:
    """The language of a turn: the ``language`` its state holds (``start_turn`` detects it
    once), else :func:`detect_language` of its ``query`` (a state from before the field)."""
    return state["language"] if "language" in state else detect_language(state.get("query") or "")


def language_name(code: str | None) -> str | None:
    """The English name of a language code (``"ja"`` → ``"Japanese"``); ``None`` for none."""
    return LANGUAGE_NAMES.get(code, code) if code else None


QUESTION_WORDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "en": {"yes_no": ("is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had",
                      "will", "would", "should", "any", "must"),
           "which": ("what", "which", "who", "whom", "whose", "where", "when", "why", "how")},
    "es": {"yes_no": ("¿es", "¿está", "¿están", "¿hay", "¿tiene", "¿tienen", "¿puede", "¿son"),
           "which": ("qué", "cuál", "cuáles", "quién", "dónde", "cuándo", "cómo", "cuánto", "cuántos")},
    "de": {"yes_no": ("ist", "sind", "hat", "haben", "gibt", "kann", "läuft"),
           "which": ("welche", "welcher", "welches", "wer", "wo", "wann", "warum", "wie")},
    "fr": {"yes_no": ("est-ce", "est-il", "est-elle", "a-t-il", "sont-ils", "y"),
           "which": ("quel", "quelle", "quels", "quelles", "qui", "où", "quand", "pourquoi", "comment")},
    "pt": {"yes_no": ("é", "está", "estão", "há", "tem"),
           "which": ("qual", "quais", "quem", "onde", "quando", "porque", "como", "quanto")},
    "it": {"yes_no": ("è", "sono", "c'è", "ha", "hanno"),
           "which": ("quale", "quali", "chi", "dove", "quando", "perché", "come", "quanto")},
    "ru": {"yes_no": ("ли",), "which": ("что", "какой", "какая", "какие", "кто", "где", "когда", "почему", "как", "сколько")},
    "vi": {"yes_no": ("có",), "which": ("gì", "nào", "ai", "đâu", "khi nào", "tại sao", "bao nhiêu")},
    "id": {"yes_no": ("apakah",), "which": ("apa", "mana", "siapa", "kapan", "mengapa", "bagaimana", "berapa")},
    "ko": {"yes_no": (),
           "which": ("무엇", "뭐", "뭔", "무슨", "어떤", "어느", "어떻게", "어때", "왜", "언제", "어디", "누구", "몇", "얼마")},
    "ja": {"yes_no": (), "which": ("何", "どの", "どれ", "どこ", "いつ", "なぜ", "誰", "どう", "いくつ", "いくら")},
    "zh": {"yes_no": (), "which": ("什么", "哪", "谁", "为什么", "怎么", "如何", "怎样", "多少", "几")},
}
"""Question words per language (:func:`reactgraph.answer.lead.question_kind`): ``yes_no`` the words
that open a yes/no question (its first word), ``which`` the question words of a which/what
question (anywhere). A Korean, Japanese or Chinese question is yes/no when it ends in a
question mark (or か / 吗) and has none of its language's question words."""

VERDICT_WORDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "above": {
        "en": ("above", "over", "exceed", "exceeds", "exceeded", "exceeding", "higher", "more", "greater", "hotter",
               "beyond"),
        "ko": ("넘", "초과", "이상", "높", "상회"), "ja": ("超え", "超過", "以上", "高い", "上回"),
        "zh": ("超过", "超出", "高于", "以上", "大于"),
        "es": ("supera", "superado", "excede", "encima", "más", "mayor"),
        "de": ("über", "überschritten", "überschreitet", "höher", "mehr", "größer"),
        "fr": ("dessus", "dépasse", "dépassé", "supérieur", "plus"),
        "pt": ("acima", "excede", "excedeu", "ultrapassa", "mais", "maior"),
        "it": ("sopra", "supera", "superato", "più", "maggiore"),
        "ru": ("выше", "больше", "превышает", "превышен", "превысил"),
        "vi": ("vượt", "trên", "cao hơn", "hơn"), "id": ("melebihi", "di atas", "lebih"),
    },
    "below": {
        "en": ("below", "under", "less", "lower", "fewer", "smaller", "colder"),
        "ko": ("미만", "이하", "낮", "밑", "하회"), "ja": ("未満", "以下", "低い", "下回"),
        "zh": ("低于", "以下", "小于", "不足"),
        "es": ("debajo", "menos", "menor", "inferior"), "de": ("unter", "unterhalb", "niedriger", "weniger"),
        "fr": ("dessous", "moins", "inférieur"), "pt": ("abaixo", "menos", "menor"),
        "it": ("sotto", "meno", "minore"), "ru": ("ниже", "меньше"), "vi": ("dưới", "thấp hơn"),
        "id": ("di bawah", "kurang"),
    },
    "limit": {
        "en": ("limit", "limits", "threshold", "thresholds", "max", "maximum", "min", "minimum", "target"),
        "ko": ("한계", "한도", "임계", "기준", "최대", "최소", "목표"), "ja": ("限界", "上限", "下限", "閾値", "しきい値", "基準"),
        "zh": ("限值", "上限", "下限", "阈值", "极限", "标准"),
        "es": ("límite", "límites", "umbral", "máximo", "mínimo"), "de": ("grenze", "grenzwert", "schwelle", "maximum", "minimum"),
        "fr": ("limite", "limites", "seuil", "maximum", "minimum"), "pt": ("limite", "limites", "máximo", "mínimo"),
        "it": ("limite", "limiti", "soglia", "massimo", "minimo"), "ru": ("предел", "лимит", "порог", "максимум", "минимум"),
        "vi": ("giới hạn", "ngưỡng", "tối đa", "tối thiểu"), "id": ("batas", "ambang", "maksimum", "minimum"),
    },
    "exceeded": {
        "en": ("exceeded", "exceeds", "over limit", "above limit", "out of range", "violated"),
        "ko": ("초과", "넘었", "넘음"), "ja": ("超過",), "zh": ("超限", "超标", "超出"),
        "es": ("excedido", "superado"), "de": ("überschritten",), "fr": ("dépassé", "dépassement"),
        "pt": ("excedido", "ultrapassado"), "it": ("superato",), "ru": ("превышен", "превышение"),
        "vi": ("vượt ngưỡng", "vượt giới hạn"), "id": ("terlampaui", "melebihi batas"),
    },
    "running": {
        "en": ("running", "operating", "online", "normal", "working", "up"),
        "ko": ("가동", "작동", "운전", "정상", "돌아가"), "ja": ("稼働", "運転", "正常"), "zh": ("运行", "正常", "运转"),
        "es": ("funcionando", "operando", "normal", "en marcha"), "de": ("läuft", "laufend", "betrieb", "normal"),
        "fr": ("marche", "fonctionne", "normal"), "pt": ("funcionando", "operando", "normal"),
        "it": ("funzione", "funzionando", "normale"), "ru": ("работает", "норма"), "vi": ("hoạt động", "bình thường"),
        "id": ("berjalan", "beroperasi", "normal"),
    },
    "stopped": {
        "en": ("stopped", "down", "offline", "idle", "tripped", "halted", "off"),
        "ko": ("정지", "멈춤", "멈췄", "중지", "꺼져"), "ja": ("停止",), "zh": ("停止", "停机"),
        "es": ("detenido", "detenida", "parado", "parada", "apagado", "apagada"), "de": ("gestoppt", "angehalten", "aus"),
        "fr": ("arrêté", "arrêtée", "éteint"), "pt": ("parado", "desligado"), "it": ("fermo", "spento"),
        "ru": ("остановлен", "стоит"), "vi": ("dừng", "ngừng"), "id": ("berhenti", "mati"),
    },
    "warning": {
        "en": ("warning", "fault", "faulty", "alarm", "error", "critical"),
        "ko": ("경고", "고장", "오류"), "ja": ("警告", "故障", "異常"), "zh": ("警告", "故障", "异常"),
        "es": ("advertencia", "falla", "avería"), "de": ("warnung", "störung", "fehler"),
        "fr": ("avertissement", "panne", "défaut"), "pt": ("alerta", "falha", "avaria"),
        "it": ("avviso", "guasto", "errore"), "ru": ("предупреждение", "неисправность", "авария"),
        "vi": ("cảnh báo", "lỗi"), "id": ("peringatan", "rusak", "gangguan"),
    },
    "active": {
        "en": ("active", "open", "ongoing", "unresolved"),
        "ko": ("활성", "진행 중", "미해결", "열려"), "ja": ("有効", "未解決", "発生中"), "zh": ("活动", "未解决", "激活"),
        "es": ("activo", "activa", "abierto"), "de": ("aktiv", "offen"), "fr": ("actif", "active", "ouvert"),
        "pt": ("ativo", "ativa", "aberto"), "it": ("attivo", "attiva", "aperto"), "ru": ("активен", "активна", "открыт"),
        "vi": ("đang hoạt động", "chưa xử lý"), "id": ("aktif", "terbuka"),
    },
    "closed": {
        "en": ("closed", "resolved", "cleared", "inactive", "done", "completed"),
        "ko": ("해제", "해결", "종료", "완료"), "ja": ("解除", "解決", "完了"), "zh": ("解除", "已解决", "关闭", "完成"),
        "es": ("cerrado", "resuelto"), "de": ("geschlossen", "behoben", "erledigt"), "fr": ("fermé", "résolu"),
        "pt": ("fechado", "resolvido"), "it": ("chiuso", "risolto"), "ru": ("закрыт", "решён"),
        "vi": ("đã đóng", "đã xử lý"), "id": ("ditutup", "selesai"),
    },
    "overdue": {
        "en": ("overdue", "late", "past due", "expired"),
        "ko": ("지났", "지난", "밀린", "연체", "경과"), "ja": ("期限切れ", "遅れ"), "zh": ("逾期", "过期", "超期"),
        "es": ("vencido", "atrasado"), "de": ("überfällig", "verspätet"), "fr": ("en retard", "échu"),
        "pt": ("atrasado", "vencido"), "it": ("scaduto", "in ritardo"), "ru": ("просрочен", "просрочено"),
        "vi": ("quá hạn",), "id": ("terlambat", "jatuh tempo"),
    },
    "presence": {
        "en": ("any", "anything", "there"), "ko": ("있어", "있나", "있니", "있습니까", "있을까"), "ja": ("ある", "あります", "いる"),
        "zh": ("有没有", "有"), "es": ("hay", "algún", "alguna", "algunos"), "de": ("gibt", "irgendwelche"),
        "fr": ("y a-t-il", "des"), "pt": ("há", "algum", "alguma"), "it": ("ci sono", "c'è", "qualche"),
        "ru": ("есть", "какие-нибудь"), "vi": ("có", "nào"), "id": ("ada",),
    },
    "none": {
        "en": ("none", "no", "empty", "nothing", "0"), "ko": ("없음", "없습니다", "없다", "0"), "ja": ("なし", "ありません", "0"),
        "zh": ("无", "没有", "0"), "es": ("ninguno", "ninguna", "no", "0"), "de": ("keine", "kein", "0"),
        "fr": ("aucun", "aucune", "0"), "pt": ("nenhum", "nenhuma", "0"), "it": ("nessuno", "nessuna", "0"),
        "ru": ("нет", "0"), "vi": ("không có", "0"), "id": ("tidak ada", "0"),
    },
}
"""Words that decide a yes/no question without a model
(:func:`reactgraph.answer.verdicts.decided_verdict`), per meaning and language: ``above`` /
``below`` the comparison a question asks ("hotter than", "넘었어"), ``limit`` the words that
name a limit in a tool's line ("limit 75.0°C", "limits: vibration 0.5 mm/s"), ``exceeded`` a
line's word that a limit is passed, the *state* meanings (``running``, ``stopped``,
``warning``, ``active``, ``closed``, ``overdue``: a question's word and a line's value of the
same meaning agree, of another state meaning disagree, in whatever languages each is written),
``presence`` the words of a question asking whether there is something, ``none`` a value
that says there is nothing. Words of Latin and Cyrillic languages match whole words; Korean,
Japanese and Chinese ones wherever they are written."""

STATE_FAMILIES: tuple[tuple[str, ...], ...] = (("running", "stopped", "warning"), ("active", "closed"), ("overdue",))
"""The meanings of :data:`VERDICT_WORDS` that name a state, in families: a thing is in one
state of a family at a time (a running machine is not stopped), but states of two families
go together (a running machine may be overdue), so only a state of the asked one's family
says no."""

STATE_MEANINGS: tuple[str, ...] = tuple(meaning for family in STATE_FAMILIES for meaning in family)
"""Every state meaning of :data:`STATE_FAMILIES`."""

PART_JOINERS: tuple[str, ...] = (
    "and also", "and", "also", "as well as", "plus", "y", "además", "e", "também", "anche", "et", "aussi",
    "und", "auch", "sowie", "и", "а также", "và", "dan",
    "그리고", "또한", "및", "そして", "また", "それと", "和", "并且", "还有", "以及", "另外",
)
"""Words that join two requests in one question, in the table's languages
(:func:`reactgraph.policy.parts.clauses`): Latin and Cyrillic ones count only as whole words; the
Korean, Japanese and Chinese ones wherever they are written (those scripts join words
without spaces). A joining word only proposes a cut (:mod:`reactgraph.policy.parts`)."""


NOT_FOUND_WORDS: Mapping[str, tuple[str, ...]] = {
    "ko": ("찾을 수 없", "찾지 못", "존재하지 않", "없는 번호", "결과 없음", "결과가 없", "알 수 없는", "등록되지 않은"),
    "ja": ("見つかりません", "見つからない", "存在しません", "存在しない", "該当なし", "不明な", "登録されていない"),
    "zh": ("未找到", "找不到", "没有找到", "不存在", "无结果", "没有结果", "未知的", "查无"),
    "es": ("no encontrado", "no encontrada", "no se encontró", "no se encontraron", "no existe", "sin resultados",
           "ningún resultado", "desconocido", "desconocida"),
    "de": ("nicht gefunden", "nicht vorhanden", "existiert nicht", "keine treffer", "kein treffer", "keine ergebnisse",
           "unbekannt", "unbekannter", "unbekannte", "unbekanntes"),
    "fr": ("introuvable", "non trouvé", "non trouvée", "pas trouvé", "aucun résultat", "n'existe pas", "inconnu",
           "inconnue"),
    "pt": ("não encontrado", "não encontrada", "não foi encontrado", "não existe", "nenhum resultado", "desconhecido",
           "desconhecida"),
    "it": ("non trovato", "non trovata", "non esiste", "nessun risultato", "sconosciuto", "sconosciuta"),
    "ru": ("не найден", "не найдена", "не найдено", "не найдены", "не существует", "нет результатов", "неизвестный",
           "неизвестная", "неизвестное", "неизвестен"),
    "vi": ("không tìm thấy", "không tồn tại", "không có kết quả", "không xác định"),
    "id": ("tidak ditemukan", "tidak ada hasil", "tidak dikenal", "tidak diketahui"),
}
"""What a tool writes when the value it was given matches nothing ("not found", "does not
exist", "unknown", "no results"), in the table's languages other than English (English replies
are read by a finer rule, :func:`reactgraph.tools.runner.holds_no_data`). Latin and Cyrillic
phrases match whole words, accents folded; Korean, Japanese and Chinese ones wherever they are
written. Words that only say there is none ("keine Alarme", "재고 없음") are not here: an
absence is often the finding itself."""


PART_SUFFIXES: tuple[str, ...] = ("이랑", "랑", "하고", "고", "과", "와")
"""Endings that join two requests at the end of a word (Korean: "X이랑 Y", "X과 Y",
"알려주고, …"), in the table's languages: a word ending in one, then a space (or a comma),
proposes a cut after it (:func:`reactgraph.policy.parts.clauses`); the clause after it
stands as a part only when it asks about something."""


LIST_JOINERS: tuple[str, ...] = (
    "and", "as well as", "plus", "y", "e", "et", "und", "sowie", "и", "và", "dan",
    "및", "と", "および", "及び", "和", "及", "以及",
)
"""Words that join the last item of a list of values ("10, 20 and 30", "Madrid y Lima",
"東京と大阪", "北京和上海"), in the table's languages
(:mod:`reactgraph.policy.value_sets`): Latin and Cyrillic ones count only as whole words
between spaces; the Korean, Japanese and Chinese ones wherever they are written. Korean joins
list items by a word ending (:data:`LIST_SUFFIXES`)."""

LIST_SUFFIXES: tuple[str, ...] = ("이랑", "랑", "하고", "과", "와")
"""Endings by which a Korean word joins the next item of a list ("서울과 부산", "A랑 B")
(:mod:`reactgraph.policy.value_sets`)."""


BACK_REFERENCES: Mapping[str, tuple[str, ...]] = {
    "en": ("it", "its", "it's", "itself", "they", "them", "their", "that one", "the same one"),
    "es": ("su", "sus", "él", "ella", "ello", "la misma", "el mismo"),
    "de": ("sein", "seine", "seinen", "seinem", "seiner", "ihre", "ihren", "ihrem", "ihrer", "dessen", "deren"),
    "fr": ("il", "elle", "son", "sa", "ses", "leur", "leurs", "celui-ci", "celle-ci"),
    "pt": ("ele", "ela", "seu", "sua", "seus", "suas", "dele", "dela"),
    "it": ("esso", "essa", "suo", "sua", "suoi", "sue", "lui"),
    "ru": ("он", "она", "оно", "его", "её", "ее", "их", "него", "неё", "нее"),
    "vi": ("nó", "của nó"),
    "id": ("itu", "tersebut"),
    "ko": ("그", "그것", "그거", "이것", "해당", "거기"),
    "ja": ("その", "それ", "これ", "この"),
    "zh": ("它", "这台", "那台", "这个", "那个"),
}
"""Words by which a request refers back to what an earlier request of the same question
named ("… CMP-002, and do we have spare parts for *it*?", "그 부품", "その部品", "它的"), by
language (:func:`reactgraph.policy.parts.part_values`; a question whose language cannot be told
reads every language's): Latin and Cyrillic ones count
only as whole words, the Korean ones as whole words or, of two letters or more, at the start of
one (a particle may follow: "그것의"); the Japanese and Chinese ones wherever they are written
(those scripts join words without spaces)."""

UNSAID_REFERENCE_LANGUAGES: frozenset[str] = frozenset({"ko", "ja", "zh"})
"""Languages in which a request leaves unsaid what it is about when it is what the sentence
was already about ("ORD-7 상태 알려주고, 배송 이력도 보여줘": the delivery history of ORD-7):
there a part of a question that names no value of its own takes the previous part's values
without a word that refers back (:func:`reactgraph.policy.parts.part_values`)."""
