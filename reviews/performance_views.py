"""The performance page: every account's figures, live and replay books side by side, and one
account's equity against the Nifty 50. The figures come from ``reviews.performance`` (and through it
the pure ``reviews.domain.performance``); nothing is computed here."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from reviews.performance import BENCHMARK_NAME, AccountPerformance, account_performances
from trading import edge

TEMPLATE = "reviews/performance.html"


def performance(request: HttpRequest) -> HttpResponse:
    """Any desk user may read it (the login itself is the desk's middleware). ``?account=<id>``
    picks the account whose chart is drawn; an unknown one is answered 400 with the reason, over
    the first account's chart, never silently another book."""
    rows = account_performances()
    wanted = request.GET.get("account", "").strip()
    chosen = _chosen(rows, wanted)
    status = 200
    if wanted and chosen is None:
        messages.error(request, f"There is no such account: {edge.short(wanted)!r}; showing the first one.")
        status = 400
    if chosen is None and rows:
        chosen = rows[0]
    return render(
        request,
        TEMPLATE,
        {"rows": rows, "chosen": chosen, "chart": chosen.chart if chosen else None, "benchmark_name": BENCHMARK_NAME},
        status=status,
    )


def _chosen(rows: list[AccountPerformance], wanted: str) -> AccountPerformance | None:
    if not wanted:
        return None
    return next((row for row in rows if str(row.account.pk) == wanted), None)
