"""Plain data in, a Plotly figure (as a JSON-ready dict) out. No Django."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from trading.market.domain.indicators import universe_indicators
from vocabulary.money import DEFAULT_CURRENCY, currency_symbol

OVERLAYS = (
    ("sma_20", "SMA 20", "#2563eb", "solid"),
    ("sma_50", "SMA 50", "#d97706", "solid"),
    ("sma_200", "SMA 200", "#7c3aed", "solid"),
    ("bb_upper", "Bollinger upper", "#94a3b8", "dot"),
    ("bb_middle", "Bollinger middle", "#94a3b8", "dash"),
    ("bb_lower", "Bollinger lower", "#94a3b8", "dot"),
)


def _clean(values: np.ndarray) -> list[float | None]:
    return [None if not math.isfinite(v) else round(float(v), 4) for v in values]


LEVEL_COLOURS = {"entry": "#1d4ed8", "stop": "#b91c1c", "target": "#15803d"}


def price_chart(
    bars: pd.DataFrame, *, symbol: str, show_last: int = 260, levels: dict[str, float] | None = None
) -> dict[str, Any]:
    """Candlesticks with SMA 20/50/200 and Bollinger(20, 2). Indicators are computed on the whole
    frame (so the first visible bars are past warm-up) and only the last ``show_last`` are drawn."""
    series = universe_indicators(
        *(bars[column].to_numpy(dtype=float)[np.newaxis, :] for column in ("open", "high", "low", "close", "volume"))
    )
    visible = slice(max(0, len(bars) - show_last), len(bars))
    dates = [pd.Timestamp(d).strftime("%Y-%m-%d") for d in bars.index[visible]]
    traces: list[dict[str, Any]] = [
        {
            "type": "candlestick",
            "name": symbol,
            "x": dates,
            **{
                column: _clean(bars[column].to_numpy(dtype=float)[visible])
                for column in ("open", "high", "low", "close")
            },
            "increasing": {"line": {"color": "#15803d"}},
            "decreasing": {"line": {"color": "#b91c1c"}},
        }
    ]
    for key, label, color, dash in OVERLAYS:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": dates,
                "y": _clean(series[key][0][visible]),
                "line": {"color": color, "width": 1.2, "dash": dash},
                "hoverinfo": "skip" if key.startswith("bb_") else "x+y+name",
            }
        )
    shapes, annotations = [], []
    for name, price in (levels or {}).items():
        colour = LEVEL_COLOURS.get(name, "#334155")
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": price,
                "y1": price,
                "line": {"color": colour, "width": 1.5, "dash": "dash"},
            }
        )
        annotations.append(
            {
                "xref": "paper",
                "x": 1,
                "y": price,
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": f"{name} {price:,.2f}",
                "font": {"color": colour, "size": 11},
            }
        )
    layout = {
        "shapes": shapes,
        "annotations": annotations,
        "margin": {"l": 50, "r": 20, "t": 10, "b": 30},
        "xaxis": {"rangeslider": {"visible": False}, "type": "category", "nticks": 12},
        "yaxis": {"title": {"text": "price"}, "fixedrange": False},
        "legend": {"orientation": "h", "y": 1.08},
        "hovermode": "x unified",
        "plot_bgcolor": "#ffffff",
        "paper_bgcolor": "#ffffff",
        "height": 480,
    }
    return {"data": traces, "layout": layout}


# --- money over time (the portfolio's equity, a performance page's equity against its benchmark) ---

DAY_FORMAT = "%d %b %Y"
MONEY_TICK_FORMAT = ",.0f"  # whole rupees, thousands grouped; d3-format cannot group in lakhs
MONEY_HOVER_FORMAT = ",.2f"
MARKERS_UP_TO = 60  # points; past this a marker per point hides the line it sits on
SINGLE_POINT_PAD_DAYS = 3
SHORT_SPAN_DAYS = 14  # below this span the date axis ticks each day (never hours) and pads a day
FLAT_PAD_SHARE = Decimal("0.01")  # a flat series' money axis spans ±1% of its level, not ±0.0005%
MS_PER_DAY = 86_400_000

DatePoint = tuple[dt.date | str, Decimal | float]


@dataclass(frozen=True)
class MoneyLine:
    """One named series of money by date; dates may be ISO strings (as ``equity_curve`` gives them)."""

    name: str
    points: Sequence[DatePoint]
    colour: str
    dash: str = "solid"


def equity_chart(curve: Sequence[DatePoint], *, currency: str = DEFAULT_CURRENCY) -> dict[str, Any]:
    """The portfolio's equity by day, readable at one point and at ten thousand."""
    return money_chart([MoneyLine("equity", curve, "#1d4ed8")], currency=currency)


def money_chart(lines: Sequence[MoneyLine], *, currency: str = DEFAULT_CURRENCY, height: int = 300) -> dict[str, Any]:
    """Lines of money by date. The date axis is typed as dates and labelled in days (Plotly would
    otherwise label a single point in milliseconds); the money axis shows whole amounts with the
    currency's symbol and no SI suffix ("₹10,00,546" reads; "1.0005455M" does not). Few points get
    markers, so a lone day is a dot rather than nothing; many are plain lines, which Plotly thins."""
    parsed = [(line, [(_as_date(day), float(value)) for day, value in line.points]) for line in lines]
    all_points = [point for _, points in parsed for point in points]
    traces = [_money_trace(line, points) for line, points in parsed]
    return {
        "data": traces,
        "layout": {
            "margin": {"l": 80, "r": 20, "t": 10, "b": 40},
            "height": height,
            "showlegend": len(lines) > 1,
            "legend": {"orientation": "h", "y": 1.1},
            "hovermode": "x unified",
            "xaxis": _date_axis([day for day, _ in all_points]),
            "yaxis": _money_axis([value for _, value in all_points], currency),
            "plot_bgcolor": "#ffffff",
            "paper_bgcolor": "#ffffff",
        },
    }


def _as_date(day: dt.date | str) -> dt.date:
    if isinstance(day, dt.datetime):
        return day.date()
    if isinstance(day, dt.date):
        return day
    return dt.date.fromisoformat(day)


def _money_trace(line: MoneyLine, points: Sequence[tuple[dt.date, float]]) -> dict[str, Any]:
    few = len(points) <= MARKERS_UP_TO
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines+markers" if few else "lines",
        "name": line.name,
        "x": [day.isoformat() for day, _ in points],
        "y": [round(value, 2) for _, value in points],
        "line": {"color": line.colour, "width": 1.8, "dash": line.dash},
    }
    if few:
        trace["marker"] = {"color": line.colour, "size": 7}
    return trace


def _date_axis(days: Sequence[dt.date]) -> dict[str, Any]:
    axis: dict[str, Any] = {"type": "date", "tickformat": DAY_FORMAT, "hoverformat": DAY_FORMAT}
    if not days:
        return axis
    first, last = min(days), max(days)
    if last - first < dt.timedelta(days=SHORT_SPAN_DAYS):
        pad = dt.timedelta(days=SINGLE_POINT_PAD_DAYS if first == last else 1)
        axis["range"] = [(first - pad).isoformat(), (last + pad).isoformat()]
        axis["dtick"] = MS_PER_DAY  # whole days: Plotly would tick a short span in hours
    return axis


def _money_axis(values: Sequence[float], currency: str) -> dict[str, Any]:
    axis: dict[str, Any] = {
        "type": "linear",
        "tickformat": MONEY_TICK_FORMAT,
        "hoverformat": MONEY_HOVER_FORMAT,
        "tickprefix": currency_symbol(currency),
        "exponentformat": "none",
        "separatethousands": True,
        "automargin": True,
    }
    if values:
        low, high = min(values), max(values)
        level = max(abs(low), abs(high))
        pad = float(FLAT_PAD_SHARE) * level
        if high - low < pad:  # one point, or a curve that barely moved: give it room to read
            middle = (low + high) / 2
            axis["range"] = [round(middle - pad, 2), round(middle + pad, 2)]
    return axis
