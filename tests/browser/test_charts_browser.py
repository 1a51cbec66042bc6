"""The price charts as a person sees them in Chromium: panes, range buttons, dates and numbers as
the pages write them, level labels beside the plot (not on the candles), a far target in view, and
a traded thesis's fill and exit on its candles."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from decimal import Decimal

import pytest

from tests.factories.book import position_on_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

INDIAN_GROUPED = re.compile(r"^\d{1,2}(,\d{2})*,\d{3}$")  # 10,00,000 and 1,50,000; not 1,000,000
PAGE_DAY = re.compile(r"^\d{2} [A-Z][a-z]{2}( \d{4})?$")  # "14 Mar 2025", as the templates write a day


def _chart_state(page) -> dict:
    """What Plotly drew, read from the page: axes' ranges and the plot area, in the chart's pixels."""
    return page.evaluate(
        """() => {
          const gd = document.getElementById("price-chart");
          const layout = gd._fullLayout, size = layout._size, box = gd.getBoundingClientRect();
          const texts = (selector) => Array.from(gd.querySelectorAll(selector)).map((node) => node.textContent);
          const boxOf = (node) => {
            const r = node.getBoundingClientRect();
            const left = r.left - box.left, top = r.top - box.top;
            return {left: left, right: left + r.width, top: top, bottom: top + r.height};
          };
          return {
            x: layout.xaxis.range.map(String), y: layout.yaxis.range,
            plot: {left: size.l, right: size.l + size.w, top: size.t, bottom: size.t + size.h},
            chart: {width: box.width, height: box.height},
            yAxes: Object.keys(layout).filter((key) => /^yaxis\\d*$/.test(key)).length,
            xTicks: texts(".xtick text"), volumeTicks: texts(".y2tick text"),
            buttons: texts(".rangeselector .button text"),
            labels: Array.from(gd.querySelectorAll(".annotation")).map((node) =>
              Object.assign({text: node.textContent}, boxOf(node))),
            markers: gd.data.filter((trace) => trace.meta === "fill" || trace.meta === "exit")
              .map((trace) => ({kind: trace.meta, x: trace.x[0], y: trace.y[0]})),
          };
        }"""
    )


def _days(state: dict) -> int:
    first, last = (dt.date.fromisoformat(value[:10]) for value in state["x"])
    return (last - first).days


def test_the_instrument_chart_has_its_panes_range_buttons_and_reads_like_the_page(
    live_server, page, log_in, screenshot, viewer, instrument_with_bars
):
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    log_in("vera")
    page.goto(f"{live_server.url}/instruments/RELIANCE/")
    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)

    state = _chart_state(page)
    assert state["yAxes"] == 4  # price, volume, RSI, MACD
    assert state["buttons"] == ["1M", "3M", "6M", "1Y", "all"]
    assert 360 <= _days(state) <= 372  # 320 sessions sent: it opens on the last year
    assert state["xTicks"] and all(PAGE_DAY.match(tick) for tick in state["xTicks"]), state["xTicks"]
    big = [
        tick
        for tick in state["volumeTicks"]
        if tick.replace(",", "").isdigit() and int(tick.replace(",", "")) >= 100_000
    ]
    assert big and all(INDIAN_GROUPED.match(tick) for tick in big), state["volumeTicks"]
    screenshot("instrument-chart-year")

    year_span = state["y"][1] - state["y"][0]
    page.locator(".rangeselector .button", has_text="1M").click()
    page.wait_for_function(
        "() => { const r = document.getElementById('price-chart')._fullLayout.xaxis.range;"
        " return (new Date(r[1]) - new Date(r[0])) < 40 * 864e5; }",
        timeout=10_000,
    )
    month = _chart_state(page)
    assert 27 <= _days(month) <= 32
    assert month["y"][1] - month["y"][0] < year_span  # the price axis fits the month, not the year
    screenshot("instrument-chart-month")
    assert problems == []


def test_the_thesis_chart_labels_its_levels_beside_the_plot_and_keeps_the_target_in_view(
    live_server, page, log_in, screenshot, approver, pending_thesis
):
    log_in("arjun")
    page.goto(f"{live_server.url}/theses/{pending_thesis.pk}/")
    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)

    state = _chart_state(page)
    labels = {label["text"].split(" ")[0]: label for label in state["labels"]}
    assert {"entry", "stop", "target"} <= set(labels), state["labels"]
    for label in labels.values():
        assert label["left"] >= state["plot"]["right"] - 1, label  # in the right margin, off the candles
        assert label["right"] <= state["chart"]["width"] + 1, label  # and not cut off at the edge
        assert state["plot"]["top"] - 10 <= label["top"] and label["bottom"] <= state["plot"]["bottom"] + 10
    low, high = state["y"]
    assert low < float(pending_thesis.stop) and float(pending_thesis.target) < high  # no level clipped
    ordered = sorted(labels.values(), key=lambda label: label["top"])
    assert all(upper["bottom"] <= lower["top"] + 2 for upper, lower in itertools.pairwise(ordered))
    screenshot("thesis-chart-levels")


def test_a_traded_thesis_shows_its_fill_and_exit_on_the_chart(live_server, page, log_in, screenshot, approver):
    path = [1000, 1004, 1012, 1020, 1031, 1045, 1060, 1080, 1100, 1120, 1140]
    position = position_on_path(path, risk_pct="3", reward_r="2", start=dt.date(2025, 1, 6))
    assert position.status == "closed" and position.exit_reason == "target"
    order = position.order

    log_in("arjun")
    page.goto(f"{live_server.url}/theses/{position.thesis_id}/")
    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)

    markers = {marker["kind"]: marker for marker in _chart_state(page)["markers"]}
    assert markers["fill"]["x"] == order.filled_on.isoformat()
    assert Decimal(str(markers["fill"]["y"])) == order.fill_price
    assert markers["exit"]["x"] == position.closed_on.isoformat()
    assert Decimal(str(markers["exit"]["y"])) == position.exit_price
    assert page.locator("#price-chart .legendtext", has_text="exit: target").count() == 1
    screenshot("thesis-chart-traded")
