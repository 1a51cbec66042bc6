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
from vocabulary.money import DEFAULT_CURRENCY, currency_symbol, format_money

OVERLAYS = (
    ("sma_20", "SMA 20", "#2563eb", "solid"),
    ("sma_50", "SMA 50", "#d97706", "solid"),
    ("sma_200", "SMA 200", "#7c3aed", "solid"),
    ("bb_upper", "Bollinger upper", "#94a3b8", "dot"),
    ("bb_middle", "Bollinger middle", "#94a3b8", "dash"),
    ("bb_lower", "Bollinger lower", "#94a3b8", "dot"),
)
PANES = ("volume", "rsi", "macd")
RESCALE = {"volume": "zero", "macd": "span"}  # how chart.js fits a pane to the visible dates (RSI stays 0-100)
LEVEL_COLOURS = {
    "entry": "#1d4ed8",
    "stop": "#b91c1c",
    "target": "#15803d",
    "support": "#0f766e",
    "resistance": "#c2410c",
}
MARK_STYLES = {  # (marker symbol for a buy, for a sell, colour)
    "fill": ("triangle-up", "triangle-down", "#1d4ed8"),
    "exit": ("triangle-up", "triangle-down", "#7c3aed"),
}
RANGE_BUTTONS = (  # (label, count, step): the windows a trader flips between
    ("1M", 1, "month"),
    ("3M", 3, "month"),
    ("6M", 6, "month"),
    ("1Y", 1, "year"),
)
OPEN_ON_LAST_YEAR_PAST = 300  # bars: more than this opens on the last year ("all" shows the rest)
PRICE_PANE_PX = 340
SUB_PANE_PX = 95
PANE_GAP_PX = 18
PRICE_MARGIN = {"l": 64, "r": 118, "t": 40, "b": 30}  # the right margin carries the level labels
LABEL_GAP_PX = 17  # labels closer than this in the price pane are pushed apart
LEVEL_PAD_SHARE = 0.06  # of the price span, above the highest and below the lowest thing drawn
DAY_FORMAT = "%d %b %Y"  # as the pages write a day: 14 Mar 2025
PRICE_DECIMALS = 2
MACD_DECIMALS = 4
INDIAN_LOCALE = "en-IN"
# d3-format groups thousands by a list of group sizes, the last repeating: [3, 2] reads 1,23,45,678.
INDIAN_GROUPING = [3, 2]


def _clean(values: np.ndarray, decimals: int = 4) -> list[float | None]:
    return [None if not math.isfinite(v) else round(float(v), decimals) for v in values]


@dataclass(frozen=True)
class TradeMark:
    """A fill or an exit of the thesis's trade, drawn as a marker where and when it happened."""

    kind: str  # "fill" or "exit"
    day: dt.date
    price: float
    side: str  # "BUY" or "SELL": the marker points up for a buy, down for a sell
    label: str  # e.g. "fill: BUY 12" or "exit: stop"


def trade_marks(
    *,
    direction: str,
    quantity: int,
    filled_on: dt.date | None,
    fill_price: Decimal | float | None,
    closed_on: dt.date | None = None,
    exit_price: Decimal | float | None = None,
    exit_reason: str = "",
) -> list[TradeMark]:
    """The fill and the exit of a thesis's trade (what its order and position stored), as marks:
    nothing before the fill; a long buys at the fill and sells at the exit, a short the reverse."""
    if filled_on is None or fill_price is None:
        return []
    opening, closing = ("BUY", "SELL") if direction.upper() == "LONG" else ("SELL", "BUY")
    marks = [TradeMark("fill", filled_on, float(fill_price), opening, f"fill: {opening} {quantity}")]
    if closed_on is not None and exit_price is not None:
        reason = f": {exit_reason}" if exit_reason else ""
        marks.append(TradeMark("exit", closed_on, float(exit_price), closing, f"exit{reason}"))
    return marks


def plotly_config(currency: str) -> dict[str, Any]:
    """The Plotly config a figure in ``currency`` is drawn with: rupees group in lakhs and crores
    (d3-format's grouping [3, 2]), as the money filter writes them; other currencies by thousands."""
    config: dict[str, Any] = {"responsive": True, "displaylogo": False}
    if (currency or DEFAULT_CURRENCY).upper() == "INR":
        config["locale"] = INDIAN_LOCALE
        config["locales"] = {INDIAN_LOCALE: {"format": {"grouping": INDIAN_GROUPING}}}
    return config


def price_chart(
    bars: pd.DataFrame,
    *,
    symbol: str,
    show_last: int = 500,
    levels: dict[str, float] | None = None,
    currency: str = DEFAULT_CURRENCY,
    panes: Sequence[str] = PANES,
    marks: Sequence[TradeMark] = (),
    as_of: dt.date | None = None,
) -> dict[str, Any]:
    """Candlesticks with SMA 20/50/200 and Bollinger(20, 2), and under them the volume, RSI(14) and
    MACD(12, 26, 9) panes, all from the desk's indicator code (the numbers the analysts read).

    Indicators are computed on the whole frame (so the first visible bars are past warm-up) and only
    the last ``show_last`` are drawn. The dates are sent once (``figure["x"]``; static/js/chart.js
    hands them to every trace) and the axis skips the days without a bar, so a week is five candles.

    ``levels`` (entry, stop, target) are dashed lines labelled in the right margin, never on the
    candles, and the price axis spans all of them; with levels, support and resistance as of
    ``as_of`` (the last bar if None) join them. ``marks`` are the trade's fill and exit."""
    wanted = tuple(pane for pane in PANES if pane in panes)
    series = universe_indicators(
        *(bars[column].to_numpy(dtype=float)[np.newaxis, :] for column in ("open", "high", "low", "close", "volume"))
    )
    visible = slice(max(0, len(bars) - show_last), len(bars))
    days = [pd.Timestamp(d).date() for d in bars.index[visible]]
    lines = {name: round(float(price), PRICE_DECIMALS) for name, price in (levels or {}).items()}
    if lines:
        lines.update(_key_levels(bars, series, as_of, lines))
    traces = _price_traces(bars, series, visible, symbol)
    axes = _pane_axes(wanted)
    for pane in wanted:
        traces.extend(_pane_traces(pane, bars, series, visible, axes[pane]))
    traces.extend(_mark_traces(marks))
    height = PRICE_MARGIN["t"] + PRICE_MARGIN["b"] + PRICE_PANE_PX + len(wanted) * (SUB_PANE_PX + PANE_GAP_PX)
    price_range = _price_range(bars, visible, lines, marks)
    shapes, annotations = _level_lines(lines, price_range, currency)
    for pane in wanted:
        shapes.extend(_pane_guides(pane, axes[pane]))
    layout: dict[str, Any] = {
        "shapes": shapes,
        "annotations": annotations,
        "margin": PRICE_MARGIN,
        "height": height,
        "xaxis": _trading_day_axis(days, marks, anchor=f"y{len(wanted) + 1}" if wanted else "y"),
        "yaxis": {
            "domain": _domains(wanted)["price"],
            "tickformat": ",",
            "hoverformat": f",.{PRICE_DECIMALS}f",
            "tickprefix": currency_symbol(currency),
            "range": price_range,
            "automargin": True,
        },
        **{_layout_key(axes[pane]): _pane_axis(pane, _domains(wanted)[pane]) for pane in wanted},
        "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0.36, "font": {"size": 11}},
        "hovermode": "x unified",
        "plot_bgcolor": "#ffffff",
        "paper_bgcolor": "#ffffff",
        "bargap": 0.2,
    }
    if as_of is not None and days and as_of < days[-1]:
        shapes.append(_as_of_line(as_of))
    return {
        "x": [day.isoformat() for day in days],
        "data": traces,
        "layout": layout,
        "config": plotly_config(currency),
        "rescale": {
            "y": [*lines.values(), *(mark.price for mark in marks)],
            "axes": {"y": "price", **{axes[pane]: RESCALE[pane] for pane in wanted if pane in RESCALE}},
            "levels": lines,
            "label_gap_px": LABEL_GAP_PX,
        },
    }


def _price_traces(bars: pd.DataFrame, series: dict[str, np.ndarray], visible: slice, symbol: str) -> list[dict]:
    traces: list[dict[str, Any]] = [
        {
            "type": "candlestick",
            "name": symbol,
            **{
                column: _clean(bars[column].to_numpy(dtype=float)[visible], PRICE_DECIMALS)
                for column in ("open", "high", "low", "close")
            },
            "increasing": {"line": {"color": "#15803d"}},
            "decreasing": {"line": {"color": "#b91c1c"}},
        }
    ]
    for key, label, color, dash in OVERLAYS:
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": "lines",
            "name": label,
            "y": _clean(series[key][0][visible], PRICE_DECIMALS),
            "line": {"color": color, "width": 1.2, "dash": dash},
        }
        if key.startswith("bb_"):  # one legend entry toggles the three bands
            trace |= {"hoverinfo": "skip", "legendgroup": "bollinger", "showlegend": key == "bb_upper"}
            if key == "bb_upper":
                trace["name"] = "Bollinger 20, 2"
        traces.append(trace)
    return traces


def _pane_axes(panes: Sequence[str]) -> dict[str, str]:
    """Plotly's names for the panes' y axes, top to bottom under the price: y2, y3, ..."""
    return {pane: f"y{index + 2}" for index, pane in enumerate(panes)}


def _layout_key(axis: str) -> str:
    return f"yaxis{axis[1:]}"


def _domains(panes: Sequence[str]) -> dict[str, list[float]]:
    """Each pane's vertical share of the plot, from its height in pixels, price on top."""
    total = PRICE_PANE_PX + len(panes) * (SUB_PANE_PX + PANE_GAP_PX)
    domains: dict[str, list[float]] = {}
    bottom = 0.0
    for pane in reversed(panes):
        top = bottom + SUB_PANE_PX / total
        domains[pane] = [round(bottom, 4), round(top, 4)]
        bottom = top + PANE_GAP_PX / total
    domains["price"] = [round(bottom, 4), 1.0]
    return domains


def _pane_axis(pane: str, domain: list[float]) -> dict[str, Any]:
    axis: dict[str, Any] = {"domain": domain, "automargin": True, "nticks": 3, "fixedrange": True}
    if pane == "volume":
        axis |= {"title": {"text": "volume", "font": {"size": 11}}, "tickformat": ",d", "hoverformat": ",d"}
        axis["rangemode"] = "tozero"
    elif pane == "rsi":
        axis |= {"title": {"text": "RSI 14", "font": {"size": 11}}, "range": [0, 100], "hoverformat": ".2f"}
        axis |= {"tickvals": [30, 70], "ticktext": ["30", "70"], "zeroline": False}  # oversold, overbought
    else:
        axis |= {"title": {"text": "MACD", "font": {"size": 11}}, "hoverformat": ",.3f", "zeroline": True}
    return axis


def _pane_traces(
    pane: str, bars: pd.DataFrame, series: dict[str, np.ndarray], visible: slice, axis: str
) -> list[dict[str, Any]]:
    if pane == "volume":
        volume = bars["volume"].to_numpy(dtype=float)[visible]
        return [
            {
                "type": "bar",
                "name": "Volume",
                "y": [int(v) if math.isfinite(v) else None for v in volume],  # whole shares: no ".0" each
                "yaxis": axis,
                "marker": {"color": "#94a3b8"},
                "showlegend": False,  # the pane's title names it
            }
        ]
    if pane == "rsi":
        return [
            {
                "type": "scatter",
                "mode": "lines",
                "name": "RSI 14",
                "y": _clean(series["rsi_14"][0][visible], PRICE_DECIMALS),
                "yaxis": axis,
                "showlegend": False,
                "line": {"color": "#0f766e", "width": 1.2},
            }
        ]
    return [
        {
            "type": "bar",
            "name": "MACD histogram",
            "y": _clean(series["macd_hist"][0][visible], MACD_DECIMALS),
            "yaxis": axis,
            "showlegend": False,
            "marker": {"color": "#cbd5e1"},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "MACD",
            "y": _clean(series["macd_line"][0][visible], MACD_DECIMALS),
            "yaxis": axis,
            "line": {"color": "#1d4ed8", "width": 1.2},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "MACD signal",
            "y": _clean(series["macd_signal"][0][visible], MACD_DECIMALS),
            "yaxis": axis,
            "line": {"color": "#d97706", "width": 1.2},
        },
    ]


def _pane_guides(pane: str, axis: str) -> list[dict[str, Any]]:
    """RSI's 30 and 70 bands: the lines the technical analyst reads oversold and overbought by."""
    if pane != "rsi":
        return []
    return [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "yref": axis,
            "y0": bound,
            "y1": bound,
            "line": {"color": "#cbd5e1", "width": 1, "dash": "dot"},
        }
        for bound in (30, 70)
    ]


def _key_levels(
    bars: pd.DataFrame, series: dict[str, np.ndarray], as_of: dt.date | None, given: dict[str, float]
) -> dict[str, float]:
    """Support and resistance as the analysts saw them on ``as_of``: the indicator series at that bar."""
    dates = [pd.Timestamp(d).date() for d in bars.index]
    if not dates:
        return {}
    index = len(dates) - 1
    if as_of is not None:
        earlier = [i for i, day in enumerate(dates) if day <= as_of]
        if not earlier:
            return {}
        index = earlier[-1]
    found = {}
    for name in ("support", "resistance"):
        value = float(series[name][0][index])
        if name not in given and math.isfinite(value):
            found[name] = round(value, PRICE_DECIMALS)
    return found


def _price_range(
    bars: pd.DataFrame, visible: slice, lines: dict[str, float], marks: Sequence[TradeMark]
) -> list[float] | None:
    """The price axis spans the visible candles and every level and mark, padded, so a target far
    above the candles is drawn with its label instead of clipped off the top."""
    lows = bars["low"].to_numpy(dtype=float)[visible]
    highs = bars["high"].to_numpy(dtype=float)[visible]
    values = [*lows[np.isfinite(lows)], *highs[np.isfinite(highs)], *lines.values(), *(m.price for m in marks)]
    if not values:
        return None
    low, high = min(values), max(values)
    pad = max(high - low, abs(high) * 0.01) * LEVEL_PAD_SHARE
    return [round(float(low - pad), 4), round(float(high + pad), 4)]


def _level_lines(
    lines: dict[str, float], price_range: list[float] | None, currency: str
) -> tuple[list[dict], list[dict]]:
    """A dashed line across the plot per level, its label in the right margin beside it; labels
    closer than ``LABEL_GAP_PX`` are pushed apart (the line stays at its price)."""
    shapes, annotations = [], []
    placed = _spread_labels(lines, price_range)
    for name, price in lines.items():
        colour = LEVEL_COLOURS.get(name, "#334155")
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": price,
                "y1": price,
                "line": {
                    "color": colour,
                    "width": 1.5,
                    "dash": "dash" if name in ("entry", "stop", "target") else "dot",
                },
            }
        )
        annotations.append(
            {
                "xref": "paper",
                "x": 1,
                "y": placed[name],
                "xanchor": "left",
                "yanchor": "middle",
                "xshift": 4,
                "showarrow": False,
                "text": f"{name} {format_money(Decimal(str(price)), currency)}",
                "font": {"color": colour, "size": 11},
                "name": name,
            }
        )
    return shapes, annotations


def _spread_labels(lines: dict[str, float], price_range: list[float] | None) -> dict[str, float]:
    if not lines or price_range is None:
        return dict(lines)
    per_px = (price_range[1] - price_range[0]) / PRICE_PANE_PX
    gap = LABEL_GAP_PX * per_px
    ordered = sorted(lines.items(), key=lambda item: item[1])
    placed: dict[str, float] = {}
    previous: float | None = None
    for name, price in ordered:
        y = price if previous is None else max(price, previous + gap)
        placed[name] = round(float(y), 4)
        previous = y
    overflow = previous - (price_range[1] - gap / 2) if previous is not None else 0
    if overflow > 0:  # pushed past the top: slide the whole stack down, keeping the gaps
        placed = {name: round(y - overflow, 4) for name, y in placed.items()}
    return placed


def _mark_traces(marks: Sequence[TradeMark]) -> list[dict[str, Any]]:
    traces = []
    for mark in marks:
        up, down, colour = MARK_STYLES.get(mark.kind, MARK_STYLES["exit"])
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": mark.label,
                "x": [mark.day.isoformat()],
                "y": [round(mark.price, PRICE_DECIMALS)],
                "marker": {
                    "symbol": up if mark.side.upper() == "BUY" else down,
                    "size": 13,
                    "color": colour,
                    "line": {"color": "#ffffff", "width": 1},
                },
                "meta": mark.kind,
            }
        )
    return traces


def _as_of_line(as_of: dt.date) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": as_of.isoformat(),
        "x1": as_of.isoformat(),
        "y0": 0,
        "y1": 1,
        "line": {"color": "#64748b", "width": 1, "dash": "dot"},
    }


def _trading_day_axis(days: Sequence[dt.date], marks: Sequence[TradeMark], *, anchor: str) -> dict[str, Any]:
    """A date axis labelled as the pages write days, with range buttons, skipping the days without
    a bar (weekends and holidays, read from the bars: no market's calendar is assumed)."""
    axis: dict[str, Any] = {
        "type": "date",
        "tickformat": DAY_FORMAT,
        "hoverformat": DAY_FORMAT,
        "anchor": anchor,
        "rangeslider": {"visible": False},
        "rangebreaks": _rangebreaks(days),
        "rangeselector": {
            "buttons": [
                {"label": label, "count": count, "step": step, "stepmode": "backward"}
                for label, count, step in RANGE_BUTTONS
            ]
            + [{"label": "all", "step": "all"}],
            "x": 0,
            "y": 1.0,
            "yanchor": "bottom",
            "font": {"size": 11},
        },
    }
    if len(days) > OPEN_ON_LAST_YEAR_PAST:
        last = max([days[-1], *(mark.day for mark in marks)])
        axis["range"] = [(last - dt.timedelta(days=365)).isoformat(), (last + dt.timedelta(days=1)).isoformat()]
    return axis


def _rangebreaks(days: Sequence[dt.date]) -> list[dict[str, Any]]:
    """The gaps between bars: a weekday never traded in the data (Saturday and Sunday on NSE) as a
    weekly pattern, every other missing day (holidays) by date."""
    if len(days) < 2:
        return []
    traded = set(days)
    weekdays = {day.weekday() for day in days}
    every_day = [days[0] + dt.timedelta(days=i) for i in range((days[-1] - days[0]).days + 1)]
    breaks: list[dict[str, Any]] = []
    weekly = weekdays.isdisjoint({5, 6}) and len(days) >= 10
    if weekly:
        breaks.append({"bounds": ["sat", "mon"]})
    missing = [d.isoformat() for d in every_day if d not in traded and not (weekly and d.weekday() >= 5)]
    if missing:
        breaks.append({"values": missing})
    return breaks


# --- money over time (the portfolio's equity, a performance page's equity against its benchmark) ---

MONEY_TICK_FORMAT = ",.0f"  # whole amounts, grouped by the figure's locale (lakhs for rupees: plotly_config)
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
        "config": plotly_config(currency),
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
