"""The question's language, and every sentence the engine writes itself, in that language.

The engine writes a few sentences of its own into answers and notes: the lead of an answer
made of the observations, "no tool returned data", what the agent can look up, the note
under an answer naming values no tool returned, the step summary of a run that stopped.
They all live in one table, :data:`PHRASES` (key → language code → template), and are
written with :func:`phrase`. The table covers :data:`LANGUAGES`; a language it lacks, or a
question whose language cannot be told (a bare id, one word), gets :data:`NEUTRAL`, a form
of symbols and the values themselves — never English by default.

:func:`detect_language` tells the language of a question once (cached by its text; the
``start_turn`` node stores it in the state as ``language`` for every node of the turn):

* a script that names its language decides alone (Hangul → ``ko``; kana → ``ja``; Han
  without kana → ``zh``; Cyrillic → ``ru``; Thai, Greek, Arabic, Hebrew, Devanagari);
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

LANGUAGES: tuple[str, ...] = ("en", "ko", "ja", "zh", "es", "de", "fr", "pt", "it", "ru", "vi", "id")
"""The languages :data:`PHRASES` covers (ISO 639-1)."""

NEUTRAL = "*"
"""The key of the language-free form of each phrase in :data:`PHRASES`."""

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
    if counts[best] * 2 > letters:
        return best
    ranking = _latin_identifier().rank(words)
    code, probability = ranking[0]
    if code not in LANGUAGES and probability < OUTSIDE_TABLE_MIN_PROBABILITY:
        in_table = next((candidate for candidate in ranking if candidate[0] in LANGUAGES), None)
        if in_table is not None and in_table[1] >= DETECTION_MIN_PROBABILITY * probability:
            code, probability = in_table[0], max(in_table[1], DETECTION_MIN_PROBABILITY)
    return code if probability >= DETECTION_MIN_PROBABILITY else None


def turn_language(state: Mapping[str, Any]) -> str | None:
    """The language of a turn: the ``language`` its state holds (``start_turn`` detects it
    once), else :func:`detect_language` of its ``query`` (a state from before the field)."""
    return state["language"] if "language" in state else detect_language(state.get("query") or "")


def language_name(code: str | None) -> str | None:
    """The English name of a language code (``"ja"`` → ``"Japanese"``); ``None`` for none."""
    return LANGUAGE_NAMES.get(code, code) if code else None


PHRASES: Mapping[str, Mapping[str, str]] = {
    "report_lead": {
        "en": "Here is what the tools report about {subject}.",
        "ko": "{subject}에 대해 도구가 조회한 결과입니다.",
        "ja": "{subject}について、ツールの結果は次のとおりです。",
        "zh": "以下是工具关于{subject}的结果。",
        "es": "Esto es lo que indican las herramientas sobre {subject}.",
        "de": "Das melden die Werkzeuge zu {subject}.",
        "fr": "Voici ce que les outils indiquent sur {subject}.",
        "pt": "Isto é o que as ferramentas informam sobre {subject}.",
        "it": "Ecco cosa riportano gli strumenti su {subject}.",
        "ru": "Вот что сообщают инструменты по запросу «{subject}».",
        "vi": "Đây là kết quả từ các công cụ về {subject}.",
        "id": "Berikut hasil dari alat tentang {subject}.",
        NEUTRAL: "→ {subject}",
    },
    "report_lead_plain": {
        "en": "Here is what the tools report.",
        "ko": "도구가 조회한 결과입니다.",
        "ja": "ツールの結果は次のとおりです。",
        "zh": "以下是工具返回的结果。",
        "es": "Esto es lo que indican las herramientas.",
        "de": "Das melden die Werkzeuge.",
        "fr": "Voici ce que les outils indiquent.",
        "pt": "Isto é o que as ferramentas informam.",
        "it": "Ecco cosa riportano gli strumenti.",
        "ru": "Вот что сообщают инструменты.",
        "vi": "Đây là kết quả từ các công cụ.",
        "id": "Berikut hasil dari alat.",
        NEUTRAL: "→",
    },
    "no_data_about": {
        "en": "No tool returned data about {subject}.",
        "ko": "{subject}에 대해 도구가 데이터를 반환하지 않았습니다.",
        "ja": "{subject}について、ツールはデータを返しませんでした。",
        "zh": "没有工具返回关于{subject}的数据。",
        "es": "Ninguna herramienta devolvió datos sobre {subject}.",
        "de": "Kein Werkzeug hat Daten zu {subject} geliefert.",
        "fr": "Aucun outil n'a renvoyé de données sur {subject}.",
        "pt": "Nenhuma ferramenta retornou dados sobre {subject}.",
        "it": "Nessuno strumento ha restituito dati su {subject}.",
        "ru": "Ни один инструмент не вернул данных по запросу «{subject}».",
        "vi": "Không có công cụ nào trả về dữ liệu về {subject}.",
        "id": "Tidak ada alat yang mengembalikan data tentang {subject}.",
        NEUTRAL: "∅ {subject}",
    },
    "no_data": {
        "en": "No tool returned data that answers this question.",
        "ko": "도구에서 이 질문에 답할 데이터를 얻지 못했습니다.",
        "ja": "この質問に答えるデータをツールから得られませんでした。",
        "zh": "没有工具返回能回答这个问题的数据。",
        "es": "Ninguna herramienta devolvió datos que respondan a esta pregunta.",
        "de": "Kein Werkzeug hat Daten geliefert, die diese Frage beantworten.",
        "fr": "Aucun outil n'a renvoyé de données qui répondent à cette question.",
        "pt": "Nenhuma ferramenta retornou dados que respondam a esta pergunta.",
        "it": "Nessuno strumento ha restituito dati che rispondano a questa domanda.",
        "ru": "Ни один инструмент не вернул данных, отвечающих на этот вопрос.",
        "vi": "Không có công cụ nào trả về dữ liệu trả lời câu hỏi này.",
        "id": "Tidak ada alat yang mengembalikan data untuk menjawab pertanyaan ini.",
        NEUTRAL: "∅",
    },
    "tools_said": {
        "en": "What the tools said:",
        "ko": "도구의 응답:",
        "ja": "ツールの応答：",
        "zh": "工具的回复：",
        "es": "Lo que respondieron las herramientas:",
        "de": "Antworten der Werkzeuge:",
        "fr": "Réponses des outils :",
        "pt": "O que as ferramentas responderam:",
        "it": "Risposte degli strumenti:",
        "ru": "Ответы инструментов:",
        "vi": "Phản hồi của các công cụ:",
        "id": "Jawaban dari alat:",
        NEUTRAL: "⚠",
    },
    "no_data_no_tools": {
        "en": "I have no data to answer that.",
        "ko": "이 질문에 답할 데이터가 없습니다.",
        "ja": "その質問に答えるデータがありません。",
        "zh": "我没有可以回答这个问题的数据。",
        "es": "No tengo datos para responder a eso.",
        "de": "Dazu habe ich keine Daten.",
        "fr": "Je n'ai pas de données pour répondre à cela.",
        "pt": "Não tenho dados para responder a isso.",
        "it": "Non ho dati per rispondere a questo.",
        "ru": "У меня нет данных, чтобы ответить на это.",
        "vi": "Tôi không có dữ liệu để trả lời câu hỏi đó.",
        "id": "Saya tidak punya data untuk menjawab itu.",
        NEUTRAL: "∅",
    },
    "can_look_up": {
        "en": "I have no data on that, but these are things I can look up for you:",
        "ko": "이 질문에 답할 데이터는 없지만, 다음 내용은 도구로 조회해 드릴 수 있습니다:",
        "ja": "その質問に答えるデータはありませんが、次のことは調べられます：",
        "zh": "我没有这方面的数据，但可以为您查询以下内容：",
        "es": "No tengo datos sobre eso, pero puedo consultar esto por usted:",
        "de": "Dazu habe ich keine Daten, aber das kann ich für Sie nachschlagen:",
        "fr": "Je n'ai pas de données à ce sujet, mais voici ce que je peux consulter pour vous :",
        "pt": "Não tenho dados sobre isso, mas posso consultar isto para você:",
        "it": "Non ho dati su questo, ma posso cercare queste informazioni per te:",
        "ru": "У меня нет данных об этом, но вот что я могу для вас узнать:",
        "vi": "Tôi không có dữ liệu về điều đó, nhưng tôi có thể tra cứu những nội dung sau:",
        "id": "Saya tidak punya data tentang itu, tetapi saya bisa mencarikan hal-hal berikut:",
        NEUTRAL: "?",
    },
    "and_more": {
        "en": "… and more.",
        "ko": "그 밖의 조회도 할 수 있습니다.",
        "ja": "…ほかにも調べられます。",
        "zh": "……以及更多。",
        "es": "… y más.",
        "de": "… und mehr.",
        "fr": "… et plus encore.",
        "pt": "… e mais.",
        "it": "… e altro ancora.",
        "ru": "… и другое.",
        "vi": "… và nhiều nội dung khác.",
        "id": "… dan lainnya.",
        NEUTRAL: "…",
    },
    "flag_note": {
        "en": "Not found in any tool result: {values}.",
        "ko": "도구 결과에 없는 값: {values}.",
        "ja": "ツールの結果にない値：{values}。",
        "zh": "工具结果中没有的值：{values}。",
        "es": "No aparece en ningún resultado de las herramientas: {values}.",
        "de": "In keinem Werkzeugergebnis gefunden: {values}.",
        "fr": "Absent de tous les résultats des outils : {values}.",
        "pt": "Não encontrado em nenhum resultado das ferramentas: {values}.",
        "it": "Non trovato in alcun risultato degli strumenti: {values}.",
        "ru": "Нет ни в одном результате инструментов: {values}.",
        "vi": "Không có trong kết quả nào của công cụ: {values}.",
        "id": "Tidak ditemukan di hasil alat mana pun: {values}.",
        NEUTRAL: "? {values}",
    },
    "writing_answer": {
        "en": "… writing the answer",
        "ko": "… 답변을 작성하는 중",
        "ja": "… 回答を作成中",
        "zh": "… 正在撰写回答",
        "es": "… redactando la respuesta",
        "de": "… die Antwort wird geschrieben",
        "fr": "… rédaction de la réponse",
        "pt": "… escrevendo a resposta",
        "it": "… sto scrivendo la risposta",
        "ru": "… пишу ответ",
        "vi": "… đang viết câu trả lời",
        "id": "… sedang menulis jawaban",
        NEUTRAL: "…",
    },
    "stopped": {
        "en": "I stopped after {iterations} iterations without reaching a final answer.",
        "ko": "{iterations}번 반복한 뒤 최종 답변에 이르지 못하고 멈췄습니다.",
        "ja": "{iterations}回の反復の後、最終的な回答に至らずに停止しました。",
        "zh": "经过{iterations}次迭代后仍未得出最终答案，已停止。",
        "es": "Me detuve tras {iterations} iteraciones sin llegar a una respuesta final.",
        "de": "Nach {iterations} Durchläufen habe ich ohne endgültige Antwort aufgehört.",
        "fr": "Je me suis arrêté après {iterations} itérations sans réponse finale.",
        "pt": "Parei após {iterations} iterações sem chegar a uma resposta final.",
        "it": "Mi sono fermato dopo {iterations} iterazioni senza una risposta finale.",
        "ru": "Я остановился после {iterations} итераций, так и не получив окончательного ответа.",
        "vi": "Tôi đã dừng sau {iterations} lần lặp mà chưa có câu trả lời cuối cùng.",
        "id": "Saya berhenti setelah {iterations} iterasi tanpa mencapai jawaban akhir.",
        NEUTRAL: "■ {iterations} ↻",
    },
    "empty_answer": {
        "en": "The model gave an empty answer.",
        "ko": "모델이 빈 답변을 냈습니다.",
        "ja": "モデルの回答が空でした。",
        "zh": "模型给出了空回答。",
        "es": "El modelo dio una respuesta vacía.",
        "de": "Das Modell hat eine leere Antwort gegeben.",
        "fr": "Le modèle a donné une réponse vide.",
        "pt": "O modelo deu uma resposta vazia.",
        "it": "Il modello ha dato una risposta vuota.",
        "ru": "Модель дала пустой ответ.",
        "vi": "Mô hình đã trả về một câu trả lời trống.",
        "id": "Model memberikan jawaban kosong.",
        NEUTRAL: "∅",
    },
    "steps_taken": {
        "en": "Steps taken:",
        "ko": "수행한 단계:",
        "ja": "実行した手順：",
        "zh": "已执行的步骤：",
        "es": "Pasos realizados:",
        "de": "Ausgeführte Schritte:",
        "fr": "Étapes effectuées :",
        "pt": "Passos executados:",
        "it": "Passi eseguiti:",
        "ru": "Выполненные шаги:",
        "vi": "Các bước đã thực hiện:",
        "id": "Langkah yang dijalankan:",
        NEUTRAL: "↻",
    },
    "no_tools_called": {
        "en": "No tools were called.",
        "ko": "호출한 도구가 없습니다.",
        "ja": "ツールは呼び出されませんでした。",
        "zh": "没有调用任何工具。",
        "es": "No se llamó a ninguna herramienta.",
        "de": "Es wurde kein Werkzeug aufgerufen.",
        "fr": "Aucun outil n'a été appelé.",
        "pt": "Nenhuma ferramenta foi chamada.",
        "it": "Non è stato chiamato alcuno strumento.",
        "ru": "Ни один инструмент не вызывался.",
        "vi": "Không có công cụ nào được gọi.",
        "id": "Tidak ada alat yang dipanggil.",
        NEUTRAL: "∅",
    },
    "step_succeeded": {
        "en": "succeeded",
        "ko": "성공",
        "ja": "成功",
        "zh": "成功",
        "es": "correcto",
        "de": "erfolgreich",
        "fr": "réussi",
        "pt": "concluído",
        "it": "riuscito",
        "ru": "успешно",
        "vi": "thành công",
        "id": "berhasil",
        NEUTRAL: "✓",
    },
    "step_failed": {
        "en": "failed: {error}",
        "ko": "실패: {error}",
        "ja": "失敗：{error}",
        "zh": "失败：{error}",
        "es": "falló: {error}",
        "de": "fehlgeschlagen: {error}",
        "fr": "échec : {error}",
        "pt": "falhou: {error}",
        "it": "non riuscito: {error}",
        "ru": "ошибка: {error}",
        "vi": "thất bại: {error}",
        "id": "gagal: {error}",
        NEUTRAL: "✗ {error}",
    },
    "limit_reached": {
        "en": "I stopped because the run reached its limit of {max} {what} (used {used}).",
        "ko": "실행 한도에 도달해 멈췄습니다 ({what}: {used}/{max}).",
        "ja": "実行の上限に達したため停止しました（{what}: {used}/{max}）。",
        "zh": "运行已达到上限，已停止（{what}：{used}/{max}）。",
        "es": "Me detuve porque la ejecución alcanzó su límite ({what}: {used}/{max}).",
        "de": "Ich habe angehalten, weil der Lauf sein Limit erreicht hat ({what}: {used}/{max}).",
        "fr": "Je me suis arrêté car l'exécution a atteint sa limite ({what} : {used}/{max}).",
        "pt": "Parei porque a execução atingiu o seu limite ({what}: {used}/{max}).",
        "it": "Mi sono fermato perché l'esecuzione ha raggiunto il limite ({what}: {used}/{max}).",
        "ru": "Я остановился: достигнут лимит запуска ({what}: {used}/{max}).",
        "vi": "Tôi đã dừng vì lượt chạy đạt giới hạn ({what}: {used}/{max}).",
        "id": "Saya berhenti karena proses mencapai batasnya ({what}: {used}/{max}).",
        NEUTRAL: "■ {what}: {used}/{max}",
    },
    "storage_failed": {
        "en": "The run's state could not be stored, so the run stopped early ({error}).",
        "ko": "실행 상태를 저장할 수 없어 일찍 멈췄습니다 ({error}).",
        "ja": "実行の状態を保存できなかったため、早めに停止しました（{error}）。",
        "zh": "无法保存运行状态，运行已提前停止（{error}）。",
        "es": "No se pudo guardar el estado de la ejecución, así que se detuvo antes de tiempo ({error}).",
        "de": "Der Zustand des Laufs konnte nicht gespeichert werden, daher wurde er vorzeitig beendet ({error}).",
        "fr": "L'état de l'exécution n'a pas pu être enregistré, elle s'est donc arrêtée plus tôt ({error}).",
        "pt": "Não foi possível guardar o estado da execução, por isso ela parou antes ({error}).",
        "it": "Non è stato possibile salvare lo stato dell'esecuzione, che si è quindi fermata prima ({error}).",
        "ru": "Не удалось сохранить состояние запуска, поэтому он остановлен досрочно ({error}).",
        "vi": "Không thể lưu trạng thái của lượt chạy nên lượt chạy đã dừng sớm ({error}).",
        "id": "Status proses tidak dapat disimpan, jadi proses berhenti lebih awal ({error}).",
        NEUTRAL: "✗ {error}",
    },
    "model_failed": {
        "en": "The model call failed, so the run stopped early ({error}).",
        "ko": "모델 호출이 실패해 일찍 멈췄습니다 ({error}).",
        "ja": "モデルの呼び出しに失敗したため、早めに停止しました（{error}）。",
        "zh": "模型调用失败，运行已提前停止（{error}）。",
        "es": "La llamada al modelo falló, así que la ejecución se detuvo antes de tiempo ({error}).",
        "de": "Der Modellaufruf ist fehlgeschlagen, daher wurde der Lauf vorzeitig beendet ({error}).",
        "fr": "L'appel au modèle a échoué, l'exécution s'est donc arrêtée plus tôt ({error}).",
        "pt": "A chamada ao modelo falhou, por isso a execução parou antes ({error}).",
        "it": "La chiamata al modello non è riuscita, quindi l'esecuzione si è fermata prima ({error}).",
        "ru": "Вызов модели не удался, поэтому запуск остановлен досрочно ({error}).",
        "vi": "Lệnh gọi mô hình thất bại nên lượt chạy đã dừng sớm ({error}).",
        "id": "Panggilan model gagal, jadi proses berhenti lebih awal ({error}).",
        NEUTRAL: "✗ {error}",
    },
    "no_step_result": {
        "en": "No step of the plan produced a result.",
        "ko": "계획의 어떤 단계도 결과를 내지 못했습니다.",
        "ja": "計画のどの手順も結果を出しませんでした。",
        "zh": "计划中没有任何步骤产生结果。",
        "es": "Ningún paso del plan produjo un resultado.",
        "de": "Kein Schritt des Plans hat ein Ergebnis geliefert.",
        "fr": "Aucune étape du plan n'a produit de résultat.",
        "pt": "Nenhum passo do plano produziu um resultado.",
        "it": "Nessun passo del piano ha prodotto un risultato.",
        "ru": "Ни один шаг плана не дал результата.",
        "vi": "Không có bước nào của kế hoạch cho ra kết quả.",
        "id": "Tidak ada langkah rencana yang menghasilkan hasil.",
        NEUTRAL: "∅",
    },
    "verdict_yes": {
        "en": "Yes. {facts}", "ko": "네. {facts}", "ja": "はい。{facts}", "zh": "是的。{facts}",
        "es": "Sí. {facts}", "de": "Ja. {facts}", "fr": "Oui. {facts}", "pt": "Sim. {facts}",
        "it": "Sì. {facts}", "ru": "Да. {facts}", "vi": "Có. {facts}", "id": "Ya. {facts}",
        NEUTRAL: "✓ {facts}",
    },
    "verdict_no": {
        "en": "No. {facts}", "ko": "아니요. {facts}", "ja": "いいえ。{facts}", "zh": "不是。{facts}",
        "es": "No. {facts}", "de": "Nein. {facts}", "fr": "Non. {facts}", "pt": "Não. {facts}",
        "it": "No. {facts}", "ru": "Нет. {facts}", "vi": "Không. {facts}", "id": "Tidak. {facts}",
        NEUTRAL: "✗ {facts}",
    },
    "verdict_unknown": {
        "en": "The data does not say.",
        "ko": "데이터로는 알 수 없습니다.",
        "ja": "データからは分かりません。",
        "zh": "数据中没有说明。",
        "es": "Los datos no lo indican.",
        "de": "Die Daten sagen es nicht.",
        "fr": "Les données ne le disent pas.",
        "pt": "Os dados não dizem.",
        "it": "I dati non lo dicono.",
        "ru": "Данные этого не показывают.",
        "vi": "Dữ liệu không cho biết.",
        "id": "Data tidak menyebutkannya.",
        NEUTRAL: "?",
    },
    "not_found": {
        "en": "What could not be found:",
        "ko": "찾지 못한 내용:",
        "ja": "見つからなかったこと：",
        "zh": "未能找到的内容：",
        "es": "Lo que no se pudo encontrar:",
        "de": "Was nicht gefunden werden konnte:",
        "fr": "Ce qui n'a pas pu être trouvé :",
        "pt": "O que não foi possível encontrar:",
        "it": "Ciò che non è stato possibile trovare:",
        "ru": "Что не удалось найти:",
        "vi": "Những gì không tìm được:",
        "id": "Yang tidak dapat ditemukan:",
        NEUTRAL: "∅:",
    },
    "plan_failed": {
        "en": "The plan could not be made; answering step by step instead.",
        "ko": "계획을 세우지 못해 한 단계씩 답합니다.",
        "ja": "計画を立てられなかったため、一歩ずつ回答します。",
        "zh": "无法制定计划，改为逐步回答。",
        "es": "No se pudo hacer el plan; se responde paso a paso.",
        "de": "Der Plan konnte nicht erstellt werden; es wird stattdessen Schritt für Schritt geantwortet.",
        "fr": "Le plan n'a pas pu être établi ; réponse pas à pas à la place.",
        "pt": "Não foi possível fazer o plano; respondendo passo a passo.",
        "it": "Non è stato possibile fare il piano; si risponde passo per passo.",
        "ru": "Не удалось составить план; ответ будет дан по шагам.",
        "vi": "Không lập được kế hoạch; trả lời từng bước thay thế.",
        "id": "Rencana tidak dapat dibuat; menjawab langkah demi langkah.",
        NEUTRAL: "✗ → 1",
    },
    "analysis_failed": {
        "en": "The results could not be checked against the goal; they are shown as the steps returned them.",
        "ko": "결과를 목표와 대조하지 못했습니다. 단계가 반환한 그대로 보여 드립니다.",
        "ja": "結果を目標と照合できませんでした。各ステップが返したとおりに示します。",
        "zh": "无法根据目标核对结果；按各步骤返回的原样显示。",
        "es": "No se pudieron comprobar los resultados frente al objetivo; se muestran tal como los dieron los pasos.",
        "de": "Die Ergebnisse konnten nicht mit dem Ziel abgeglichen werden; sie stehen so da, wie die Schritte sie lieferten.",
        "fr": "Les résultats n'ont pas pu être vérifiés par rapport à l'objectif ; ils sont montrés tels que les étapes les ont rendus.",
        "pt": "Não foi possível verificar os resultados em relação ao objetivo; são mostrados como os passos os devolveram.",
        "it": "Non è stato possibile verificare i risultati rispetto all'obiettivo; sono mostrati come li hanno restituiti i passi.",
        "ru": "Не удалось сверить результаты с целью; они показаны так, как их вернули шаги.",
        "vi": "Không thể đối chiếu kết quả với mục tiêu; kết quả được hiển thị như các bước đã trả về.",
        "id": "Hasil tidak dapat diperiksa terhadap tujuan; ditampilkan seperti yang dikembalikan langkah-langkahnya.",
        NEUTRAL: "?",
    },
    "run_failed": {
        "en": "The run failed: {error}",
        "ko": "실행이 실패했습니다: {error}",
        "ja": "実行に失敗しました：{error}",
        "zh": "运行失败：{error}",
        "es": "La ejecución falló: {error}",
        "de": "Der Lauf ist fehlgeschlagen: {error}",
        "fr": "L'exécution a échoué : {error}",
        "pt": "A execução falhou: {error}",
        "it": "L'esecuzione non è riuscita: {error}",
        "ru": "Запуск не удался: {error}",
        "vi": "Lượt chạy thất bại: {error}",
        "id": "Proses gagal: {error}",
        NEUTRAL: "✗ {error}",
    },
}
"""Every sentence the engine writes itself: key → language code (and :data:`NEUTRAL`) →
a ``str.format`` template. Every key has every language of :data:`LANGUAGES` and the neutral
form (checked by the tests)."""


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
    "zh": {"yes_no": (), "which": ("什么", "哪", "谁", "为什么", "怎么", "多少", "几")},
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
(:func:`reactgraph.answer.lead.decided_verdict`), per meaning and language: ``above`` /
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


PART_SUFFIXES: tuple[str, ...] = ("이랑", "랑", "하고", "고", "과", "와")
"""Endings that join two requests at the end of a word (Korean: "X이랑 Y", "X과 Y",
"알려주고, …"), in the table's languages: a word ending in one, then a space (or a comma),
proposes a cut after it (:func:`reactgraph.policy.parts.clauses`); the clause after it
stands as a part only when it asks about something."""


def phrase(key: str, language: str | None, **values: Any) -> str:
    """The engine's sentence ``key`` in ``language``, filled with ``values``.

    Args:
        key: A key of :data:`PHRASES` (``"report_lead"``, ``"flag_note"``, …).
        language: An ISO 639-1 code (:func:`detect_language`'s); a code the table lacks, or
            ``None``, gives the neutral form.
        **values: The template's fields (``subject``, ``values``, ``iterations``, ``error``).

    Returns:
        The filled sentence.

    Raises:
        KeyError: ``key`` is not in the table, or a field of its template is missing.
    """
    forms = PHRASES[key]
    return forms.get(language or NEUTRAL, forms[NEUTRAL]).format(**values)
