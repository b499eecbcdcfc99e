"""How well and how cheaply ``reactgraph.core.language.detect_language`` tells the language of
short questions: five in each language of the table (a greeting, a request, a yes/no
question, a question naming a value, a question about a period), none of them from the demo.

Prints, per language, the questions told right, told wrong and untold (``None``: the neutral
form), then the first call's cost (the classifier loads), the mean cost of a question after
it, and the process's peak memory before the classifier loads (reactgraph imported) and after.

Run: ``.venv/bin/python bench/language_detection.py``
"""

from __future__ import annotations

import resource
import time

QUESTIONS = {
    "en": ["What is the status of order 4411?", "Show me the open tickets", "hello", "Is the server down?",
           "Which invoices are overdue this week?"],
    "ko": ["주문 4411 상태 알려줘", "열린 티켓 보여줘", "안녕하세요", "서버가 다운됐어?", "이번 주 연체된 송장은?"],
    "ja": ["注文4411の状況は？", "未解決のチケットを見せて", "こんにちは", "サーバーは落ちていますか", "東京駅の在庫は？"],
    "zh": ["订单4411的状态是什么？", "显示未关闭的工单", "你好", "服务器宕机了吗？", "本周哪些发票逾期？"],
    "es": ["¿Cuál es el estado del pedido 4411?", "Muéstrame los tickets abiertos", "hola", "¿Está caído el servidor?",
           "¿Qué facturas vencen esta semana?"],
    "de": ["Wie ist der Status der Bestellung 4411?", "Zeig mir die offenen Tickets", "Hallo zusammen",
           "Ist der Server ausgefallen?", "Welche Rechnungen sind diese Woche überfällig?"],
    "fr": ["Quel est le statut de la commande 4411 ?", "Montre-moi les tickets ouverts", "Bonjour",
           "Le serveur est-il en panne ?", "Quelles factures sont en retard cette semaine ?"],
    "pt": ["Qual é o status do pedido 4411?", "Mostre os chamados abertos", "Olá, tudo bem?", "O servidor caiu?",
           "Quais faturas vencem esta semana?"],
    "it": ["Qual è lo stato dell'ordine 4411?", "Mostrami i ticket aperti", "Ciao", "Il server è giù?",
           "Quali fatture scadono questa settimana?"],
    "ru": ["Какой статус заказа 4411?", "Покажи открытые заявки", "Привет", "Сервер упал?",
           "Какие счета просрочены на этой неделе?"],
    "vi": ["Trạng thái của đơn hàng 4411 là gì?", "Cho tôi xem các phiếu đang mở", "Xin chào",
           "Máy chủ có bị sập không?", "Hóa đơn nào quá hạn tuần này?"],
    "id": ["Apa status pesanan 4411?", "Tampilkan tiket yang masih terbuka", "Selamat pagi", "Apakah servernya mati?",
           "Faktur mana yang jatuh tempo minggu ini?"],
}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    import sys

    import reactgraph  # noqa: F401  (its import cost is import_time.py's)
    from reactgraph.core.language import detect_language

    lazy = "py3langid" not in sys.modules and "numpy" not in sys.modules
    before = peak_mb()
    started = time.perf_counter()
    detect_language("Which invoices are open?")  # the first Latin-script question loads the classifier
    first = time.perf_counter() - started
    detect_language.cache_clear()
    right = wrong = untold = 0
    misses: list[str] = []
    started = time.perf_counter()
    for language, questions in QUESTIONS.items():
        told = [detect_language(question) for question in questions]
        r = sum(code == language for code in told)
        u = sum(code is None for code in told)
        right, wrong, untold = right + r, wrong + len(told) - r - u, untold + u
        misses += [f"{language}: {q!r} -> {c}" for q, c in zip(questions, told, strict=True) if c != language]
        print(f"{language}  right {r}/{len(told)}  wrong {len(told) - r - u}  untold {u}")
    count = sum(len(questions) for questions in QUESTIONS.values())
    each = (time.perf_counter() - started) / count
    print(f"all: right {right}/{count}, wrong {wrong}, untold {untold}")
    print("\n".join(misses))
    print(f"py3langid and numpy left unloaded by importing reactgraph: {lazy}")
    print(f"first question {first * 1000:.0f} ms (classifier load); "
          f"then {each * 1000:.3f} ms a question; peak memory {before:.0f} -> {peak_mb():.0f} MB")


if __name__ == "__main__":
    main()
