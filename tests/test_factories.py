"""The factories write the rows the desk itself would write: bars its imports accept, theses its
risk engine passes, and positions whose fill, marks, exit and realised profit are exactly what the
paper broker's daily pass makes of the same bars, which the book's own readers then agree with.

Every comparison is against the real code (the broker's pass, the CSV validator, the risk engine,
the book report, the review's facts): no mocks. The desk's modules are imported inside the tests,
since some of them are moving between packages.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from itertools import pairwise

import pytest
from django.utils import timezone

from tests.factories import (
    DEFAULT_START,
    AccountFactory,
    InstrumentFactory,
    OrderFactory,
    PositionFactory,
    PricePath,
    ThesisFactory,
    bars_for,
    flat,
    gapped,
    next_session,
    position_on_path,
    sessions,
    trending,
    wandering,
)
from trading.models import Account, DailyBar, Order, Position, PositionMark, Thesis

pytestmark = pytest.mark.django_db

POSITION_FIELDS = (
    "direction",
    "quantity",
    "entry_price",
    "entry_costs",
    "opened_on",
    "stop",
    "target",
    "horizon_sessions",
    "status",
    "last_mark",
    "unrealised_pnl",
    "exit_price",
    "exit_costs",
    "closed_on",
    "exit_reason",
    "exit_comment",
    "realised_pnl",
)
ORDER_FIELDS = ("side", "quantity", "fill_policy", "slippage_bps", "status", "placed_on", "fill_price", "filled_on")


def _on_tick(value: Decimal, tick: Decimal) -> bool:
    return value % tick == 0


# --- bars ---------------------------------------------------------------------------------------


def test_bars_follow_the_path_on_consecutive_sessions_with_a_sound_range():
    instrument = InstrumentFactory()
    path = wandering(250, 120, seed=7)

    bars = bars_for(instrument, path, seed=3)

    tick = instrument.tick_size
    assert len(bars) == 120 == instrument.bars.count()
    assert [bar.date for bar in bars] == sessions(DEFAULT_START, 120)
    assert all(bar.date.weekday() < 5 for bar in bars)
    assert all(abs(bar.close - close) <= tick / 2 for bar, close in zip(bars, path.closes, strict=True))
    for previous, bar in pairwise(bars):
        assert bar.open == previous.close  # no gap asked for: each session opens where the last closed
    for bar in bars:
        assert 0 < bar.low <= min(bar.open, bar.close) <= max(bar.open, bar.close) <= bar.high
        assert all(_on_tick(price, tick) for price in (bar.open, bar.high, bar.low, bar.close))
        assert 100_000 <= bar.volume <= 2_000_000


def test_the_bars_pass_the_desks_own_import_checks():
    from trading.market.domain.csv_rows import BarRow, BarValidator
    from vocabulary.dates import DateWindow

    instrument = InstrumentFactory()
    bars = bars_for(instrument, wandering(80, 200, seed=11) + gapped(90, before=3, gap_pct=-7, after=20))
    validator = BarValidator(DateWindow(today=timezone.localdate(), zone="Asia/Kolkata"))

    checked = [
        validator.check(
            line,
            {
                "symbol": instrument.symbol,
                "date": bar.date.isoformat(),
                **{name: str(getattr(bar, name)) for name in ("open", "high", "low", "close", "volume")},
            },
        )
        for line, bar in enumerate(bars, start=2)
    ]

    assert all(isinstance(row, BarRow) for row in checked), [row for row in checked if not isinstance(row, BarRow)]


def test_the_shapes_go_where_they_say():
    up, down, level = trending(100, 20, "1.5"), trending(100, 20, "-1.5"), flat("250.5", 10)
    assert all(b > a for a, b in pairwise(up.closes))
    assert all(b < a for a, b in pairwise(down.closes))
    assert set(level.closes) == {Decimal("250.5")}

    instrument = InstrumentFactory()
    bars = bars_for(instrument, gapped(100, before=5, gap_pct=-8, after=4))

    gap = bars[5]
    assert gap.open == Decimal("92.00")  # 8% under the last close, which is the open of the gap
    assert bars[4].close == Decimal("100.00") and gap.high < bars[4].low


def test_a_level_beyond_the_wick_is_never_touched():
    instrument = InstrumentFactory()
    bars = bars_for(instrument, wandering(500, 150, seed=5), wick_pct="0.8", seed=9)

    tick = instrument.tick_size
    for bar in bars:
        assert bar.high <= max(bar.open, bar.close) * Decimal("1.008") + tick
        assert bar.low >= min(bar.open, bar.close) * Decimal("0.992") - tick


def test_bars_continue_after_the_latest_bar_and_never_reach_past_today():
    instrument = InstrumentFactory(bars=flat(100, 5))
    more = bars_for(instrument, trending(100, 3, 1))

    assert more[0].date == next_session(sessions(DEFAULT_START, 5)[-1])
    assert more[0].open == Decimal("100.00")  # opens at the previous session's close
    with pytest.raises(ValueError, match="after today"):
        bars_for(InstrumentFactory(), flat(100, 3), start=timezone.localdate())


def test_a_path_adds_up_and_keeps_its_gaps():
    joined = flat(100, 3) + PricePath((Decimal("90"), Decimal("91")), {0: Decimal("89")})

    assert joined.closes == (100, 100, 100, 90, 91)
    assert joined.opens == {3: Decimal("89")}


# --- theses and orders ----------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["LONG", "SHORT"])
def test_a_thesis_has_the_desks_geometry_and_passes_its_risk_engine(direction):
    from agents.roles import TradeThesis
    from trading.book.accounts import thesis_book_check

    instrument = InstrumentFactory(bars=wandering(1200, 40, seed=2))
    thesis = ThesisFactory(instrument=instrument, direction=direction, quantity=50)

    latest = instrument.bars.latest("date")
    assert thesis.run.as_of == latest.date and thesis.entry == latest.close
    lower, upper = (thesis.stop, thesis.target) if direction == "LONG" else (thesis.target, thesis.stop)
    assert lower < thesis.entry < upper
    assert abs(abs(thesis.target - thesis.entry) - 2 * abs(thesis.entry - thesis.stop)) <= instrument.tick_size
    assert all(_on_tick(price, instrument.tick_size) for price in (thesis.entry, thesis.stop, thesis.target))
    assert thesis.risk_amount == abs(thesis.entry - thesis.stop) * 50 and thesis.notional == thesis.entry * 50
    assert thesis.status == Thesis.Status.PENDING and thesis.expires_at > timezone.now()
    TradeThesis.model_validate(thesis.payload)  # what the validator stores

    account = thesis.account
    Account.objects.filter(pk=account.pk).update(allow_short=True)
    account.refresh_from_db()
    decision = thesis_book_check(thesis, account, entry=thesis.entry, today=thesis.run.as_of)
    assert decision.approved, decision.rejections


def test_an_order_is_the_order_the_broker_would_place(settings):
    from trading.book.broker import order_place

    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    made = OrderFactory()
    placed = order_place(thesis=ThesisFactory(approved=True), account=AccountFactory())

    for name in ORDER_FIELDS:
        if name != "placed_on":
            assert getattr(made, name) == getattr(placed, name), name
    assert made.placed_on == made.thesis.run.as_of
    assert made.account == made.thesis.account and made.thesis.status == Thesis.Status.APPROVED


# --- positions against the broker -----------------------------------------------------------------

SCENARIOS = {
    # name: (path, direction, horizon, the exit the broker takes)
    "long reaches its target": (trending(100, 30, "1"), "LONG", None, "target"),
    "long is stopped": (trending(100, 30, "-1"), "LONG", None, "stop"),
    "long gaps through its stop": (gapped(100, before=4, gap_pct=-12, after=5), "LONG", None, "stop"),
    "long gaps over its target": (gapped(100, before=4, gap_pct=15, after=5), "LONG", None, "target"),
    "long runs out of time": (flat(100, 12), "LONG", 6, "horizon"),
    "long still open": (trending(100, 8, "0.3"), "LONG", None, ""),
    "short reaches its target": (trending(100, 30, "-1"), "SHORT", None, "target"),
    "short is stopped": (trending(100, 30, "1"), "SHORT", None, "stop"),
    "short still open": (wandering(100, 9, seed=4, volatility_pct="0.5"), "SHORT", None, ""),
}


def _broker_position(path, *, direction: str, like: Position) -> Position:
    """The same path through the real broker: its bars on another instrument, a thesis with the
    same levels, its order, and the daily pass run session by session."""
    from trading.book.broker import positions_mark

    account = AccountFactory(roomy=True)
    bars = bars_for(InstrumentFactory(), path)
    thesis = ThesisFactory(
        account=account,
        instrument=bars[0].instrument,
        run__as_of=bars[0].date,
        entry=bars[0].close,
        direction=direction,
        stop=like.stop,
        target=like.target,
        horizon_sessions=like.horizon_sessions,
        quantity=like.quantity,
        approved=True,
    )
    OrderFactory(thesis=thesis)
    for bar in bars[1:]:
        positions_mark(as_of=bar.date, account=account)
    return Position.objects.get(thesis=thesis)


def _marks(position: Position) -> list[tuple]:
    return list(PositionMark.objects.filter(position=position).values_list("date", "close", "unrealised_pnl"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_position_on_a_path_is_what_the_brokers_daily_pass_makes_of_it(scenario):
    path, direction, horizon, exit_reason = SCENARIOS[scenario]

    made = position_on_path(path, direction=direction, horizon_sessions=horizon)
    broker = _broker_position(path, direction=direction, like=made)

    assert made.exit_reason == exit_reason
    assert made.status == (Position.Status.CLOSED if exit_reason else Position.Status.OPEN)
    for name in POSITION_FIELDS:
        assert getattr(made, name) == getattr(broker, name), name
    for name in (*ORDER_FIELDS, "costs", "costs_total"):
        assert getattr(made.order, name) == getattr(broker.order, name), name
    assert _marks(made) == _marks(broker)
    made.account.refresh_from_db()
    broker.account.refresh_from_db()
    assert made.account.cash == broker.account.cash


def test_a_gap_through_the_stop_before_the_fill_is_refused_as_the_broker_cancels_it():
    from trading.book.broker import positions_mark

    path = gapped(100, before=1, gap_pct=-10, after=3)
    with pytest.raises(ValueError, match="would cancel"):
        position_on_path(path)

    bars = bars_for(InstrumentFactory(), path)
    order = OrderFactory(thesis__instrument=bars[0].instrument, thesis__run__as_of=bars[0].date)
    positions_mark(as_of=bars[1].date, account=order.account)
    order.refresh_from_db()
    assert order.status == Order.Status.CANCELLED


def test_a_close_by_hand_is_the_desks_close_by_hand(approver):
    from trading.book.broker import position_close_by_hand

    path = wandering(100, 7, seed=8, volatility_pct="0.4")
    made = position_on_path(path, close_by_hand="earnings tomorrow")
    broker = _broker_position(path, direction="LONG", like=made)
    broker = position_close_by_hand(position=broker, user=approver, comment="earnings tomorrow")

    assert made.exit_reason == "manual" and made.exit_comment == "earnings tomorrow"
    for name in POSITION_FIELDS:
        assert getattr(made, name) == getattr(broker, name), name
    assert _marks(made) == _marks(broker)


# --- the book's readers -------------------------------------------------------------------------


def test_the_books_readers_agree_with_the_realised_profit():
    from reviews.domain.outcomes import classify_outcome
    from reviews.services import review_facts
    from trading.book.selectors import equity_curve
    from trading.management.commands.book_report import _cash_flows

    for path, direction in [(trending(100, 30, "1"), "LONG"), (trending(250, 30, "-1"), "LONG")]:
        position = position_on_path(path, direction=direction)
        account = Account.objects.get(pk=position.account_id)

        assert position.status == Position.Status.CLOSED
        # What the book report replays from fills and closes is the realised profit, to the paisa.
        assert sum(_cash_flows(account).values()) == position.realised_pnl == account.cash - account.capital
        # The equity curve ends on the close at capital plus the realised profit.
        assert equity_curve(account)[-1] == (
            position.closed_on.isoformat(),
            float(account.capital + position.realised_pnl),
        )
        facts = review_facts(position)
        assert facts.realised_pnl == position.realised_pnl
        assert facts.outcome == classify_outcome(
            position.realised_pnl, notional=position.entry_price * position.quantity
        )


def test_an_open_positions_marks_are_what_the_portfolio_reads():
    from trading.book.accounts import account_portfolio
    from trading.book.selectors import equity_curve

    position = position_on_path(trending(100, 10, "0.5"))
    account = Account.objects.get(pk=position.account_id)
    marks = list(position.marks.order_by("date"))

    assert [mark.date for mark in marks] == [bar.date for bar in position.instrument.bars.order_by("date")[1:]]
    assert position.last_mark == marks[-1].close and position.unrealised_pnl == marks[-1].unrealised_pnl
    assert equity_curve(account) == [
        (mark.date.isoformat(), float(account.capital + mark.unrealised_pnl)) for mark in marks
    ]
    book = account_portfolio(account)
    assert book.open_positions == 1 and book.gross_exposure == position.last_mark * position.quantity
    assert book.available_cash == account.cash == account.capital - position.notional - position.entry_costs


def test_a_dozen_positions_in_one_account_keep_within_its_limits():
    from trading.management.commands.book_report import book_figures

    account = AccountFactory()  # the desk's default limits: five positions, 20% each, 100% exposure
    shapes = [trending(100, 14, "1.2"), trending(100, 14, "-1.2"), flat(100, 14), wandering(100, 14, seed=3)]
    # One every four sessions, each closed within ten (by a level or the horizon), the last two
    # still open: at most three at once.
    positions = [
        position_on_path(
            shapes[i % len(shapes)] if i < 10 else trending(100, 6, "0.5"),
            account=account,
            start=sessions(DEFAULT_START, 4 * i + 1)[-1],
            quantity=200,
            horizon_sessions=10,
        )
        for i in range(12)
    ]

    account.refresh_from_db()
    figures = book_figures(account)
    assert figures["positions"] == 12 == Position.objects.filter(account=account).count()
    assert figures["max_open_positions"][0] <= account.max_positions
    assert figures["max_gross_exposure_pct"][0] <= account.exposure_cap_pct
    assert figures["min_cash"][0] >= 0
    assert figures["days_with_two_ideas_in_one_instrument"] == []
    assert len({position.instrument_id for position in positions}) == 12
    assert [position.status for position in positions] == [Position.Status.CLOSED] * 10 + [Position.Status.OPEN] * 2
    assert all(position.notional <= account.capital * account.max_notional_pct / 100 for position in positions)
    # The cash the factory moved is the cash the broker's bookings add up to.
    still_open = [position for position in positions if position.status == Position.Status.OPEN]
    realised = sum(position.realised_pnl for position in positions if position.status == Position.Status.CLOSED)
    held = sum(position.notional + position.entry_costs for position in still_open)
    assert account.cash == account.capital + realised - held


def test_the_position_factory_makes_a_batch_with_an_instrument_each():
    account = AccountFactory(roomy=True)
    positions = PositionFactory.create_batch(3, account=account, path=trending(100, 6, "0.2"))

    assert {position.account_id for position in positions} == {account.pk}
    assert len({position.instrument_id for position in positions}) == 3
    assert all(position.status == Position.Status.OPEN and position.marks.count() == 5 for position in positions)
    assert DailyBar.objects.filter(instrument__positions__account=account).count() == 18
    with pytest.raises(TypeError):
        PositionFactory.build()


def test_theses_from_the_factory_are_decided_on_their_session():
    position = position_on_path(flat(100, 4), start=dt.date(2025, 3, 3))
    thesis = position.thesis

    assert thesis.run.as_of == dt.date(2025, 3, 3) and timezone.localtime(thesis.created_at).date() == thesis.run.as_of
    assert thesis.decided_at > thesis.created_at and thesis.status == Thesis.Status.APPROVED
    assert position.order.placed_on == thesis.run.as_of and position.opened_on == dt.date(2025, 3, 4)
