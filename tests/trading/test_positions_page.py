"""The portfolio's positions: several positions in one instrument read as one holding, each shows its
move since entry, its R multiple (signed by direction), the sessions held and its notional, dividends
appear where there are any, and Close is a confirm step that asks for a reason."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils.html import escape

from tests.factories import InstrumentFactory, OrderFactory
from tests.trading.book_rows import add_bar
from trading.book.accounts import default_account
from trading.book.selectors import open_holdings, percent_since_entry, r_multiple
from trading.models import Order, Position
from vocabulary.money import format_money

MONDAY = dt.date(2026, 2, 9)
FRIDAY = dt.date(2026, 2, 13)  # four sessions after Monday on NSE (no holiday that week)


def _position(
    instrument,
    *,
    direction="LONG",
    quantity=100,
    entry="100.00",
    stop="95.00",
    target="110.00",
    mark="104.00",
    **fields,
):
    """An open position of the live book as the broker leaves it after a fill on MONDAY and marks."""
    sign = 1 if direction == "LONG" else -1
    order = OrderFactory(
        thesis__account=default_account(),
        thesis__instrument=instrument,
        thesis__direction=direction,
        thesis__entry=Decimal(entry),
        thesis__stop=Decimal(stop),
        thesis__target=Decimal(target),
        thesis__quantity=quantity,
        placed_on=MONDAY,
    )
    Order.objects.filter(pk=order.pk).update(status=Order.Status.FILLED, fill_price=Decimal(entry), filled_on=MONDAY)
    return Position.objects.create(
        account=order.account,
        order=order,
        thesis=order.thesis,
        instrument=instrument,
        direction=direction,
        quantity=quantity,
        entry_price=Decimal(entry),
        entry_costs=Decimal("20.00"),
        opened_on=MONDAY,
        stop=Decimal(stop),
        target=Decimal(target),
        horizon_sessions=10,
        last_mark=Decimal(mark),
        unrealised_pnl=sign * (Decimal(mark) - Decimal(entry)) * quantity,
        **fields,
    )


@pytest.fixture
def listed(db):
    """An NSE instrument with bars from Monday to Friday."""
    instrument = InstrumentFactory(symbol="INFY", exchange="NSE")
    day = MONDAY
    while day <= FRIDAY:
        add_bar(instrument, day, open_="100", high="105", low="99", close="104")
        day += dt.timedelta(days=1)
    return instrument


def test_the_move_and_the_r_multiple_are_signed_by_the_positions_direction():
    assert percent_since_entry("LONG", Decimal("100"), Decimal("104")) == Decimal("4.00")
    assert percent_since_entry("SHORT", Decimal("100"), Decimal("104")) == Decimal("-4.00")
    assert r_multiple(Decimal("100"), Decimal("95"), Decimal("110")) == Decimal("2.00")  # a LONG at its 2R target
    assert r_multiple(Decimal("100"), Decimal("95"), Decimal("95")) == Decimal("-1.00")  # a LONG at its stop
    assert r_multiple(Decimal("100"), Decimal("105"), Decimal("90")) == Decimal("2.00")  # a SHORT at its target
    assert r_multiple(Decimal("100"), Decimal("105"), Decimal("102.5")) == Decimal("-0.50")
    assert r_multiple(Decimal("100"), Decimal("100"), Decimal("101")) is None  # no risk, no R


def test_two_positions_in_one_instrument_are_summed_into_one_holding(listed):
    _position(listed, quantity=100, entry="100.00", stop="95.00")
    _position(listed, quantity=50, entry="103.00", stop="98.00")

    [held] = open_holdings(default_account())

    assert held.quantity == 150
    assert held.avg_entry == Decimal("101.0000")  # (100×100 + 50×103) / 150
    assert held.unrealised == Decimal("400.00") + Decimal("50.00")
    assert held.notional == Decimal("15600.00")  # 150 × the last mark 104
    assert held.pct_since_entry == Decimal("2.97")  # 104 against the average entry 101
    assert held.r_multiple == Decimal("0.60")  # (4×100 + 1×50) / (5×100 + 5×50)
    assert held.sessions_held == 4  # Tuesday to Friday on the exchange's calendar


def test_the_page_shows_the_holding_then_each_position_with_its_figures(client, viewer, listed):
    first = _position(listed, quantity=100, entry="100.00")
    second = _position(listed, quantity=50, entry="103.00", stop="98.00")
    short = _position(
        InstrumentFactory(symbol="TCS"),
        direction="SHORT",
        entry="200.00",
        stop="210.00",
        target="180.00",
        mark="190.00",
    )
    client.force_login(viewer)

    body = client.get(reverse("portfolio")).content.decode()
    table = body[body.index('id="open-positions"') : body.index("</table>", body.index('id="open-positions"'))]

    assert "2 positions" in table and f'id="position-{first.pk}"' in table and f'id="position-{second.pk}"' in table
    assert "₹1,01.00" not in table and "₹101.00" in table  # the average entry, in the desk's money format
    assert "+2.97%" in table and "+0.60R" in table
    # The SHORT is in profit as the price fell: both the move and the R multiple say so with a "+".
    short_row = table[table.index(f'id="position-{short.pk}"') :]
    assert "+5.00%" in short_row and "+1.00R" in short_row and "₹19,000.00" in short_row


def test_dividends_show_only_where_a_position_has_some(client, viewer, listed):
    paid = _position(listed)
    client.force_login(viewer)
    assert "Dividends" not in client.get(reverse("portfolio")).content.decode()

    Position.objects.filter(pk=paid.pk).update(dividends=Decimal("850.00"))
    body = client.get(reverse("portfolio")).content.decode()

    assert "Dividends" in body and "₹850.00" in body


def test_close_is_a_confirm_step_with_a_required_reason_for_an_approver_only(client, viewer, approver, listed):
    position = _position(listed)
    client.force_login(viewer)
    assert "Confirm close" not in client.get(reverse("portfolio")).content.decode()

    client.force_login(approver)
    body = client.get(reverse("portfolio")).content.decode()
    step = body[body.index('<details class="confirm-step">') : body.index("</details>")]

    assert "Close…" in step and "Confirm close" in step and "Keep it" in step
    assert 'name="comment" required' in step and reverse("position_close", args=[position.pk]) in step
    refused = client.post(reverse("position_close", args=[position.pk]), {"comment": ""}, follow=True)
    assert "a reason is required" in refused.content.decode()
    assert Position.objects.get(pk=position.pk).status == Position.Status.OPEN

    closed = client.post(reverse("position_close", args=[position.pk]), {"comment": "results"}, follow=True)

    position.refresh_from_db()
    assert position.status == Position.Status.CLOSED and position.exit_comment == "results"
    assert position.realised_pnl is not None and position.exit_price is not None
    said = (
        f"Closed INFY at {format_money(position.exit_price)}: PnL {format_money(position.realised_pnl)} (net of costs)."
    )
    assert escape(said) in closed.content.decode()


def test_sessions_held_skip_the_exchanges_holidays(db):
    """Holi closed NSE in the week of 2 March 2026: four weekdays after Monday, three sessions."""
    instrument = InstrumentFactory(symbol="HOLI", exchange="NSE")
    for day in (dt.date(2026, 3, 2), dt.date(2026, 3, 6)):
        add_bar(instrument, day, open_="100", high="105", low="99", close="104")
    position = _position(instrument)
    Position.objects.filter(pk=position.pk).update(opened_on=dt.date(2026, 3, 2))

    [held] = open_holdings(default_account())

    assert held.sessions_held == 3
