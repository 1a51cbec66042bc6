"""Instruments and daily bars of a chosen shape.

A shape is a ``PricePath``: the closes session by session, and the opens that are not simply the
previous close (a gap). ``bars_for`` turns a path into bars on consecutive trading sessions with
realistic geometry around it: each open is the previous close unless the path gaps, the high and
low reach a little beyond the open and the close (at most ``wick_pct`` per cent, seeded, so the same
call gives the same bars), everything on the instrument's tick grid, and a volume each day.

The wick bound is the contract a test can rely on: a level further than ``wick_pct`` % (plus one
tick) beyond both a bar's open and its close is never touched by that bar's range.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from trading.models import DailyBar, Instrument
from vocabulary.ticks import round_to_tick

# A Monday, far enough before today for a year of sessions and more.
DEFAULT_START = dt.date(2025, 1, 6)
HUNDRED = Decimal(100)

Price = Decimal | str | int | float


def as_price(value: Price) -> Decimal:
    """A Decimal from what a test writes: ``"101.5"``, ``101.5`` (through its shortest repr), ``101``."""
    if isinstance(value, bool):
        raise TypeError(f"not a price: {value!r}")
    price = value if isinstance(value, Decimal) else Decimal(str(value))
    if not price.is_finite() or price <= 0:
        raise ValueError(f"a price must be positive, got {value!r}")
    return price


def is_session(day: dt.date) -> bool:
    """A trading session: Monday to Friday (the desk takes any day with a bar as a session; the
    factories keep to weekdays, as the exchange does apart from its holidays)."""
    return day.weekday() < 5


def sessions(start: dt.date, count: int) -> list[dt.date]:
    """``count`` consecutive sessions from ``start`` (or the first session after it, on a weekend)."""
    days, day = [], start
    while len(days) < count:
        if is_session(day):
            days.append(day)
        day += dt.timedelta(days=1)
    return days


def next_session(day: dt.date, n: int = 1) -> dt.date:
    """The ``n``-th session after ``day``."""
    while n:
        day += dt.timedelta(days=1)
        if is_session(day):
            n -= 1
    return day


@dataclass(frozen=True)
class PricePath:
    """Closes session by session; ``opens`` maps a session's index to its open where that is not
    the previous close (a gap). The first session opens at its own close unless ``opens`` says."""

    closes: tuple[Decimal, ...]
    opens: Mapping[int, Decimal] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "closes", tuple(as_price(close) for close in self.closes))
        object.__setattr__(self, "opens", {int(i): as_price(price) for i, price in self.opens.items()})
        if not self.closes:
            raise ValueError("a path needs at least one close")
        outside = sorted(i for i in self.opens if not 0 <= i < len(self.closes))
        if outside:
            raise ValueError(f"opens {outside} lie outside the path's {len(self.closes)} sessions")

    def __len__(self) -> int:
        return len(self.closes)

    def __add__(self, other: PricePath) -> PricePath:
        """This path, then ``other`` (its opens re-indexed after this one's sessions)."""
        shift = len(self.closes)
        return PricePath(
            self.closes + other.closes, {**self.opens, **{shift + i: price for i, price in other.opens.items()}}
        )

    def open_of(self, index: int, previous_close: Decimal | None) -> Decimal:
        if index in self.opens:
            return self.opens[index]
        if index == 0:
            return previous_close if previous_close is not None else self.closes[0]
        return self.closes[index - 1]


def as_path(closes: PricePath | Sequence[Price], opens: Mapping[int, Price] | None = None) -> PricePath:
    if isinstance(closes, PricePath):
        return PricePath(closes.closes, {**closes.opens, **(opens or {})}) if opens else closes
    return PricePath(tuple(closes), dict(opens or {}))


def _compound(first: Decimal, pct: Decimal, steps: int) -> list[Decimal]:
    factor = 1 + pct / HUNDRED
    closes, price = [], first
    for _ in range(steps):
        closes.append(price)
        price = price * factor
    return closes


def trending(first: Price, sessions: int, pct_per_session: Price) -> PricePath:
    """Closes compounding ``pct_per_session`` % a session from ``first``: up when positive, down when negative."""
    return PricePath(tuple(_compound(as_price(first), Decimal(str(pct_per_session)), sessions)))


def flat(level: Price, sessions: int) -> PricePath:
    """The same close every session."""
    return PricePath((as_price(level),) * sessions)


def gapped(first: Price, *, before: int, gap_pct: Price, after: int, drift_pct: Price = 0) -> PricePath:
    """``before`` sessions drifting ``drift_pct`` % a session from ``first``, then a session that opens
    ``gap_pct`` % away from the last close (down when negative), then ``after`` sessions (the gap's
    own included) drifting on from that open."""
    if before < 1 or after < 1:
        raise ValueError("a gap needs a session before it and the gap session itself")
    drift = Decimal(str(drift_pct))
    ahead = _compound(as_price(first), drift, before)
    gap_open = ahead[-1] * (1 + Decimal(str(gap_pct)) / HUNDRED)
    behind = _compound(gap_open * (1 + drift / HUNDRED), drift, after)
    return PricePath(tuple(ahead + behind), {before: gap_open})


def wandering(
    first: Price, sessions: int, *, seed: int = 1, drift_pct: Price = "0.04", volatility_pct: Price = "1.5"
) -> PricePath:
    """A seeded random walk: ``drift_pct`` % a session on average, ``volatility_pct`` % a session of noise."""
    rng = random.Random(seed)
    drift, volatility = float(drift_pct) / 100, float(volatility_pct) / 100
    closes, price = [], float(as_price(first))
    for _ in range(sessions):
        closes.append(Decimal(str(round(price, 4))))
        price *= 1 + rng.gauss(drift, volatility)
    return PricePath(tuple(closes))


def bars_for(
    instrument: Instrument,
    closes: PricePath | Sequence[Price],
    *,
    opens: Mapping[int, Price] | None = None,
    start: dt.date | None = None,
    wick_pct: Price = "0.5",
    seed: int = 0,
    volume: int | None = None,
) -> list[DailyBar]:
    """Write the path's bars for ``instrument`` on consecutive sessions from ``start`` (by default the
    session after its latest bar, or ``DEFAULT_START`` for an instrument without bars) and return
    them in date order. Prices are rounded to the instrument's tick (closes and opens to the nearest,
    highs up, lows down). Refuses a bar dated after today, as the desk's imports do."""
    path = as_path(closes, opens)
    tick = instrument.tick_size
    latest = instrument.bars.order_by("-date").first()
    if start is None:
        start = next_session(latest.date) if latest else DEFAULT_START
    days = sessions(start, len(path))
    today = timezone.localdate()
    if days[-1] > today:
        raise ValueError(f"{len(path)} sessions from {start} end on {days[-1]}, after today ({today})")
    wick = float(Decimal(str(wick_pct)))
    if not 0 <= wick < 100:
        raise ValueError(f"wick_pct must be a percentage from 0 to under 100, got {wick_pct!r}")
    rng = random.Random(seed)
    previous = latest.close if latest and latest.date < days[0] else None
    bars = []
    for index, day in enumerate(days):
        close = _on_tick(path.closes[index], tick)
        open_ = _on_tick(path.open_of(index, previous), tick)
        upper, lower = Decimal(str(round(rng.uniform(0, wick), 4))), Decimal(str(round(rng.uniform(0, wick), 4)))
        high = round_to_tick(max(open_, close) * (1 + upper / HUNDRED), tick, mode="up")
        # Never below a tick: a price must stay positive, and open and close are at least a tick.
        low = max(round_to_tick(min(open_, close) * (1 - lower / HUNDRED), tick, mode="down"), tick)
        bars.append(
            DailyBar(
                instrument=instrument,
                date=day,
                open=open_,
                high=high,
                low=low,
                close=close,
                volume=volume if volume is not None else rng.randint(100_000, 2_000_000),
            )
        )
        previous = close
    DailyBar.objects.bulk_create(bars)
    return list(instrument.bars.filter(date__gte=days[0], date__lte=days[-1]).order_by("date"))


def _on_tick(price: Decimal, tick: Decimal) -> Decimal:
    rounded = round_to_tick(price, tick)
    if rounded <= 0:
        raise ValueError(f"{price} rounds to {rounded} on a tick of {tick}: prices must stay above a tick")
    return rounded


class InstrumentFactory(DjangoModelFactory):
    """An NSE cash instrument (tick 0.05, lot 1, INR) with a fresh symbol. ``bars=`` a path (or a
    list of closes) writes its bars too; ``bars__start``, ``bars__seed``, ``bars__wick_pct`` pass on."""

    class Meta:
        model = Instrument
        django_get_or_create = ("exchange", "symbol")
        skip_postgeneration_save = True

    symbol = factory.Sequence(lambda n: f"FAC{n:04d}")
    exchange = "NSE"
    name = factory.LazyAttribute(lambda o: f"{o.symbol.title()} Industries")
    sector = "Industrials"
    tick_size = Decimal("0.05")
    lot_size = 1
    currency = "INR"

    @factory.post_generation
    def bars(obj: Instrument, create: bool, extracted, **kwargs) -> None:
        if extracted is not None:
            if not create:
                raise ValueError("bars need a saved instrument: use create(), not build()")
            bars_for(obj, extracted, **kwargs)
