"""Plain data in, a Plotly figure (as a JSON-ready dict) out. No Django."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trading.market.domain.indicators import universe_indicators

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
) -> dict:
    """Candlesticks with SMA 20/50/200 and Bollinger(20, 2). Indicators are computed on the whole
    frame (so the first visible bars are past warm-up) and only the last ``show_last`` are drawn."""
    series = universe_indicators(
        *(bars[column].to_numpy(dtype=float)[np.newaxis, :] for column in ("open", "high", "low", "close", "volume"))
    )
    visible = slice(max(0, len(bars) - show_last), len(bars))
    dates = [pd.Timestamp(d).strftime("%Y-%m-%d") for d in bars.index[visible]]
    traces: list[dict] = [
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
