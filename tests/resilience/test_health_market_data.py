"""The health page's data-freshness check: the latest bar against the exchange's last completed
session, counted on the exchange calendar as the home page's banner counts it."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from trading.health.probes import health_report
from trading.health.verdicts import MARKET_DATA, Status, market_data_check
from trading.market.calendar import last_completed_session, previous_session
from trading.market.domain.freshness import Staleness
from trading.market.selectors import stale_exchanges
from trading.models import DailyBar, Heartbeat

PRICE = Decimal("100")


def _bar(instrument, day: dt.date) -> None:
    DailyBar.objects.create(instrument=instrument, date=day, open=PRICE, high=PRICE, low=PRICE, close=PRICE, volume=1)


def _alive() -> None:
    for kind, name in ((Heartbeat.Kind.SCHEDULER, "beat"), (Heartbeat.Kind.WORKER, "celery@w")):
        Heartbeat.objects.update_or_create(kind=kind, name=name, defaults={"seen_at": timezone.now()})


def _market_row(page: str) -> str:
    found = re.search(r'<tr data-check="market_data">(.*?)</tr>', page, re.S)
    assert found, "no market_data row on the health page"
    return found.group(1)


def test_no_stale_exchange_is_ok_and_a_stale_one_degrades_with_its_words():
    assert market_data_check([]).status is Status.OK
    stale = [
        Staleness("NSE", dt.date(2025, 1, 2), dt.date(2025, 1, 6), 2),
        Staleness("BSE", dt.date(2025, 1, 3), dt.date(2025, 1, 6), 1),
    ]

    check = market_data_check(stale)

    assert (check.name, check.status, check.seen) == (MARKET_DATA, Status.DEGRADED, 2)
    assert check.detail == f"{stale[0].text}; {stale[1].text}"


def test_the_health_page_says_when_the_latest_bar_is_older_than_the_last_session(client, viewer, instrument):
    _alive()
    last = last_completed_session("NSE", timezone.now())
    _bar(instrument, previous_session("NSE", previous_session("NSE", last)))
    client.force_login(viewer)

    page = client.get(reverse("health"))

    row = _market_row(page.content.decode())
    assert page.status_code == 200
    assert "degraded" in row and "2 sessions old" in row and f"last session {last.isoformat()}" in row


def test_a_bar_of_the_last_session_is_fresh(client, viewer, instrument):
    _alive()
    _bar(instrument, last_completed_session("NSE", timezone.now()))
    client.force_login(viewer)

    row = _market_row(client.get(reverse("health")).content.decode())

    assert "ok" in row and "degraded" not in row


def test_the_anonymous_probe_and_the_strips_leave_freshness_out(instrument):
    """A load balancer polls often: the bars' freshness is the page's, not the probe's."""
    _alive()
    _bar(instrument, dt.date(2020, 1, 2))

    body = APIClient().get("/api/health/").json()

    assert MARKET_DATA not in body["checks"] and body["status"] == "ok"
    assert MARKET_DATA not in {check.name for check in health_report().checks}
    assert MARKET_DATA in {check.name for check in health_report(market_data=stale_exchanges).checks}
