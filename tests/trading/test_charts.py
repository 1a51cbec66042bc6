"""The charts as the browser receives them: a figure dict, checked as data.

One point used to be drawn with millisecond ticks on the date axis and "1.0005455M" on the money
axis; ten thousand must stay a line a browser can draw. The price chart once labelled its levels on
the candles and clipped a far target; its panes must show the numbers the analysts read."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from decimal import Decimal

import numpy as np
import pandas as pd

from trading.market.charts import (
    LABEL_GAP_PX,
    PRICE_PANE_PX,
    MoneyLine,
    TradeMark,
    equity_chart,
    money_chart,
    price_chart,
    trade_marks,
)
from trading.market.domain.technical import technical_features
from vocabulary.money import format_money

DAY = dt.date(2025, 3, 14)


def _curve(count: int, start: dt.date = DAY) -> list[tuple[str, float]]:
    """As ``equity_curve`` gives it: ISO dates and floats."""
    return [((start + dt.timedelta(days=i)).isoformat(), 1_000_000 + 37.5 * i) for i in range(count)]


def test_one_point_is_a_dot_on_a_readable_day_and_rupee_axis() -> None:
    figure = equity_chart([("2025-03-14", 1_000_545.5)], currency="INR")
    xaxis, yaxis = figure["layout"]["xaxis"], figure["layout"]["yaxis"]
    assert xaxis["type"] == "date"
    assert xaxis["tickformat"] == "%d %b %Y"
    assert xaxis["range"] == ["2025-03-11", "2025-03-17"]  # three days either side
    assert xaxis["dtick"] == 86_400_000  # ticks a day apart, never hours or milliseconds
    assert yaxis["tickformat"] == ",.0f" and yaxis["tickprefix"] == "₹"
    assert yaxis["exponentformat"] == "none"  # no "M", no "k"
    low, high = yaxis["range"]
    assert low < 1_000_545.5 < high and high - low > 10_000  # room around the lone value
    (trace,) = figure["data"]
    assert trace["mode"] == "lines+markers"
    assert trace["x"] == ["2025-03-14"] and trace["y"] == [1_000_545.5]


def test_two_points_keep_day_ticks_and_a_days_padding() -> None:
    figure = equity_chart(_curve(2), currency="INR")
    xaxis = figure["layout"]["xaxis"]
    assert xaxis["type"] == "date" and xaxis["tickformat"] == "%d %b %Y"
    assert xaxis["range"] == ["2025-03-13", "2025-03-16"]
    assert xaxis["dtick"] == 86_400_000
    assert figure["data"][0]["mode"] == "lines+markers"
    assert figure["layout"]["yaxis"]["tickformat"] == ",.0f"


def test_ten_thousand_points_are_a_plain_line_with_automatic_ranges() -> None:
    figure = equity_chart(_curve(10_000, start=dt.date(1990, 1, 1)), currency="INR")
    xaxis, yaxis = figure["layout"]["xaxis"], figure["layout"]["yaxis"]
    assert xaxis["type"] == "date" and xaxis["tickformat"] == "%d %b %Y"
    assert "range" not in xaxis and "dtick" not in xaxis  # Plotly picks months or years
    assert "range" not in yaxis  # the curve moved: autorange frames it
    assert yaxis["tickformat"] == ",.0f" and yaxis["tickprefix"] == "₹"
    (trace,) = figure["data"]
    assert trace["mode"] == "lines" and "marker" not in trace
    assert len(trace["x"]) == 10_000
    json.dumps(figure)  # ready for json_script as it is


def test_dates_may_be_dates_and_money_decimal() -> None:
    figure = equity_chart([(DAY, Decimal("1000000.004"))], currency="USD")
    assert figure["data"][0]["x"] == ["2025-03-14"] and figure["data"][0]["y"] == [1_000_000.0]
    assert figure["layout"]["yaxis"]["tickprefix"] == "$"


def test_two_lines_share_the_axes_and_show_a_legend() -> None:
    figure = money_chart(
        [
            MoneyLine("equity", _curve(5), "#1d4ed8"),
            MoneyLine("Nifty 50 (rebased)", _curve(5), "#94a3b8", dash="dot"),
        ],
        currency="INR",
    )
    assert [trace["name"] for trace in figure["data"]] == ["equity", "Nifty 50 (rebased)"]
    assert figure["layout"]["showlegend"] is True
    assert figure["data"][1]["line"]["dash"] == "dot"


def test_no_points_is_still_a_valid_figure() -> None:
    figure = equity_chart([], currency="INR")
    assert figure["data"][0]["x"] == []
    assert "range" not in figure["layout"]["xaxis"] and "range" not in figure["layout"]["yaxis"]


# --- the price chart: candles, panes, range buttons, levels, the trade's marks ------------------------

HOLIDAY = dt.date(2024, 8, 15)  # a Thursday without a bar, as NSE's Independence Day


def _bars(count: int = 600, *, seed: int = 3, first: float = 1200.0) -> pd.DataFrame:
    """Weekday bars (one holiday left out) of a seeded walk with real OHLC geometry."""
    days = [d.date() for d in pd.bdate_range("2023-01-02", periods=count + 1) if d.date() != HOLIDAY][:count]
    rng = np.random.default_rng(seed)
    close = first * np.exp(np.cumsum(rng.normal(0.0003, 0.014, count)))
    opens = np.concatenate([[first], close[:-1]])
    return pd.DataFrame(
        {
            "open": opens,
            "high": np.maximum(opens, close) * 1.006,
            "low": np.minimum(opens, close) * 0.994,
            "close": close,
            "volume": rng.integers(200_000, 9_000_000, count).astype(float),
        },
        index=days,
    )


def _trace(figure: dict, name: str) -> dict:
    return next(trace for trace in figure["data"] if trace["name"] == name)


def test_the_instrument_chart_has_volume_rsi_and_macd_panes_with_the_numbers_the_analysts_read() -> None:
    bars = _bars()
    figure = price_chart(bars, symbol="RELIANCE")

    technical = technical_features(bars)  # what the feature bundle hands the technical analyst
    assert _trace(figure, "RSI 14")["y"][-1] == round(technical.rsi_14, 2)
    assert _trace(figure, "MACD")["y"][-1] == round(technical.macd_line, 4)
    assert _trace(figure, "MACD signal")["y"][-1] == round(technical.macd_signal, 4)
    assert _trace(figure, "MACD histogram")["y"][-1] == round(technical.macd_hist, 4)
    assert _trace(figure, "SMA 200")["y"][-1] == round(technical.sma_200, 2)
    assert _trace(figure, "Volume")["y"][-1] == bars["volume"].iloc[-1]
    # Each pane on its own y axis, stacked under the price without overlapping.
    axes = {_trace(figure, name).get("yaxis", "y") for name in ("RELIANCE", "Volume", "RSI 14", "MACD")}
    assert axes == {"y", "y2", "y3", "y4"}
    layout = figure["layout"]
    domains = sorted(layout[key]["domain"] for key in ("yaxis", "yaxis2", "yaxis3", "yaxis4"))
    assert all(lower[1] < upper[0] for lower, upper in itertools.pairwise(domains))
    assert layout["yaxis"]["domain"][1] == 1.0  # the price on top
    assert layout["yaxis3"]["range"] == [0, 100]


def test_the_dates_are_sent_once_and_the_figure_stays_small() -> None:
    bars = _bars()
    figure = price_chart(bars, symbol="RELIANCE", show_last=500)

    assert len(figure["x"]) == 500 and figure["x"][-1] == bars.index[-1].isoformat()
    assert all("x" not in trace for trace in figure["data"])  # chart.js gives them figure["x"]
    assert all(len(trace["y" if "y" in trace else "close"]) == 500 for trace in figure["data"])
    size = len(json.dumps(figure, separators=(",", ":")))
    assert size < 80_000, size  # 500 sessions of candles, six overlays and three panes


def test_range_buttons_and_dates_read_like_the_pages() -> None:
    figure = price_chart(_bars(), symbol="RELIANCE")
    xaxis = figure["layout"]["xaxis"]

    assert [button["label"] for button in xaxis["rangeselector"]["buttons"]] == ["1M", "3M", "6M", "1Y", "all"]
    assert xaxis["type"] == "date"
    assert xaxis["tickformat"] == xaxis["hoverformat"] == "%d %b %Y"  # "14 Mar 2025", as the templates write it
    # Sessions only: weekends never traded are a weekly break, the holiday a break of its own.
    assert {"bounds": ["sat", "mon"]} in xaxis["rangebreaks"]
    assert any(HOLIDAY.isoformat() in rule.get("values", []) for rule in xaxis["rangebreaks"])
    # More than a year sent: it opens on the last year, "all" shows the rest.
    first, last = (dt.date.fromisoformat(day) for day in xaxis["range"])
    assert (last - first).days == 366 and last > dt.date.fromisoformat(figure["x"][-1])


def test_a_market_open_every_day_of_the_week_gets_no_weekend_break() -> None:
    days = [dt.date(2025, 1, 1) + dt.timedelta(days=i) for i in range(60)]
    bars = pd.DataFrame({"open": 10.0, "high": 11.0, "low": 9.0, "close": 10.0, "volume": 5.0}, index=days, dtype=float)
    assert price_chart(bars, symbol="BTC", currency="USD")["layout"]["xaxis"]["rangebreaks"] == []


def test_rupee_charts_group_in_lakhs_and_dollar_charts_in_thousands() -> None:
    rupees = price_chart(_bars(), symbol="RELIANCE", currency="INR")
    dollars = price_chart(_bars(), symbol="AAPL", currency="USD")

    assert rupees["config"]["locale"] == "en-IN"
    assert rupees["config"]["locales"]["en-IN"]["format"]["grouping"] == [3, 2]  # 1,23,45,678
    assert rupees["layout"]["yaxis"]["tickprefix"] == "₹"
    assert rupees["layout"]["yaxis2"]["hoverformat"] == ",d"  # volume: whole shares, grouped
    assert "locale" not in dollars["config"] and dollars["layout"]["yaxis"]["tickprefix"] == "$"
    assert equity_chart(_curve(3), currency="INR")["config"]["locale"] == "en-IN"


def _thesis_chart(bars: pd.DataFrame, **extra) -> dict:
    close = float(bars["close"].iloc[-1])
    levels = {"entry": close, "stop": close * 0.96, "target": close * 1.45}  # target far above every candle
    return price_chart(bars, symbol="RELIANCE", show_last=130, levels=levels, **extra)


def test_the_target_far_above_the_candles_is_inside_the_price_axis_with_room_for_its_label() -> None:
    bars = _bars()
    figure = _thesis_chart(bars)
    low, high = figure["layout"]["yaxis"]["range"]
    target = float(bars["close"].iloc[-1]) * 1.45

    assert high > target + (high - low) * 0.03  # padded, not clipped at the edge
    assert low < float(bars["low"].iloc[-130:].min())
    assert round(target, 2) in figure["rescale"]["y"]  # chart.js keeps it in view when a range button zooms


def test_level_labels_sit_in_the_right_margin_apart_from_each_other() -> None:
    bars = _bars()
    figure = _thesis_chart(bars, as_of=bars.index[-1])
    layout = figure["layout"]
    labels = {note["name"]: note for note in layout["annotations"]}

    assert set(labels) >= {"entry", "stop", "target", "support", "resistance"}
    for note in labels.values():
        assert (note["xref"], note["x"], note["xanchor"]) == ("paper", 1, "left")  # right of the plot area
    assert layout["margin"]["r"] >= 100  # room for "resistance ₹1,234.50"
    low, high = layout["yaxis"]["range"]
    placed = sorted(note["y"] for note in labels.values())
    min_gap_px = min(b - a for a, b in itertools.pairwise(placed)) / (high - low) * PRICE_PANE_PX
    assert min_gap_px >= LABEL_GAP_PX - 0.01
    assert labels["entry"]["text"].startswith("entry ₹")


def test_support_and_resistance_are_the_analysts_levels_on_the_as_of_day() -> None:
    bars = _bars()
    as_of = bars.index[-20]
    figure = _thesis_chart(bars, as_of=as_of)
    technical = technical_features(bars.loc[:as_of])
    lines = {note["name"]: note["text"] for note in figure["layout"]["annotations"]}

    assert lines["support"] == f"support {format_money(Decimal(str(round(technical.support, 2))), 'INR')}"
    values = figure["rescale"]["y"]
    assert round(technical.support, 2) in values and round(technical.resistance, 2) in values
    # The bars run past the as-of day: a dotted line says where the analysts stood.
    assert any(shape.get("x0") == as_of.isoformat() for shape in figure["layout"]["shapes"])


def test_a_traded_thesis_shows_its_fill_and_exit_where_and_when_they_happened() -> None:
    bars = _bars()
    marks = trade_marks(
        direction="LONG",
        quantity=12,
        filled_on=bars.index[-15],
        fill_price=Decimal("1234.55"),
        closed_on=bars.index[-3],
        exit_price=Decimal("1301.10"),
        exit_reason="target",
    )
    figure = _thesis_chart(bars, marks=marks, as_of=bars.index[-16])

    fill, exit_ = _trace(figure, "fill: BUY 12"), _trace(figure, "exit: target")
    assert fill["x"] == [bars.index[-15].isoformat()] and fill["y"] == [1234.55]
    assert fill["marker"]["symbol"] == "triangle-up"
    assert exit_["x"] == [bars.index[-3].isoformat()] and exit_["y"] == [1301.1]
    assert exit_["marker"]["symbol"] == "triangle-down"  # a long sells to get out
    assert 1234.55 in figure["rescale"]["y"] and 1301.1 in figure["rescale"]["y"]


def test_a_short_sells_at_the_fill_and_an_untraded_thesis_has_no_marks() -> None:
    short = trade_marks(direction="SHORT", quantity=5, filled_on=DAY, fill_price=100.0)
    assert [(mark.kind, mark.side) for mark in short] == [("fill", "SELL")]
    assert trade_marks(direction="LONG", quantity=5, filled_on=None, fill_price=None) == []
    assert isinstance(short[0], TradeMark) and not math.isnan(short[0].price)
