"""The position lifecycle page: one closed position looked back on, its figures from
``reviews.selectors`` (and through it the pure ``reviews.domain.lifecycle``), never recomputed here."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from reviews import selectors
from reviews.domain.lifecycle import Lifecycle
from trading.models import Position
from trading.refusals import refusal_sentence
from vocabulary.money import currency_symbol, format_money
from vocabulary.refusals import Refusal

TEMPLATE = "reviews/position_lifecycle.html"


def position_lifecycle(request: HttpRequest, position_id: int) -> HttpResponse:
    """Any desk user may read it. An open position (or rows that do not add up) is answered 409
    with the reason, on the same page, so the person sees why there is nothing to look back on."""
    position = get_object_or_404(
        Position.objects.select_related("instrument", "account", "thesis__run"), pk=position_id
    )
    try:
        lifecycle = selectors.position_lifecycle_for(position)
    except Refusal as refusal:
        return render(request, TEMPLATE, {"position": position, "refusal": refusal_sentence(refusal)}, status=409)
    currency = position.instrument.currency
    dates = selectors.session_dates_for(position, lifecycle.exit_session)
    return render(
        request,
        TEMPLATE,
        {
            "position": position,
            "currency": currency,
            "lifecycle": lifecycle,
            "optimal": lifecycle.optimal_exit,
            "chart": trajectory_figure(lifecycle, dates, currency),
            "review": selectors.trade_review_for(position),
            "reasoning": selectors.entry_reasoning_for(position),
        },
    )


def trajectory_figure(lifecycle: Lifecycle, dates: list[dt.date], currency: str) -> dict[str, Any]:
    """A Plotly figure of the profit at each session, with the entry, the peak and the exit marked.
    Points that share a session share one annotation, so a one-session life stays readable."""
    sessions = list(range(len(lifecycle.path)))
    labels = [dates[s].isoformat() if s < len(dates) else "" for s in sessions]
    marked: dict[int, list[str]] = {}
    for session, name in ((0, "entry"), (lifecycle.peak_session, "peak"), (lifecycle.exit_session, "exit")):
        marked.setdefault(session, []).append(name)
    annotations = [
        {
            "x": session,
            "y": float(lifecycle.path[session]),
            "text": f"{' · '.join(names)} {format_money(lifecycle.path[session], currency)}",
            "showarrow": True,
            "arrowhead": 2,
            "ax": 0,
            "ay": -30 if "peak" in names else 30,
        }
        for session, names in marked.items()
    ]
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "profit",
                "x": sessions,
                "y": [float(pnl) for pnl in lifecycle.path],
                "text": labels,
                "hovertemplate": "session %{x} (%{text})<br>%{y:,.2f}<extra></extra>",
                "line": {"color": "#1d4ed8"},
                "marker": {"size": 8},
            }
        ],
        "layout": {
            "margin": {"l": 70, "r": 20, "t": 20, "b": 40},
            "height": 320,
            "showlegend": False,
            "annotations": annotations,
            # Whole sessions on the axis; Plotly picks its own spacing once there are many.
            "xaxis": {"title": {"text": "sessions after entry"}, **({"dtick": 1} if len(sessions) <= 15 else {})},
            "yaxis": {"title": {"text": currency_symbol(currency)}, "zeroline": True},
        },
    }
