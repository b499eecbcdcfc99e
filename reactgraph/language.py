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
