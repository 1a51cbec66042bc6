"""Property: whatever the order of proposals, approvals, fills, marks and closes, the book never
ends a step with more slots taken than allowed, two live ideas in one instrument, an approval or
fill that took exposure past the cap, or cash below zero."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from tests.trading.book_rows import SESSION, book_account, instrument_at, next_session, pending
from trading.access import APPROVER, ensure_desk_groups
from trading.book import broker
from trading.book.accounts import account_portfolio
from trading.book.approvals import DecisionRefused, thesis_approve
from trading.models import Account, Order, Position, Thesis

SYMBOLS = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT"]

propose = st.tuples(
    st.just("propose"), st.integers(0, len(SYMBOLS) - 1), st.integers(1, 6000), st.sampled_from(["95.00", "80.00"])
)
approve = st.tuples(st.just("approve"), st.integers(0, 50))
approve_all = st.tuples(st.just("approve_all"))  # the demo's morning: the whole queue at once
session = st.tuples(st.just("session"), st.sampled_from([-6, -3, -1, 0, 1, 2, 4, 7]))  # the day's move, in %
close = st.tuples(st.just("close"), st.integers(0, 50))
steps = st.lists(st.one_of(propose, propose, approve, approve_all, session, close), min_size=1, max_size=30)


class BookUnderAnySequence(TestCase):
    def setUp(self) -> None:
        self.user = get_user_model().objects.create_user(username="approver")
        self.user.groups.add(ensure_desk_groups()[APPROVER])
        self.account = book_account(max_positions=3, exposure_cap_pct=Decimal("60"), daily_loss_cap=Decimal("30000"))
        self.day = SESSION
        self.prices = {symbol: Decimal("100.00") for symbol in SYMBOLS}
        self.instruments = {symbol: instrument_at(symbol, "100.00") for symbol in SYMBOLS}

    def _bars_for_next_session(self, move_pct: int) -> None:
        self.day = next_session(self.day)
        for symbol in SYMBOLS:
            self.prices[symbol] = (self.prices[symbol] * (100 + move_pct) / 100).quantize(Decimal("0.05"))
            instrument_at(symbol, str(self.prices[symbol]), day=self.day)

    def _do(self, step: tuple) -> bool:
        """Apply one step; True when it added to the book (an order or a position)."""
        kind = step[0]
        if kind == "propose":
            _, index, quantity, stop = step
            symbol = SYMBOLS[index]
            price = self.prices[symbol]
            distance = price - price * Decimal(stop) / 100
            pending(
                self.account,
                self.instruments[symbol],
                quantity=quantity,
                entry=str(price),
                stop=str((price - distance).quantize(Decimal("0.05"))),
                target=str((price + 2 * distance).quantize(Decimal("0.05"))),
                as_of=self.day,
            )
            return False
        if kind in {"approve", "approve_all"}:
            waiting = list(Thesis.objects.filter(status=Thesis.Status.PENDING).order_by("id"))
            if not waiting:
                return False
            chosen = waiting if kind == "approve_all" else [waiting[step[1] % len(waiting)]]
            return sum(self._approve(thesis) for thesis in chosen) > 0
        if kind == "session":
            self._bars_for_next_session(step[1])
            before = Position.objects.count()
            broker.positions_mark(as_of=self.day, account=self.account)
            return Position.objects.count() > before
        held = list(Position.objects.filter(status=Position.Status.OPEN).order_by("id"))
        if held:
            position = held[step[1] % len(held)]
            broker.position_close(
                position=position, price=self.prices[position.instrument.symbol], on=self.day, reason="manual"
            )
        return False

    def _approve(self, thesis: Thesis) -> bool:
        try:
            thesis_approve(thesis=thesis, user=self.user, as_of=self.day)
        except DecisionRefused:
            return False
        return True

    def _assert_book_holds(self, added: bool) -> None:
        account = Account.objects.get(pk=self.account.pk)
        state = account_portfolio(account, today=self.day)
        self.assertGreaterEqual(account.cash, 0)
        self.assertLessEqual(state.slots_taken, account.max_positions)
        live = list(Position.objects.filter(status=Position.Status.OPEN).values_list("instrument_id", flat=True))
        live += list(Order.objects.filter(status=Order.Status.WORKING).values_list("instrument_id", flat=True))
        self.assertEqual(len(live), len(set(live)), "two live ideas in one instrument")
        if added:
            self.assertGreaterEqual(state.available_cash, 0)
            self.assertLessEqual(state.gross_exposure, account.capital * account.exposure_cap_pct / 100)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(steps)
    def test_no_sequence_breaches_a_limit_or_overdraws_the_cash(self, sequence: list[tuple]) -> None:
        for step in sequence:
            self._assert_book_holds(self._do(step))
