"""The prices before slippage: the broker keeps them at the fill and at the exit, and the
retrospective rebuilds them from the bar and the exit reason for rows written before it did, to
the same attribution."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from reviews.retrospective import build_hard_part, rebuilt_exit_reference
from tests.factories import (
    AccountFactory,
    InstrumentFactory,
    OrderFactory,
    ThesisFactory,
    bars_for,
    flat,
    gapped,
    trending,
)
from trading.book import broker
from trading.models import Account, DailyBar, Order, Position

pytestmark = pytest.mark.django_db

D = Decimal


def traded(account: Account, path: Any, *, horizon: int = 30) -> tuple[Position, list[DailyBar]]:
    """A thesis decided on the path's first session and traded by the broker's own daily pass."""
    instrument = InstrumentFactory()
    bars = bars_for(instrument, path)
    thesis = ThesisFactory(
        account=account,
        instrument=instrument,
        run__as_of=bars[0].date,
        entry=bars[0].close,
        approved=True,
        horizon_sessions=horizon,
    )
    order = OrderFactory(thesis=thesis, placed_on=bars[0].date)
    for bar in bars[1:]:
        broker.positions_mark(as_of=bar.date, account=account, on_close=lambda closed: None)
    return Position.objects.get(order=order), bars


def test_the_broker_keeps_each_fills_price_before_slippage(approver) -> None:
    account = AccountFactory(roomy=True)
    stopped, stopped_bars = traded(account, gapped(100, before=4, gap_pct=-9, after=3))
    target, target_bars = traded(account, trending(100, 15, "1.5"))
    timed_out, timed_bars = traded(account, flat(100, 8), horizon=3)
    by_hand, hand_bars = traded(account, flat(100, 16))  # the last session on the exchange
    by_hand = broker.position_close_by_hand(position=by_hand, user=approver, comment="enough")

    for position, bars in ((stopped, stopped_bars), (target, target_bars), (timed_out, timed_bars)):
        order = Order.objects.get(pk=position.order_id)
        assert order.reference_price == bars[1].open  # next-open fills: the fill session's open
        assert position.exit_reason in {"stop", "target", "horizon"}
    closing = {bar.date: bar for bar in stopped_bars}[stopped.closed_on]
    assert stopped.exit_reason == "stop" and stopped.exit_reference == closing.open  # gapped through the stop
    assert target.exit_reason == "target" and target.exit_reference == target.target
    assert timed_out.exit_reason == "horizon"
    assert timed_out.exit_reference == {bar.date: bar for bar in timed_bars}[timed_out.closed_on].close
    assert by_hand.exit_reason == "manual" and by_hand.exit_reference == hand_bars[-1].close


def test_rows_without_references_are_rebuilt_to_the_same_attribution(approver) -> None:
    account = AccountFactory(roomy=True)
    traded(account, gapped(100, before=4, gap_pct=-9, after=3))
    traded(account, trending(100, 15, "1.5"))
    traded(account, flat(100, 8), horizon=3)
    traded(account, trending(100, 10, "-0.2"), horizon=5)
    by_hand, _ = traded(account, flat(100, 16))
    broker.position_close_by_hand(position=by_hand, user=approver, comment="enough")
    start, end = dt.date(2020, 1, 1), dt.date.today()

    stored = build_hard_part(account=account, start=start, end=end)
    Order.objects.filter(account=account).update(reference_price=None)
    Position.objects.filter(account=account).update(exit_reference=None)
    rebuilt = build_hard_part(account=account, start=start, end=end)

    assert D(stored["attribution"]["slippage"]) < 0
    assert rebuilt["attribution"] == stored["attribution"]
    assert rebuilt["waterfall"] == stored["waterfall"]


def test_a_rebuilt_reference_the_fill_contradicts_shows_no_slippage_rather_than_a_made_up_one() -> None:
    account = AccountFactory(roomy=True)
    position, bars = traded(account, trending(100, 15, "1.5"))
    # A bar corrected after the trade: its open no longer matches the fill's reference.
    DailyBar.objects.filter(pk=bars[1].pk).update(open=bars[1].open * 2, high=bars[1].high * 2)
    Order.objects.filter(account=account).update(reference_price=None)

    hard = build_hard_part(account=account, start=dt.date(2020, 1, 1), end=dt.date.today())

    assert D(hard["attribution"]["net"]) == position.realised_pnl
    sums = sum(D(hard["attribution"][key]) for key in ("gains", "losses", "slippage", "costs_total"))
    assert sums == position.realised_pnl


@pytest.mark.parametrize(
    ("direction", "reason", "bar_open", "expected"),
    [
        ("LONG", "stop", "96", "95"),  # touched intraday: the stop itself
        ("LONG", "stop", "93", "93"),  # gapped through: the open
        ("LONG", "target", "109", "110"),
        ("LONG", "target", "112", "112"),
        ("SHORT", "stop", "104", "105"),
        ("SHORT", "stop", "107", "107"),
        ("SHORT", "target", "91", "90"),
        ("SHORT", "target", "88", "88"),
        ("LONG", "horizon", "100", "101"),  # the close
        ("SHORT", "manual", "100", "101"),
    ],
)
def test_an_exit_reference_is_rebuilt_as_the_exit_rule_set_it(
    direction: str, reason: str, bar_open: str, expected: str
) -> None:
    stop, target = (D("95"), D("110")) if direction == "LONG" else (D("105"), D("90"))
    assert rebuilt_exit_reference(
        direction=direction,  # type: ignore[arg-type]
        reason=reason,
        stop=stop,
        target=target,
        bar_open=D(bar_open),
        bar_close=D("101"),
    ) == D(expected)
