"""The book as a whole: limits hold across many approvals and fills, in a row and at once."""

from __future__ import annotations

from decimal import Decimal
from functools import partial

import pytest
from django.urls import reverse

from tests.processes import at_once
from tests.trading.book_rows import SESSION, book_account, instrument_at, pending
from trading.book import broker
from trading.book.accounts import account_portfolio
from trading.book.approvals import DecisionRefused, thesis_approve
from trading.models import Account, AuditEvent, Order, Position, Thesis

SYMBOLS = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL"]


def _theses(account: Account, count: int, *, quantity: int = 100) -> list[Thesis]:
    return [pending(account, instrument_at(symbol), quantity=quantity) for symbol in SYMBOLS[:count]]


def _approve_all(theses: list[Thesis], user) -> tuple[list[Order], list[DecisionRefused]]:
    orders, refusals = [], []
    for thesis in theses:
        try:
            orders.append(thesis_approve(thesis=thesis, user=user, as_of=SESSION))
        except DecisionRefused as refusal:
            refusals.append(refusal)
    return orders, refusals


def test_approving_a_batch_stops_at_max_positions_and_names_the_check(approver):
    account = book_account(max_positions=3)
    orders, refusals = _approve_all(_theses(account, 5), approver)

    assert len(orders) == 3 and len(refusals) == 2
    assert all(refusal.checks[0]["name"] == "max_positions" for refusal in refusals)
    assert "1 risk check(s) fail against the live book now (max_positions)" in refusals[0].reason
    assert "0 open position(s) + 3 working order(s) = 3 ≥ limit 3" in refusals[0].checks[0]["detail"]
    assert Thesis.objects.filter(status=Thesis.Status.PENDING).count() == 2  # a refusal decides nothing
    assert AuditEvent.objects.filter(action="approval_refused").count() == 2


def test_working_orders_count_against_the_exposure_cap_and_the_cash(approver):
    # Each idea is 40% of capital: two fit under a 100% cap, the third would make 120%.
    account = book_account(max_notional_pct=Decimal("50"), max_instrument_pct=Decimal("50"))
    orders, refusals = _approve_all(_theses(account, 3, quantity=4000), approver)

    assert len(orders) == 2
    failed = {check["name"] for check in refusals[0].checks}
    assert failed == {"exposure_cap", "margin_sufficient"}
    state = account_portfolio(account, today=SESSION)
    assert state.gross_exposure == Decimal("800000") and state.available_cash == Decimal("200000")


def test_a_fill_that_would_breach_a_limit_is_cancelled_with_the_reason_not_filled(approver, settings):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "0"}
    account = book_account()
    thesis = _theses(account, 1, quantity=1000)[0]
    order = thesis_approve(thesis=thesis, user=approver, as_of=SESSION)
    # Between approval and the next open the cash went elsewhere (another desk, a withdrawal).
    Account.objects.filter(pk=account.pk).update(cash=Decimal("50000"))
    next_day = SESSION.replace(day=SESSION.day + 1)
    instrument_at(thesis.instrument.symbol, "100.00", day=next_day)

    assert broker.order_try_fill(order=order, as_of=next_day) is None

    order.refresh_from_db()
    assert order.status == Order.Status.CANCELLED
    assert order.note.startswith(f"cancelled at fill on {next_day}") and "margin_sufficient" in order.note
    assert not Position.objects.exists()
    assert Account.objects.get(pk=account.pk).cash == Decimal("50000")


def test_a_fill_re_checks_the_limits_at_the_fill_price(approver, settings):
    # Approved at ₹100 inside the ₹2,00,000 instrument cap; the open gaps to ₹104, which makes
    # the same 1,990 shares ₹2,06,960: over the cap, so the order is cancelled, not filled.
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "0"}
    account = book_account()
    thesis = _theses(account, 1, quantity=1990)[0]
    order = thesis_approve(thesis=thesis, user=approver, as_of=SESSION)
    next_day = SESSION.replace(day=SESSION.day + 1)
    instrument_at(thesis.instrument.symbol, "104.00", day=next_day)

    assert broker.order_try_fill(order=order, as_of=next_day) is None
    order.refresh_from_db()
    assert order.status == Order.Status.CANCELLED and "max_notional_pct" in order.note


def test_an_instrument_already_working_refuses_a_second_approval(approver):
    account = book_account()
    instrument = instrument_at("ALPHA")
    first, twin = pending(account, instrument, quantity=100), pending(account, instrument, quantity=100)
    thesis_approve(thesis=first, user=approver, as_of=SESSION)

    with pytest.raises(DecisionRefused, match=r"one live idea per instrument: ALPHA an order is already working"):
        thesis_approve(thesis=twin, user=approver, as_of=SESSION)
    assert Order.objects.count() == 1


def test_a_replay_thesis_cannot_be_approved_from_the_live_desk_or_the_api(approver, client):
    account = book_account()
    thesis = pending(account, instrument_at("ALPHA"), quantity=100, replay=True)

    with pytest.raises(DecisionRefused, match="history replay"):
        thesis_approve(thesis=thesis, user=approver)
    client.force_login(approver)
    response = client.post(reverse("api-thesis-approve", args=[thesis.pk]), {"comment": ""})

    assert response.status_code == 409 and "history replay" in response.json()["detail"]
    assert not Order.objects.exists()


def test_the_api_answers_409_with_the_failing_checks(approver, client):
    account = book_account(max_positions=1)
    first, second = _theses(account, 2)
    thesis_approve(thesis=first, user=approver, as_of=SESSION)
    client.force_login(approver)

    response = client.post(reverse("api-thesis-approve", args=[second.pk]), {"comment": "both please"})

    assert response.status_code == 409
    body = response.json()
    assert [check["name"] for check in body["checks"]] == ["max_positions"]
    assert "1 working order(s)" in body["checks"][0]["detail"]


@pytest.mark.django_db(transaction=True)
def test_approvers_approving_different_theses_at_once_never_pass_a_limit_between_them(approver):
    account = book_account(max_positions=3)
    theses = _theses(account, 8)
    copies = [Thesis.objects.select_related("instrument", "run").get(pk=thesis.pk) for thesis in theses]

    def approve(thesis: Thesis) -> str:
        try:
            thesis_approve(thesis=thesis, user=approver, as_of=SESSION)
        except DecisionRefused as refusal:
            return refusal.checks[0]["name"] if refusal.checks else refusal.reason
        return "approved"

    outcomes = at_once([partial(approve, copy) for copy in copies])

    assert sorted(outcomes) == ["approved"] * 3 + ["max_positions"] * 5, outcomes
    assert Order.objects.filter(account=account).count() == 3


def test_the_live_ideas_read_at_once_are_the_ones_asked_instrument_by_instrument(approver):
    """``account_live_ideas`` (a replay day's one read) answers as ``instrument_live_idea`` does for
    every instrument: held, working, pending (past its window or not), several on one instrument,
    another account's, and none."""
    from django.utils import timezone

    from tests.trading.book_rows import open_position, working_order
    from trading.book.accounts import account_live_ideas, instrument_live_idea

    account = book_account(max_positions=20, max_notional_pct=Decimal("100"), exposure_cap_pct=Decimal("1000"))
    other = Account.objects.create(
        name="Other",
        capital=Decimal("1000000"),
        cash=Decimal("1000000"),
        daily_loss_cap=Decimal("20000"),
        max_notional_pct=Decimal("20"),
        max_positions=5,
        exposure_cap_pct=Decimal("100"),
        max_instrument_pct=Decimal("20"),
    )
    held, working, waiting, lapsed, both, elsewhere, idle = (instrument_at(symbol) for symbol in SYMBOLS[:7])
    open_position(pending(account, held, quantity=10), account, on=SESSION)
    working_order(pending(account, working, quantity=10), account, placed_on=SESSION)
    pending(account, waiting, quantity=10)
    Thesis.objects.filter(pk=pending(account, lapsed, quantity=10).pk).update(expires_at=timezone.now())
    working_order(pending(account, both, quantity=10), account, placed_on=SESSION)
    pending(account, both, quantity=10)
    pending(other, elsewhere, quantity=10)

    ideas = account_live_ideas(account)

    for instrument in (held, working, waiting, lapsed, both, elsewhere, idle):
        assert ideas.get(instrument.pk, "") == instrument_live_idea(account, instrument.pk), instrument.symbol
    assert set(ideas) == {held.pk, working.pk, waiting.pk, both.pk}
