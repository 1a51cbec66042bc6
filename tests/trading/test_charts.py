"""The money-over-time charts as the browser receives them: a figure dict, checked as data.

One point used to be drawn with millisecond ticks on the date axis and "1.0005455M" on the money
axis; ten thousand must stay a line a browser can draw."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from trading.market.charts import MoneyLine, equity_chart, money_chart

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
