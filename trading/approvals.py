"""Stage 8: a person approves or rejects a thesis.

Every refusal has a reason a person can read. A decision is claimed with a conditional update on
the thesis row, so two approvals at the same moment produce exactly one order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from trading.audit import audit_record
from trading.models import DailyBar, Order, Thesis
from trading.portfolio import account_for_run

APPROVE_PERMISSION = "trading.approve_thesis"


class DecisionRefused(Exception):
    """The decision cannot be taken; ``reason`` says why, in words for the approver."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Staleness:
    latest_close: Decimal
    latest_date: dt.date
    moved: Decimal
    atr: Decimal | None
    limit: Decimal | None

    @property
    def is_stale(self) -> bool:
        return self.limit is not None and self.moved > self.limit


def thesis_expiry(created_at: dt.datetime) -> dt.datetime:
    return created_at + dt.timedelta(minutes=settings.BROKER["THESIS_TTL_MINUTES"])


def thesis_staleness(thesis: Thesis, *, as_of: dt.date | None = None) -> Staleness | None:
    """How far the latest close (on or before ``as_of``) has moved from the thesis entry, against
    the ATR it was built on."""
    bars = DailyBar.objects.filter(instrument_id=thesis.instrument_id)
    if as_of is not None:
        bars = bars.filter(date__lte=as_of)
    latest = bars.order_by("-date").first()
    if latest is None:
        return None
    atr_value = thesis.run.stages.filter(stage="features").values_list("output", flat=True).first()
    atr_float = (atr_value or {}).get("bundle", {}).get("technical", {}).get("atr_14")
    atr = None if atr_float is None else Decimal(str(atr_float))
    multiple = Decimal(str(settings.BROKER["STALE_ATR_MULTIPLE"]))
    return Staleness(
        latest_close=latest.close,
        latest_date=latest.date,
        moved=abs(latest.close - thesis.entry),
        atr=atr,
        limit=None if atr is None or multiple == 0 else atr * multiple,
    )


def _check_permission(user) -> None:
    if not user.has_perm(APPROVE_PERMISSION):
        raise DecisionRefused("only approvers can decide on a thesis")


def _refuse_if_decided(thesis: Thesis) -> None:
    if thesis.status == Thesis.Status.REJECTED_BY_RISK:
        raise DecisionRefused("the risk engine rejected this thesis; it cannot be approved")
    if thesis.status != Thesis.Status.PENDING:
        who = f" by {thesis.decided_by.get_username()}" if thesis.decided_by else ""
        raise DecisionRefused(f"this thesis is already {thesis.get_status_display().lower()}{who}")


def _expire_if_due(thesis: Thesis, now: dt.datetime) -> None:
    if thesis.expires_at and thesis.expires_at <= now:
        expired = Thesis.objects.filter(pk=thesis.pk, status=Thesis.Status.PENDING).update(status=Thesis.Status.EXPIRED)
        if expired:
            audit_record(action="thesis_expired", target=f"thesis {thesis.pk}", reason="approval window passed")
        raise DecisionRefused(f"this thesis expired at {timezone.localtime(thesis.expires_at):%d %b %Y %H:%M}")


def _claim(thesis: Thesis, *, status: str, user, comment: str, now: dt.datetime) -> None:
    claimed = Thesis.objects.filter(pk=thesis.pk, status=Thesis.Status.PENDING).update(
        status=status, decided_by=user, decided_at=now, decision_comment=comment
    )
    if not claimed:
        thesis.refresh_from_db()
        _refuse_if_decided(thesis)
        raise DecisionRefused("this thesis was decided by someone else a moment ago")


def thesis_approve(
    *, thesis: Thesis, user, comment: str = "", now: dt.datetime | None = None, as_of: dt.date | None = None
) -> Order:
    """Approve and place the order. Refuses (DecisionRefused) without the permission, after a
    decision, after the risk engine said no, after expiry, or when the price has moved on.
    ``as_of`` bounds the staleness check for history replays (live: the latest bar)."""
    from trading.broker import order_place

    now = now or timezone.now()
    _check_permission(user)
    _refuse_if_decided(thesis)
    if not thesis.risk_approved:
        raise DecisionRefused("the risk engine rejected this thesis; it cannot be approved")
    _expire_if_due(thesis, now)
    staleness = thesis_staleness(thesis, as_of=as_of)
    if staleness and staleness.is_stale:
        raise DecisionRefused(
            f"stale: the close of {staleness.latest_date:%d %b} ({staleness.latest_close}) is "
            f"{staleness.moved} away from the entry {thesis.entry}, more than "
            f"{settings.BROKER['STALE_ATR_MULTIPLE']}×ATR ({staleness.limit:.2f}); re-run the pipeline"
        )
    with transaction.atomic():
        _claim(thesis, status=Thesis.Status.APPROVED, user=user, comment=comment, now=now)
        order = order_place(thesis=thesis, account=account_for_run(thesis.run))
        audit_record(
            actor=user,
            action="thesis_approved",
            target=f"thesis {thesis.pk}",
            reason=comment,
            details={"order": order.pk, "quantity": order.quantity, "side": order.side},
        )
    return order


def thesis_reject(*, thesis: Thesis, user, comment: str, now: dt.datetime | None = None) -> None:
    now = now or timezone.now()
    _check_permission(user)
    if not comment.strip():
        raise DecisionRefused("say why you reject it: a comment is required")
    if thesis.status == Thesis.Status.REJECTED_BY_RISK:
        raise DecisionRefused("the risk engine already rejected this thesis")
    _refuse_if_decided(thesis)
    with transaction.atomic():
        _claim(thesis, status=Thesis.Status.REJECTED, user=user, comment=comment, now=now)
        audit_record(actor=user, action="thesis_rejected", target=f"thesis {thesis.pk}", reason=comment)


def theses_expire(*, now: dt.datetime | None = None) -> int:
    """Mark every pending thesis past its window as expired (beat)."""
    now = now or timezone.now()
    due = list(Thesis.objects.filter(status=Thesis.Status.PENDING, expires_at__lte=now).values_list("pk", flat=True))
    expired = Thesis.objects.filter(pk__in=due, status=Thesis.Status.PENDING).update(status=Thesis.Status.EXPIRED)
    for thesis_id in due:
        audit_record(action="thesis_expired", target=f"thesis {thesis_id}", reason="approval window passed")
    return expired
