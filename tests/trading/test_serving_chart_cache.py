"""The thesis page's chart is drawn once and then served from the cache, keyed on everything it
draws: the levels, the trade's marks, the days it spans and the stored bars it reads. A cached chart
is the chart drawn afresh; a new bar, a corrected bar or a fill is a new chart, never a stale one."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse

from tests.factories import OrderFactory, position_on_path, trending
from trading.book.selectors import bars_fingerprint
from trading.book.views import THESIS_CHART_BARS
from trading.market.charts import price_chart
from trading.market.selectors import bars_frame
from trading.models import DailyBar, Order

LOOKBACK = int(settings.DESK["FEATURE_LOOKBACK_BARS"]) + THESIS_CHART_BARS


def _chart(client, thesis_id: int) -> dict:
    body = client.get(reverse("thesis_detail", args=[thesis_id])).content.decode()
    found = re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', body, re.S)
    assert found is not None
    return json.loads(found[1])


def test_the_cached_chart_is_the_chart_drawn_afresh_from_the_bars(client, viewer, pending_thesis):
    thesis = pending_thesis
    client.force_login(viewer)
    cache.clear()

    drawn = _chart(client, thesis.pk)
    served = _chart(client, thesis.pk)  # from the cache
    cache.clear()
    redrawn = _chart(client, thesis.pk)

    expected = price_chart(
        bars_frame(thesis.instrument, as_of=thesis.run.as_of, limit=LOOKBACK),
        symbol=thesis.instrument.symbol,
        show_last=THESIS_CHART_BARS,
        levels={"entry": float(thesis.entry), "stop": float(thesis.stop), "target": float(thesis.target)},
        currency=thesis.instrument.currency,
        panes=("volume",),
        as_of=thesis.run.as_of,
    )
    assert drawn == served == redrawn == json.loads(json.dumps(expected))


def test_a_corrected_bar_redraws_a_cached_chart(client, viewer, pending_thesis):
    client.force_login(viewer)
    before = _chart(client, pending_thesis.pk)
    bar = DailyBar.objects.filter(instrument=pending_thesis.instrument, date__lte=pending_thesis.run.as_of).latest(
        "date"
    )
    corrected = bar.high + Decimal("7.25")
    DailyBar.objects.filter(pk=bar.pk).update(high=corrected, close=corrected)  # as an import corrects a bar

    after = _chart(client, pending_thesis.pk)

    candles = after["data"][0]
    assert after != before and candles["close"][-1] == candles["high"][-1] == float(corrected)


def test_a_fill_redraws_a_cached_chart_with_its_marker(client, viewer, pending_thesis):
    client.force_login(viewer)
    before = _chart(client, pending_thesis.pk)
    OrderFactory(
        thesis=pending_thesis,
        status=Order.Status.FILLED,
        fill_price=pending_thesis.entry,
        filled_on=pending_thesis.run.as_of,
    )

    after = _chart(client, pending_thesis.pk)

    assert not [trace for trace in before["data"] if trace.get("meta") == "fill"]
    fills = [trace for trace in after["data"] if trace.get("meta") == "fill"]
    assert [fill["x"] for fill in fills] == [[pending_thesis.run.as_of.isoformat()]]


def test_a_new_bar_extends_the_cached_chart_of_an_open_position(client, viewer):
    position = position_on_path(trending(100, 6, "0.5"))  # still open: the chart runs to the latest bar
    client.force_login(viewer)
    before = _chart(client, position.thesis_id)
    last = DailyBar.objects.filter(instrument=position.instrument).latest("date")
    new_day = last.date + dt.timedelta(days=3 if last.date.weekday() == 4 else 1)
    DailyBar.objects.create(
        instrument=position.instrument,
        date=new_day,
        open=last.close,
        high=last.close + 2,
        low=last.close - 1,
        close=last.close + 1,
        volume=1000,
    )

    after = _chart(client, position.thesis_id)

    assert before["x"][-1] == last.date.isoformat() and after["x"][-1] == new_day.isoformat()


def test_the_fingerprint_reads_the_window_the_chart_reads(instrument_with_bars):
    bars = list(DailyBar.objects.filter(instrument=instrument_with_bars).order_by("date"))
    middle = bars[len(bars) // 2]

    whole = bars_fingerprint(instrument_with_bars.pk, as_of=None, limit=LOOKBACK)
    upto = bars_fingerprint(instrument_with_bars.pk, as_of=middle.date, limit=LOOKBACK)
    DailyBar.objects.filter(pk=bars[-1].pk).update(volume=bars[-1].volume + 1)  # after the middle day

    assert bars_fingerprint(instrument_with_bars.pk, as_of=middle.date, limit=LOOKBACK) == upto
    assert bars_fingerprint(instrument_with_bars.pk, as_of=None, limit=LOOKBACK) != whole
    assert bars_fingerprint(instrument_with_bars.pk, as_of=None, limit=2) != bars_fingerprint(
        instrument_with_bars.pk, as_of=None, limit=3
    )
