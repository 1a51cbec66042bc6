"""Personas and market-data factories shared by the suite.

Personas: a viewer, an approver, an admin, and an outsider who should have no access.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from trading.access import ADMIN, APPROVER, VIEWER, ensure_desk_groups
from trading.models import DailyBar, Instrument

PASSWORD = "correct horse battery staple"


def require_or_skip(available: bool, what: str) -> None:
    """A missing service skips on a laptop and fails under REQUIRE_SERVICES=1 (CI)."""
    if available:
        return
    if settings.REQUIRE_SERVICES:
        pytest.fail(f"{what} is required (REQUIRE_SERVICES=1) but unavailable")
    pytest.skip(f"{what} is unavailable")


def _user(username: str, role: str | None):
    groups = ensure_desk_groups()
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    if role:
        user.groups.add(groups[role])
    if role == ADMIN:
        user.is_staff = user.is_superuser = True
        user.save()
    return user


@pytest.fixture
def viewer(db):
    return _user("vera", VIEWER)


@pytest.fixture
def approver(db):
    return _user("arjun", APPROVER)


@pytest.fixture
def desk_admin(db):
    return _user("asha", ADMIN)


@pytest.fixture
def outsider(db):
    return _user("olly", None)


def trading_days(start: dt.date, count: int) -> list[dt.date]:
    days, day = [], start
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day)
        day += dt.timedelta(days=1)
    return days


def make_bars(
    instrument: Instrument,
    count: int = 300,
    *,
    start: dt.date = dt.date(2024, 1, 1),
    seed: int = 1,
    first_close: float = 1000.0,
) -> list[DailyBar]:
    """A seeded random walk with realistic OHLC geometry, rounded to the tick."""
    rng = np.random.default_rng(seed)
    closes = first_close * np.exp(np.cumsum(rng.normal(0.0004, 0.015, count)))
    bars, previous = [], first_close
    tick = float(instrument.tick_size)

    def on_tick(value: float) -> Decimal:
        return Decimal(str(round(round(value / tick) * tick, 2)))

    for day, close in zip(trading_days(start, count), closes, strict=True):
        open_ = previous * (1 + rng.normal(0, 0.004))
        high = max(open_, close) * (1 + abs(rng.normal(0, 0.006)))
        low = min(open_, close) * (1 - abs(rng.normal(0, 0.006)))
        bars.append(
            DailyBar(
                instrument=instrument,
                date=day,
                open=on_tick(open_),
                high=on_tick(high),
                low=on_tick(low),
                close=on_tick(close),
                volume=int(rng.integers(100_000, 2_000_000)),
            )
        )
        previous = close
    return DailyBar.objects.bulk_create(bars)


@pytest.fixture
def instrument(db) -> Instrument:
    return Instrument.objects.create(
        symbol="RELIANCE",
        exchange="NSE",
        name="Reliance Industries",
        sector="Energy",
        tick_size=Decimal("0.05"),
        lot_size=1,
        currency="INR",
    )


@pytest.fixture
def instrument_with_bars(instrument) -> Instrument:
    make_bars(instrument, 320)
    return instrument


@pytest.fixture(autouse=True)
def _fresh_memory_index():
    """The in-process memory index outlives a test's database rows; start each test empty."""
    from agents.recording import memory_cache

    memory_cache.reset()
    yield
    memory_cache.reset()


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Each test starts with no API throttle history. User ids repeat from test to test (their rows
    are rolled back), so without this the requests of earlier tests would add up under one id to a
    429 in a later one. Only this worker's keys go: in Redis they carry its own key prefix."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    cache = caches["throttle"]
    if isinstance(cache, LocMemCache):
        cache.clear()
    else:
        client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]  # RedisCache's client
        stale = list(client.scan_iter(match=cache.make_key("throttle_*"), count=1000))
        if stale:
            client.delete(*stale)
    yield


def make_roomy(account):
    """Limits so a thesis passes every check whatever the random walk's volatility and whichever
    side the debate takes."""
    from trading.models import Account

    Account.objects.filter(pk=account.pk).update(
        max_notional_pct=Decimal("100"),
        exposure_cap_pct=Decimal("500"),
        max_instrument_pct=Decimal("100"),
        allow_short=True,
    )
    account.refresh_from_db()
    return account


@pytest.fixture
def roomy_account(db):
    from trading.book.accounts import default_account

    return make_roomy(default_account())


@pytest.fixture
def pending_thesis(instrument_with_bars):
    """A risk-approved thesis from a real offline run on the latest bar, waiting for a person."""
    from trading.book.accounts import default_account
    from trading.models import Thesis
    from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

    make_roomy(default_account())
    as_of = instrument_with_bars.bars.latest("date").date
    run = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
    pipeline_run_execute(run.pk)
    thesis = Thesis.objects.select_related("instrument", "run").get(run=run)
    assert thesis.risk_approved and thesis.status == Thesis.Status.PENDING, thesis.risk_checks
    return thesis
