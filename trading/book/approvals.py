"""Stage 8: a person approves or rejects a thesis.

Every refusal has a reason a person can read. A decision is claimed with a conditional update on
the thesis row, so two approvals at the same moment produce exactly one order. An approval runs
the risk checks again against the live book (open positions, working orders, today's loss) with
the account locked, so two approvers approving two theses at once cannot pass a limit between
them. A strategy held by a blocking critique directive (``StrategyDirective``, written by the
critique in the layer above and read here as data) has none of its theses approved until the
directive's required actions are complete.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from trading.audit import audit_record
from trading.book.accounts import account_lock, instrument_live_idea, thesis_book_check
from trading.book.domain.risk import RiskDecision
from trading.models import DailyBar, Order, StrategyDirective, Thesis
from vocabulary.features import FeatureBundle
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

APPROVE_PERMISSION = "trading.approve_thesis"


class DecisionRefused(StateConflict):
    """The decision cannot be taken; ``reason`` says why, in words for the approver, and
    ``checks`` lists the risk checks that failed (name and figures) when the book said no. A state
    conflict (409) unless it is one of the narrower kinds below."""

    def __init__(self, reason: str, *, checks: list[dict] | None = None) -> None:
        super().__init__(reason, {"checks": checks or []})
        self.reason = reason
        self.checks = self.details["checks"]


class DecisionNotAllowed(DecisionRefused, NotAllowed):
    """The person may not decide at all (403): there are no checks to show."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.details = {}


class DecisionInputRefused(DecisionRefused, InputRefused):
    """The request lacks what a decision needs (a reason to reject): 400, send it again with it."""


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
    # An int (config/env.py's env_int); the checker sees settings.BROKER's values only as objects.
    return created_at + dt.timedelta(minutes=cast(int, settings.BROKER["THESIS_TTL_MINUTES"]))


def _built_on_atr(thesis: Thesis) -> Decimal | None:
    """The ATR(14) of the feature bundle the thesis's run used (its linked FeatureSnapshot)."""
    snapshot = thesis.run.feature_snapshot
    if snapshot is None:
        return None
    atr = FeatureBundle.model_validate(snapshot.bundle).technical.atr_14
    return None if atr is None else Decimal(str(atr))


def thesis_staleness(thesis: Thesis, *, as_of: dt.date | None = None) -> Staleness | None:
    """How far the latest close (on or before ``as_of``) has moved from the thesis entry, against
    the ATR it was built on."""
    bars = DailyBar.objects.filter(instrument_id=thesis.instrument_id)
    if as_of is not None:
        bars = bars.filter(date__lte=as_of)
    latest = bars.order_by("-date").first()
    if latest is None:
        return None
    atr = _built_on_atr(thesis)
    multiple = Decimal(str(settings.BROKER["STALE_ATR_MULTIPLE"]))
    return Staleness(
        latest_close=latest.close,
        latest_date=latest.date,
        moved=abs(latest.close - thesis.entry),
        atr=atr,
        limit=None if atr is None or multiple == 0 else atr * multiple,
    )


def _check_permission(user: User | AnonymousUser) -> None:
    if not user.has_perm(APPROVE_PERMISSION):
        raise DecisionNotAllowed("only approvers can decide on a thesis")


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


def _claim(thesis: Thesis, *, status: str, user: User | AnonymousUser, comment: str, now: dt.datetime) -> None:
    claimed = Thesis.objects.filter(pk=thesis.pk, status=Thesis.Status.PENDING).update(
        status=status, decided_by=user, decided_at=now, decision_comment=comment
    )
    if not claimed:
        thesis.refresh_from_db()
        _refuse_if_decided(thesis)
        raise DecisionRefused("this thesis was decided by someone else a moment ago")


def _refuse_across_books(thesis: Thesis, *, replay: bool) -> None:
    """A replay's thesis is decided only by its replay, and a replay decides nothing live."""
    if thesis.run.is_replay and not replay:
        raise DecisionRefused(
            "this thesis belongs to a history replay; it is decided by the replay's policy, not from the live desk"
        )
    if replay and not thesis.run.is_replay:
        raise DecisionRefused("a replay cannot decide a live thesis")


def directives_in_force(strategy_id: int, *, is_replay: bool, as_of: dt.date | None = None) -> list[StrategyDirective]:
    """The critique directives a strategy is under (not lifted), oldest first. A replay's are its
    own: a live directive never binds a replay, nor a replay's the live desk. ``as_of`` leaves out a
    replay's directives opened after that day."""
    rows = StrategyDirective.objects.filter(strategy_id=strategy_id, is_replay=is_replay, lifted_at__isnull=True)
    if as_of is not None:
        rows = rows.filter(opened_on__lte=as_of)
    return list(rows.order_by("sequence", "id"))


def _blocking_action(item: object) -> str:
    if not isinstance(item, dict):
        return str(item)
    label = item.get("number") or item.get("id") or "?"
    return f"action {label} ({item.get('kind', 'free_form')}): {' '.join(str(item.get('text', '')).split())}"


def gate_reason(directives: list[StrategyDirective]) -> str:
    """Why the strategy is held by its critique, naming each incomplete required action; "" when no
    directive blocks. The gate is this data, checked in code: what the agents were told plays no part."""
    blocking = [directive for directive in directives if directive.is_blocking]
    if not blocking:
        return ""
    parts = [
        f"critique directive #{directive.sequence} has {len(directive.blocking)} required action(s) incomplete: "
        + "; ".join(_blocking_action(item) for item in directive.blocking)
        for directive in blocking
    ]
    return " | ".join(parts)


def strategy_gate(strategy_id: int | None, *, is_replay: bool, as_of: dt.date | None = None) -> str:
    """``gate_reason`` of the strategy's directives in force; "" for a run of no strategy."""
    if strategy_id is None:
        return ""
    return gate_reason(directives_in_force(strategy_id, is_replay=is_replay, as_of=as_of))


def _refuse_if_gated(thesis: Thesis, user: User | AnonymousUser, *, as_of: dt.date | None) -> None:
    """A thesis of a strategy under a blocking directive is not approved, however it got into the
    queue (one proposed before the critique, or a run that proceeded at its deadline)."""
    strategy_run = thesis.run.strategy_run
    if strategy_run is None:
        return
    held = strategy_gate(strategy_run.strategy_id, is_replay=thesis.run.is_replay, as_of=as_of)
    if held:
        reason = f"the strategy {strategy_run.strategy.name} is held by its critique: {held}"
        audit_record(actor=user, action="approval_refused", target=f"thesis {thesis.pk}", reason=reason)
        raise DecisionRefused(reason)


def _refusal_from(decision: RiskDecision) -> DecisionRefused:
    """The failing checks are named in the sentence; their figures are in ``checks`` (each on its
    own line on the page, a list in the API's 409 and in the audit record)."""
    failed = [check for check in decision.checks if not check.passed]
    names = ", ".join(check.name for check in failed)
    return DecisionRefused(
        f"the book has moved since this thesis was sized: {len(failed)} risk check(s) fail against the live "
        f"book now ({names})",
        checks=[check.to_dict() for check in failed],
    )


def thesis_approve(
    *,
    thesis: Thesis,
    user: User | AnonymousUser,
    comment: str = "",
    now: dt.datetime | None = None,
    as_of: dt.date | None = None,
    replay: bool = False,
) -> Order:
    """Approve and place the order. Refuses (DecisionRefused) without the permission, after a
    decision, after the risk engine said no, after expiry, when the price has moved on, when the
    instrument already has a live idea in the book, when the thesis's strategy is held by a blocking
    critique directive, or when the checks fail against the live book.
    ``as_of`` bounds the staleness check and names the trading day for history replays (live: the
    latest bar and today); ``replay`` is the replay's own approval, the only one its theses take."""
    from trading.book.broker import order_place

    now = now or timezone.now()
    _check_permission(user)
    _refuse_across_books(thesis, replay=replay)
    _refuse_if_decided(thesis)
    if not thesis.risk_approved:
        raise DecisionRefused("the risk engine rejected this thesis; it cannot be approved")
    _refuse_if_gated(thesis, user, as_of=as_of if replay else None)
    _expire_if_due(thesis, now)
    staleness = thesis_staleness(thesis, as_of=as_of)
    if staleness and staleness.is_stale:
        raise DecisionRefused(
            f"stale: the close of {staleness.latest_date:%d %b} ({staleness.latest_close}) is "
            f"{staleness.moved} away from the entry {thesis.entry}, more than "
            f"{settings.BROKER['STALE_ATR_MULTIPLE']}×ATR ({staleness.limit:.2f}); re-run the pipeline"
        )
    try:
        with transaction.atomic():
            account = account_lock(thesis.account_id)
            _claim(thesis, status=Thesis.Status.APPROVED, user=user, comment=comment, now=now)
            busy = instrument_live_idea(account, thesis.instrument_id, include_pending=False)
            if busy:
                raise DecisionRefused(f"one live idea per instrument: {thesis.instrument.symbol} {busy}")
            decision = thesis_book_check(thesis, account, entry=thesis.entry, today=as_of or timezone.localdate())
            if not decision.approved:
                raise _refusal_from(decision)
            order = order_place(thesis=thesis, account=account)
            audit_record(
                actor=user,
                action="thesis_approved",
                target=f"thesis {thesis.pk}",
                reason=comment,
                details={"order": order.pk, "quantity": order.quantity, "side": order.side},
            )
    except DecisionRefused as refusal:
        if refusal.checks or refusal.reason.startswith("one live idea"):
            # The claim rolled back with the transaction; the refusal itself is worth a record.
            audit_record(
                actor=user,
                action="approval_refused",
                target=f"thesis {thesis.pk}",
                reason=refusal.reason,
                details={"checks": refusal.checks},
            )
        thesis.refresh_from_db()
        raise
    return order


def thesis_reject(*, thesis: Thesis, user: User | AnonymousUser, comment: str, now: dt.datetime | None = None) -> None:
    now = now or timezone.now()
    _check_permission(user)
    if not comment.strip():
        raise DecisionInputRefused("say why you reject it: a comment is required")
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
