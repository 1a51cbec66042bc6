"""Stage 8: who may decide, when a decision is refused, and that a decision happens once."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from functools import partial

import pytest
from django.utils import timezone

from tests.processes import at_once
from trading.book.approvals import DecisionRefused, theses_expire, thesis_approve, thesis_reject
from trading.models import AuditEvent, DailyBar, Order, Thesis
from trading.pipeline.presenters import run_outputs


def test_an_approver_approves_and_an_order_is_placed_and_audited(pending_thesis, approver):
    order = thesis_approve(thesis=pending_thesis, user=approver, comment="clean setup")

    pending_thesis.refresh_from_db()
    assert pending_thesis.status == Thesis.Status.APPROVED and pending_thesis.decided_by == approver
    assert order.quantity == pending_thesis.quantity and order.side == (
        "BUY" if pending_thesis.direction == "LONG" else "SELL"
    )
    event = AuditEvent.objects.get(action="thesis_approved")
    assert event.actor == approver and event.reason == "clean setup"


def test_a_viewer_cannot_approve(pending_thesis, viewer):
    with pytest.raises(DecisionRefused, match="only approvers"):
        thesis_approve(thesis=pending_thesis, user=viewer)
    assert not Order.objects.exists()


def test_a_thesis_the_risk_engine_rejected_cannot_be_approved(pending_thesis, approver):
    Thesis.objects.filter(pk=pending_thesis.pk).update(risk_approved=False, status=Thesis.Status.REJECTED_BY_RISK)
    pending_thesis.refresh_from_db()

    with pytest.raises(DecisionRefused, match="risk engine rejected"):
        thesis_approve(thesis=pending_thesis, user=approver)


def test_an_expired_thesis_is_refused_and_marked_expired(pending_thesis, approver):
    later = pending_thesis.expires_at + dt.timedelta(seconds=1)

    with pytest.raises(DecisionRefused, match="expired"):
        thesis_approve(thesis=pending_thesis, user=approver, now=later)

    pending_thesis.refresh_from_db()
    assert pending_thesis.status == Thesis.Status.EXPIRED
    assert not Order.objects.exists()


def test_the_expiry_sweep_expires_only_overdue_theses(pending_thesis):
    assert theses_expire(now=pending_thesis.expires_at - dt.timedelta(seconds=1)) == 0
    assert theses_expire(now=pending_thesis.expires_at) == 1


def test_a_stale_thesis_must_be_re_run(pending_thesis, approver):
    atr = Decimal(str(run_outputs(pending_thesis.run).features.bundle.technical.atr_14))
    moved = pending_thesis.entry + 2 * atr
    DailyBar.objects.create(
        instrument=pending_thesis.instrument,
        date=pending_thesis.run.as_of + dt.timedelta(days=3),
        open=moved,
        high=moved,
        low=moved,
        close=moved,
        volume=1000,
    )

    with pytest.raises(DecisionRefused, match=r"stale: .*re-run the pipeline"):
        thesis_approve(thesis=pending_thesis, user=approver)
    pending_thesis.refresh_from_db()
    assert pending_thesis.status == Thesis.Status.PENDING


def test_a_rejection_needs_a_reason_and_is_final(pending_thesis, approver):
    with pytest.raises(DecisionRefused, match="comment is required"):
        thesis_reject(thesis=pending_thesis, user=approver, comment=" ")

    thesis_reject(thesis=pending_thesis, user=approver, comment="earnings tomorrow")

    with pytest.raises(DecisionRefused, match="already rejected by arjun"):
        thesis_approve(thesis=pending_thesis, user=approver)
    assert AuditEvent.objects.get(action="thesis_rejected").reason == "earnings tomorrow"


@pytest.mark.django_db(transaction=True)
def test_twenty_simultaneous_approvals_place_exactly_one_order(pending_thesis, approver):
    copies = [Thesis.objects.select_related("instrument", "run").get(pk=pending_thesis.pk) for _ in range(20)]

    def approve(thesis: Thesis) -> str:
        try:
            thesis_approve(thesis=thesis, user=approver, now=timezone.now())
        except DecisionRefused as refusal:
            return refusal.reason
        return "approved"

    outcomes = at_once([partial(approve, copy) for copy in copies])

    assert outcomes.count("approved") == 1, outcomes
    assert len(outcomes) == 20
    assert Order.objects.filter(thesis=pending_thesis).count() == 1
    assert AuditEvent.objects.filter(action="thesis_approved").count() == 1
