"""A USD instrument's prices and PnL are shown in dollars; the account's figures in its currency."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from trading.book import broker
from trading.book.approvals import thesis_approve
from trading.models import Account, DailyBar, Instrument, Thesis
from vocabulary.money import format_money


def _in_dollars(instrument: Instrument) -> None:
    Instrument.objects.filter(pk=instrument.pk).update(currency="USD")
    instrument.refresh_from_db()


def _section(body: str, element_id: str) -> str:
    start = body.index(f'id="{element_id}"')
    return body[start : body.index("</table>", start)]


@pytest.fixture
def usd_thesis(pending_thesis) -> Thesis:
    _in_dollars(pending_thesis.instrument)
    return Thesis.objects.select_related("instrument", "run").get(pk=pending_thesis.pk)


@pytest.fixture
def usd_position(usd_thesis, approver, settings):
    """The USD thesis approved and filled at the next session's open, in the (rupee) live book."""
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "0"}
    last = usd_thesis.instrument.bars.latest("date")
    day = last.date + dt.timedelta(days=3 if last.date.weekday() == 4 else 1)
    DailyBar.objects.create(
        instrument=usd_thesis.instrument,
        date=day,
        open=last.close,
        high=last.close + 1,
        low=last.close - 1,
        close=last.close,
        volume=100_000,
    )
    order = thesis_approve(thesis=usd_thesis, user=approver)
    position = broker.order_try_fill(order=order, as_of=day)
    assert position is not None
    return position


def test_it_shows_the_instrument_list_close_of_a_usd_instrument_in_dollars(client, viewer, instrument_with_bars):
    _in_dollars(instrument_with_bars)
    client.force_login(viewer)
    last = instrument_with_bars.bars.latest("date").close

    body = client.get(reverse("instrument_list")).content.decode()

    assert format_money(last, "USD") in body and "₹" not in body


def test_it_shows_a_usd_thesis_in_dollars_in_the_queue(client, viewer, usd_thesis):
    client.force_login(viewer)

    body = client.get(reverse("thesis_queue")).content.decode()

    assert format_money(usd_thesis.entry, "USD") in body and format_money(usd_thesis.stop, "USD") in body
    assert "₹" not in _section(body, "theses")


def test_it_shows_a_usd_theses_levels_and_size_in_dollars(client, viewer, usd_thesis):
    client.force_login(viewer)

    body = client.get(reverse("thesis_detail", args=[usd_thesis.pk])).content.decode()

    # The levels card and the trader's table; the risk checks' own wording is the engine's.
    levels, trader = _section(body, "winner"), _section(body, "thesis")
    for value in (usd_thesis.entry, usd_thesis.stop, usd_thesis.target):
        assert format_money(value, "USD") in levels and format_money(value, "USD") in trader
    assert "₹" not in levels and "₹" not in trader
    assert f"notional {format_money(usd_thesis.notional, 'USD')}" in body


def test_it_shows_a_usd_position_in_dollars_and_the_rupee_account_in_rupees(client, viewer, usd_position):
    client.force_login(viewer)
    account = Account.objects.get(pk=usd_position.account_id)

    body = client.get(reverse("portfolio")).content.decode()

    positions = _section(body, "open-positions")
    assert format_money(usd_position.entry_price, "USD") in positions and "₹" not in positions
    assert format_money(account.capital, "INR") in body


def test_it_shows_no_rupee_sign_at_all_when_the_account_and_the_instrument_are_in_dollars(client, viewer, usd_position):
    Account.objects.filter(pk=usd_position.account_id).update(currency="USD")
    client.force_login(viewer)
    capital = Account.objects.get(pk=usd_position.account_id).capital

    body = client.get(reverse("portfolio")).content.decode()

    assert format_money(capital, "USD") in body and "₹" not in body
