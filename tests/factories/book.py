"""Accounts, runs, theses, orders and positions, written as rows without running a pipeline.

``position_on_path`` (and ``PositionFactory``, its factory_boy face) is the one to reach for when a
test needs positions that went somewhere: it writes the path's bars, a thesis decided on the first
session, its order filled at the next session's open, and then walks the path through the very
functions the paper broker's daily pass calls (fill price with slippage, NSE costs, exit by stop,
target or horizon, daily mark, realised profit), so its rows are the rows the broker would have
written for those bars. No risk limits are applied on the way: size the account for the book a
test builds (``AccountFactory(roomy=True)``), and the desk's readers then see a possible book.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from zoneinfo import ZoneInfo

import factory
from django.conf import settings
from django.db.models import F
from django.utils import timezone
from factory.django import DjangoModelFactory

from tests.factories.market import DEFAULT_START, HUNDRED, InstrumentFactory, Price, PricePath, as_path, bars_for
from trading.book.approvals import thesis_expiry
from trading.book.broker import cost_model, position_close
from trading.models import Account, Instrument, Order, PipelineRun, Position, PositionMark, Thesis
from vocabulary.costs import CostBreakdown, as_side, order_costs
from vocabulary.exits import check_exit, mark
from vocabulary.fills import entry_side, exit_side, fill_price
from vocabulary.ticks import round_to_tick

DIRECTIONS = ("LONG", "SHORT")


def desk_slippage_bps() -> Decimal:
    """The slippage the broker applies to every fill (``DESK_SLIPPAGE_BPS``)."""
    return Decimal(settings.BROKER["SLIPPAGE_BPS"])


def after_the_close(day: dt.date, minutes: int = 0) -> dt.datetime:
    """A moment on ``day`` after the exchange's close, on the desk's clock: when a run decides."""
    moment = dt.datetime.combine(day, dt.time(16, 0), tzinfo=ZoneInfo(settings.TIME_ZONE))
    return moment + dt.timedelta(minutes=minutes)


class AccountFactory(DjangoModelFactory):
    """A ₹10,00,000 paper account with the desk's default limits (2% daily loss cap, five positions,
    20% a position). ``roomy=True`` lifts the limits for books of many positions at once."""

    class Meta:
        model = Account
        django_get_or_create = ("name",)

    class Params:
        roomy = factory.Trait(
            max_positions=50,
            max_notional_pct=Decimal("100"),
            exposure_cap_pct=Decimal("500"),
            max_instrument_pct=Decimal("100"),
            allow_short=True,
        )

    name = factory.Sequence(lambda n: f"factory account {n}")
    currency = "INR"
    capital = Decimal("1000000.00")
    cash = factory.SelfAttribute("capital")
    daily_loss_cap = factory.LazyAttribute(lambda o: (o.capital * Decimal("0.02")).quantize(Decimal("0.01")))


def _latest_bar_on_or_before(instrument: Instrument, day: dt.date | None):
    bars = instrument.bars.all() if instrument.pk else None
    if bars is None:
        return None
    if day is not None:
        bars = bars.filter(date__lte=day)
    return bars.order_by("-date").first()


class PipelineRunFactory(DjangoModelFactory):
    """A finished offline run on the instrument's latest session (or ``DEFAULT_START`` without bars)."""

    class Meta:
        model = PipelineRun

    instrument = factory.SubFactory(InstrumentFactory)
    as_of = factory.LazyAttribute(
        lambda o: bar.date if (bar := _latest_bar_on_or_before(o.instrument, None)) else DEFAULT_START
    )
    provider = "offline"
    status = PipelineRun.Status.COMPLETED
    attempts = 1
    started_at = factory.LazyFunction(timezone.now)
    finished_at = factory.LazyFunction(timezone.now)
    enqueued_at = factory.LazyFunction(timezone.now)


def _side(direction: str) -> int:
    """+1 when profit lies above the entry (LONG), -1 below (SHORT)."""
    return 1 if direction == "LONG" else -1


def _default_stop(o) -> Decimal:
    """``risk_pct`` % from the entry on the losing side, on the tick grid, never on the entry itself."""
    tick, side = o.instrument.tick_size, _side(o.direction)
    stop = round_to_tick(o.entry * (1 - side * Decimal(o.risk_pct) / HUNDRED), tick)
    return stop if stop != o.entry and stop > 0 else o.entry - side * tick


def _default_target(o) -> Decimal:
    """``reward_r`` times the risk (entry to stop) beyond the entry, on the tick grid."""
    side = _side(o.direction)
    return round_to_tick(
        o.entry + side * Decimal(o.reward_r) * abs(o.entry - o.stop), o.instrument.tick_size
    )


def _payload(o) -> dict:
    """The TradeThesis as the validator would have stored it (agents.roles.TradeThesis)."""
    return {
        "symbol": o.instrument.symbol,
        "direction": o.direction,
        "conviction": float(o.conviction),
        "entry": float(o.entry),
        "target": float(o.target),
        "stop": float(o.stop),
        "horizon_sessions": o.horizon_sessions,
        "rationale": f"A factory-made {o.direction.lower()} idea in {o.instrument.symbol}.",
        "invalidation_conditions": [f"a close beyond the stop at {o.stop}"],
        "key_risks": ["a gap through the stop"],
        "expected_horizon": f"{o.horizon_sessions} sessions",
        "levels_source": "atr-anchor",
    }


class ThesisFactory(DjangoModelFactory):
    """A risk-approved thesis pending a person: entry at the run's close (100 without bars), the stop
    ``risk_pct`` % away (5) and the target ``reward_r`` R beyond (2), 100 shares, ten sessions.
    ``approved=True`` makes it a decided, approved one; ``rejected=True`` a rejected one."""

    class Meta:
        model = Thesis

    class Params:
        risk_pct = Decimal("5")
        reward_r = Decimal("2")
        approved = factory.Trait(
            status=Thesis.Status.APPROVED,
            decided_at=factory.LazyFunction(timezone.now),
            decision_comment="approved by a factory",
        )
        rejected = factory.Trait(
            status=Thesis.Status.REJECTED,
            decided_at=factory.LazyFunction(timezone.now),
            decision_comment="rejected by a factory",
        )

    account = factory.SubFactory(AccountFactory)
    instrument = factory.SubFactory(InstrumentFactory)
    run = factory.SubFactory(PipelineRunFactory, instrument=factory.SelfAttribute("..instrument"))
    direction = "LONG"
    conviction = Decimal("0.6500")
    entry = factory.LazyAttribute(
        lambda o: bar.close if (bar := _latest_bar_on_or_before(o.instrument, o.run.as_of)) else Decimal("100.00")
    )
    stop = factory.LazyAttribute(_default_stop)
    target = factory.LazyAttribute(_default_target)
    horizon_sessions = 10
    quantity = 100
    risk_amount = factory.LazyAttribute(lambda o: (abs(o.entry - o.stop) * o.quantity).quantize(Decimal("0.01")))
    notional = factory.LazyAttribute(lambda o: (o.entry * o.quantity).quantize(Decimal("0.01")))
    risk_approved = True
    risk_checks = factory.LazyFunction(list)
    payload = factory.LazyAttribute(_payload)
    warnings = factory.LazyFunction(list)
    status = Thesis.Status.PENDING
    expires_at = factory.LazyFunction(lambda: thesis_expiry(timezone.now()))


class OrderFactory(DjangoModelFactory):
    """A working order for an approved thesis, as ``order_place`` writes it (next-open fill, the
    desk's slippage, placed on the thesis's session). ``cancelled=True`` for one the broker refused."""

    class Meta:
        model = Order

    class Params:
        cancelled = factory.Trait(status=Order.Status.CANCELLED, note="cancelled by a factory")

    thesis = factory.SubFactory(ThesisFactory, approved=True)
    account = factory.SelfAttribute("thesis.account")
    instrument = factory.SelfAttribute("thesis.instrument")
    side = factory.LazyAttribute(lambda o: entry_side(o.thesis.direction))
    quantity = factory.SelfAttribute("thesis.quantity")
    fill_policy = "next_open"
    slippage_bps = factory.LazyFunction(desk_slippage_bps)
    placed_on = factory.SelfAttribute("thesis.run.as_of")
    status = Order.Status.WORKING


def position_on_path(
    path: PricePath | Sequence[Price],
    *,
    account: Account | None = None,
    instrument: Instrument | None = None,
    direction: str = "LONG",
    quantity: int = 100,
    stop: Price | None = None,
    target: Price | None = None,
    risk_pct: Price = "5",
    reward_r: Price = "2",
    horizon_sessions: int | None = None,
    opens: Mapping[int, Price] | None = None,
    start: dt.date | None = None,
    wick_pct: Price = "0.5",
    seed: int = 0,
    close_by_hand: str | None = None,
    conviction: Price = "0.65",
) -> Position:
    """A position that lived through ``path``, with every row the broker would have written.

    ``path[0]`` is the session the thesis is decided on (its close is the entry; the stop and
    target default to ``risk_pct`` % and ``reward_r`` R from it); the order fills at the next
    session's open, moved by the desk's slippage, and pays NSE costs. Each later session is then
    the daily pass: the fill session is only marked, and from the next one the bar's open, high and
    low are checked against the stop and target (a gap fills at the open) and ``horizon_sessions``
    closes it at a close; an exit fills with slippage and pays its costs, a day without one writes
    a ``PositionMark``. The account's cash moves as the broker moves it.

    Without a level hit the position is still open at the path's end (``horizon_sessions``
    defaults to longer than the path), unless ``close_by_hand`` gives a reason: then a person
    closes it at the last close, as ``position_close_by_hand`` does. A path that gaps through a
    level before the fill raises ``ValueError``: the broker would have cancelled the order.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be LONG or SHORT, got {direction!r}")
    price_path = as_path(path, opens)
    if len(price_path) < 2:
        raise ValueError("a path needs the decision session and at least one session to fill on")
    instrument = instrument or InstrumentFactory()
    bars = bars_for(instrument, price_path, start=start, wick_pct=wick_pct, seed=seed)
    tick = instrument.tick_size
    levels = {
        name: round_to_tick(Decimal(str(value)), tick)
        for name, value in (("stop", stop), ("target", target))
        if value is not None
    }
    order = _decided_order(
        bars[0],
        account=account or AccountFactory(roomy=True),
        direction=direction,
        conviction=Decimal(str(conviction)),
        quantity=quantity,
        horizon_sessions=horizon_sessions or len(price_path),
        risk_pct=Decimal(str(risk_pct)),
        reward_r=Decimal(str(reward_r)),
        **levels,
    )
    position = _filled(order, bars[1])
    position = _daily_passes(position, bars[1:])
    if close_by_hand is None or position.status == Position.Status.CLOSED:
        return position
    if not close_by_hand.strip():
        raise ValueError("a manual close needs a reason, as the desk asks for one")
    last = bars[-1]
    return _close(position, reference=last.close, on=last.date, reason="manual", comment=close_by_hand.strip())


def _decided_order(decision, *, account: Account, **thesis_fields) -> Order:
    """The thesis decided after the close of ``decision`` (its close is the entry), approved ten
    minutes later, and the working order that approval places."""
    thesis = ThesisFactory(
        account=account,
        instrument=decision.instrument,
        run__as_of=decision.date,
        entry=decision.close,
        approved=True,
        **thesis_fields,
    )
    decided = after_the_close(decision.date)
    Thesis.objects.filter(pk=thesis.pk).update(
        created_at=decided,
        decided_at=decided + dt.timedelta(minutes=10),
        expires_at=thesis_expiry(decided),
    )
    order = OrderFactory(thesis=thesis, placed_on=decision.date)
    Order.objects.filter(pk=order.pk).update(placed_at=decided + dt.timedelta(minutes=10))
    return order


def _filled(order: Order, fill_bar) -> Position:
    """As ``order_try_fill``: the fill bar's open moved against the trader onto the tick, the NSE
    costs, the position, and the cash it takes. Refused where the broker would cancel instead."""
    thesis = order.thesis
    price = fill_price(
        side=order.side, reference=fill_bar.open, slippage_bps=order.slippage_bps, tick=order.instrument.tick_size
    )
    lower, upper = (thesis.stop, thesis.target) if thesis.direction == "LONG" else (thesis.target, thesis.stop)
    if not lower < price < upper:
        raise ValueError(
            f"the fill at {price} on {fill_bar.date} is beyond the stop {thesis.stop} or the target "
            f"{thesis.target}: the broker would cancel this order, not fill it"
        )
    costs = _order_costs(order.side, order.quantity, price)
    Order.objects.filter(pk=order.pk).update(
        status=Order.Status.FILLED,
        fill_price=price,
        filled_on=fill_bar.date,
        costs=costs.to_dict(),
        costs_total=costs.total,
    )
    Account.objects.filter(pk=order.account_id).update(cash=F("cash") - price * order.quantity - costs.total)
    return Position.objects.create(
        account=order.account,
        order=order,
        thesis=thesis,
        instrument=order.instrument,
        direction=thesis.direction,
        quantity=order.quantity,
        entry_price=price,
        entry_costs=costs.total,
        opened_on=fill_bar.date,
        stop=thesis.stop,
        target=thesis.target,
        horizon_sessions=thesis.horizon_sessions,
        last_mark=price,
        is_replay=False,
    )


def _daily_passes(position: Position, held: Sequence) -> Position:
    """As ``positions_mark`` session by session from the fill: the fill session is only marked,
    from the next one the bar is checked for an exit first; a session without one writes its mark."""
    marks: list[PositionMark] = []
    for sessions_held, bar in enumerate(held):
        signal = None
        if sessions_held:  # the levels watch from the session after the fill
            signal = check_exit(
                direction=position.direction,
                stop=position.stop,
                target=position.target,
                bar_open=bar.open,
                bar_high=bar.high,
                bar_low=bar.low,
                bar_close=bar.close,
                sessions_held=sessions_held,
                horizon_sessions=position.horizon_sessions,
            )
        if signal is not None:
            PositionMark.objects.bulk_create(marks)
            return _close(position, reference=signal.price, on=bar.date, reason=signal.reason)
        pnl = mark(
            direction=position.direction,
            quantity=position.quantity,
            entry_price=position.entry_price,
            mark_price=bar.close,
        )
        marks.append(PositionMark(position=position, date=bar.date, close=bar.close, unrealised_pnl=pnl))
    PositionMark.objects.bulk_create(marks)
    if marks:
        Position.objects.filter(pk=position.pk).update(
            last_mark=marks[-1].close, unrealised_pnl=marks[-1].unrealised_pnl
        )
    position.refresh_from_db()
    return position


def _order_costs(side: str, quantity: int, price: Decimal) -> CostBreakdown:
    """The broker's cost breakdown under the desk's configured cost model."""
    return order_costs(as_side(side), quantity, price, cost_model())


def _close(position: Position, *, reference: Decimal, on: dt.date, reason: str, comment: str = "") -> Position:
    """Through the broker's own ``position_close``: the exit fills ``reference`` with the desk's
    slippage, pays its costs, books the realised profit and returns the money to the account. No
    review is queued (``on_close`` is a no-op): the factories write no reviews."""
    price = fill_price(
        side=exit_side(position.direction),
        reference=reference,
        slippage_bps=desk_slippage_bps(),
        tick=position.instrument.tick_size,
    )
    return position_close(
        position=position, price=price, on=on, reason=reason, comment=comment, on_close=lambda _closed: None
    )


class PositionFactory(factory.Factory):
    """``position_on_path`` through factory_boy: each position gets its own instrument and, unless
    one is given, its own roomy account; ``path`` defaults to eleven sessions drifting up 0.5 % a
    session (still open at the end). ``PositionFactory.create_batch(12, account=account, path=...)``."""

    class Meta:
        model = Position

    account = factory.SubFactory(AccountFactory, roomy=True)
    instrument = factory.SubFactory(InstrumentFactory)
    path = factory.LazyFunction(lambda: [Decimal("100") * Decimal("1.005") ** i for i in range(11)])
    direction = "LONG"
    quantity = 100

    @classmethod
    def _build(cls, model_class, *args, **kwargs):
        raise TypeError("a position on a path is rows in the database: use PositionFactory() or .create()")

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return position_on_path(kwargs.pop("path"), **kwargs)
