"""A critique's required actions: checked by code where code can check them, attested by an approver
where it cannot, and the directive's gate kept in step with them.

The gate is a ``trading.StrategyDirective`` row (trading owns it; this module writes it): its
``blocking`` list holds the incomplete required actions, and a DIRECTIVE with any is a hard gate on
the strategy (its runs decide HOLD, none of its theses reaches approval). When its last action is
complete the directive is lifted. Every completion, attestation and lift is audited.

The five machine checks read stored rows only, as of ``as_of``, and only what happened since the
critique (rows created at or after it): what the strategy did before it was told cannot complete
an action.

- ``log_signal_ics``: rank ICs logged (``reviews.critique.signal_ics``) for at least N signal families.
- ``reduce_concentration``: the account's largest open position below X% of its capital.
- ``write_lesson``: a lesson in memory for the named losing position, written since the critique.
- ``calibrate_confidence``: the strategy's stated conviction since the critique within Y of the
  empirical win rate of its closed positions, over enough of both.
- ``stop_citing``: no citation of the named heuristic by the strategy's runs since the critique, and
  at least one run since that had its say (its analysts' notes were written).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Q
from django.utils import timezone

from agents.models import MemoryEntry
from reviews.models import Critique, CritiqueAction, SignalIC, TradeReview
from trading.audit import audit_record
from trading.book.accounts import default_account, replay_account
from trading.models import (
    DebateRecord,
    HeuristicCitation,
    PipelineRun,
    Position,
    StageRun,
    Strategy,
    StrategyDirective,
)
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

logger = logging.getLogger(__name__)

ATTEST_PERMISSION = "trading.approve_thesis"
Kind = CritiqueAction.Kind
# calibrate_confidence: at least this many stated convictions since the critique, and closed
# positions, before a gap is worth measuring.
MIN_CALIBRATION_COUNT = 5
DEFAULT_MAX_PCT = 20.0
DEFAULT_MAX_GAP = 0.10


@dataclass(frozen=True)
class CheckResult:
    done: bool
    detail: str


@dataclass(frozen=True)
class _Scope:
    """What a check reads: the strategy's own rows (live or its replay) up to ``as_of``, and only
    rows created since the critique."""

    strategy: Strategy
    is_replay: bool
    as_of: dt.date
    since: dt.datetime
    critique_as_of: dt.date

    def runs(self) -> Any:
        """The strategy's pipeline runs made since the critique, as of ``as_of``."""
        return PipelineRun.objects.filter(
            strategy_run__strategy=self.strategy,
            is_replay=self.is_replay,
            created_at__gte=self.since,
            as_of__lte=self.as_of,
        )


def _int(params: dict[str, Any], key: str, default: int) -> int:
    try:
        return int(params.get(key, default))
    except (TypeError, ValueError):
        return default


def _float(params: dict[str, Any], key: str, default: float) -> float:
    try:
        return float(params.get(key, default))
    except (TypeError, ValueError):
        return default


# --- the five machine checks -------------------------------------------------------------------


def check_log_signal_ics(scope: _Scope, params: dict[str, Any]) -> CheckResult:
    """Log today's rank ICs, then count the signal families with an IC logged since the critique."""
    from reviews.critique.signal_ics import signal_ics_log

    needed = _int(params, "min_families", int(cast(int, settings.CRITIQUE["MIN_IC_FAMILIES"])))
    signal_ics_log(scope.strategy, as_of=scope.as_of, is_replay=scope.is_replay)
    families = sorted(
        set(
            SignalIC.objects.filter(
                strategy=scope.strategy,
                is_replay=scope.is_replay,
                as_of__gte=scope.critique_as_of,
                as_of__lte=scope.as_of,
                ic__isnull=False,
            ).values_list("family", flat=True)
        )
    )
    listed = ", ".join(families) or "none"
    return CheckResult(
        len(families) >= needed, f"rank ICs logged for {len(families)} signal families ({listed}); {needed} required"
    )


def _position_notional(position: Position) -> Decimal:
    price = position.last_mark if position.last_mark is not None else position.entry_price
    return price * position.quantity


def check_reduce_concentration(scope: _Scope, params: dict[str, Any]) -> CheckResult:
    """The account's largest open position (marked at its last close) against its capital."""
    limit = _float(params, "max_pct", DEFAULT_MAX_PCT)
    account = replay_account(scope.strategy.name) if scope.is_replay else default_account()
    open_positions = Position.objects.filter(
        account=account, status=Position.Status.OPEN, opened_on__lte=scope.as_of
    ).select_related("instrument")
    largest = max(open_positions, key=_position_notional, default=None)
    if largest is None or account.capital <= 0:
        return CheckResult(True, f"no open position in {account.name}; {limit:g}% of capital allowed")
    share = float(_position_notional(largest) / account.capital * 100)
    return CheckResult(
        share < limit,
        f"largest open position {largest.instrument.symbol} (position {largest.pk}) is {share:.2f}% of capital; "
        f"below {limit:g}% required",
    )


def check_write_lesson(scope: _Scope, params: dict[str, Any]) -> CheckResult:
    """A lesson for the named position written since the critique: a memory entry tagged with it, or
    the lessons of its trade review."""
    position_id = _int(params, "position_id", 0)
    position = Position.objects.filter(pk=position_id).first()
    if position is None:
        return CheckResult(False, f"position {position_id} does not exist")
    tagged = MemoryEntry.objects.filter(
        Q(tags__position=str(position_id)) | Q(tags__position_id=str(position_id)) | Q(review__position=position),
        created_at__gte=scope.since,
    ).exists()
    reviewed = TradeReview.objects.filter(position=position, created_at__gte=scope.since).exclude(lessons=[]).exists()
    if tagged or reviewed:
        return CheckResult(True, f"a lesson for position {position_id} is in memory, written since the critique")
    return CheckResult(False, f"no lesson for position {position_id} written since the critique")


def empirical_win_rate(strategy: Strategy, *, is_replay: bool, as_of: dt.date) -> tuple[int, int]:
    """(wins, closed): the strategy's closed positions up to ``as_of`` and how many made money."""
    closed = Position.objects.filter(
        thesis__run__strategy_run__strategy=strategy,
        is_replay=is_replay,
        status=Position.Status.CLOSED,
        closed_on__lte=as_of,
    ).exclude(realised_pnl=None)
    return closed.filter(realised_pnl__gt=0).count(), closed.count()


def check_calibrate_confidence(scope: _Scope, params: dict[str, Any]) -> CheckResult:
    """Mean calibrated conviction of the debates since the critique (what each thesis carries, also
    for a run the gate held) against the win rate of the strategy's closed positions."""
    max_gap = _float(params, "max_gap", DEFAULT_MAX_GAP)
    minimum = _int(params, "min_count", MIN_CALIBRATION_COUNT)
    debates = DebateRecord.objects.filter(run__in=scope.runs())
    stated = debates.aggregate(mean=Avg("conviction"))["mean"]
    count = debates.count()
    wins, total = empirical_win_rate(scope.strategy, is_replay=scope.is_replay, as_of=scope.as_of)
    if count < minimum or total < minimum or stated is None:
        return CheckResult(
            False,
            f"{count} stated conviction(s) since the critique and {total} closed position(s); {minimum} of each needed",
        )
    win_rate = wins / total
    gap = abs(float(stated) - win_rate)
    return CheckResult(
        gap <= max_gap,
        f"mean conviction {float(stated):.4f} over {count} debate(s) vs win rate {win_rate:.4f} ({wins}/{total}): "
        f"gap {gap:.4f}, at most {max_gap:g} required",
    )


def check_stop_citing(scope: _Scope, params: dict[str, Any]) -> CheckResult:
    """No run of the strategy since the critique cited the code, and at least one had its say."""
    code = str(params.get("code", "")).strip().upper()
    runs = scope.runs()
    cited = HeuristicCitation.objects.filter(run__in=runs, code__iexact=code).values_list("run_id", flat=True)
    heard = (
        StageRun.objects.filter(run__in=runs, stage="analysts", status=StageRun.Status.DONE)
        .values("run_id")
        .distinct()
        .count()
    )
    if cited:
        listed = ", ".join(f"run {pk}" for pk in sorted(set(cited))[:5])
        return CheckResult(False, f"{code} still cited since the critique ({listed})")
    if not heard:
        return CheckResult(False, f"no run of the strategy has written its notes since the critique; {code} unproven")
    return CheckResult(True, f"{code} not cited by the {heard} run(s) since the critique")


CHECKS: dict[str, Callable[[_Scope, dict[str, Any]], CheckResult]] = {
    Kind.LOG_SIGNAL_ICS: check_log_signal_ics,
    Kind.REDUCE_CONCENTRATION: check_reduce_concentration,
    Kind.WRITE_LESSON: check_write_lesson,
    Kind.CALIBRATE_CONFIDENCE: check_calibrate_confidence,
    Kind.STOP_CITING: check_stop_citing,
}


def is_machine_checked(kind: str) -> bool:
    return kind in CHECKS


# --- checking, attesting, and the directive's gate -----------------------------------------------


def _check_one(action: CritiqueAction, *, strategy: Strategy, is_replay: bool, as_of: dt.date) -> bool:
    """Run one action's check; mark it done (audited) when it passes. A check that breaks leaves the
    action open with why: it blocks until it can be checked, never passes by accident."""
    critique = action.critique
    scope = _Scope(
        strategy=strategy, is_replay=is_replay, as_of=as_of, since=critique.created_at, critique_as_of=critique.as_of
    )
    now = timezone.now()
    try:
        result = CHECKS[action.kind](scope, dict(action.params or {}))
    except Exception as error:
        logger.exception("check of critique action %s failed", action.pk)
        result = CheckResult(False, f"the check could not run: {type(error).__name__}: {error}")
    if not result.done:
        CritiqueAction.objects.filter(pk=action.pk, status=CritiqueAction.Status.OPEN).update(
            check_detail=result.detail, checked_at=now
        )
        action.check_detail, action.checked_at = result.detail, now
        return False
    done = CritiqueAction.objects.filter(pk=action.pk, status=CritiqueAction.Status.OPEN).update(
        status=CritiqueAction.Status.DONE, check_detail=result.detail, checked_at=now, completed_at=now
    )
    if not done:
        return False
    action.status, action.check_detail, action.checked_at, action.completed_at = (
        CritiqueAction.Status.DONE,
        result.detail,
        now,
        now,
    )
    audit_record(
        action="critique_action_done",
        target=f"critique {critique.pk} action {action.number}",
        reason=result.detail,
        details={"kind": action.kind, "strategy": strategy.pk, "as_of": as_of.isoformat(), "replay": is_replay},
    )
    return True


def actions_check(strategy: Strategy, *, is_replay: bool, as_of: dt.date) -> list[CritiqueAction]:
    """Check every open machine-checkable action of the strategy's critiques (live, or its replay's),
    then bring its directives' gates up to date. Returns the actions this call completed."""
    open_actions = (
        CritiqueAction.objects.filter(
            critique__strategy=strategy,
            critique__is_replay=is_replay,
            critique__as_of__lte=as_of,
            status=CritiqueAction.Status.OPEN,
            kind__in=list(CHECKS),
        )
        .select_related("critique")
        .order_by("critique__sequence", "number")
    )
    completed = [
        action for action in open_actions if _check_one(action, strategy=strategy, is_replay=is_replay, as_of=as_of)
    ]
    directives_update(strategy, is_replay=is_replay)
    return completed


def _blocking_item(action: CritiqueAction) -> dict[str, Any]:
    return {"id": action.pk, "number": action.number, "kind": action.kind, "text": action.text}


def _lift(directive: StrategyDirective, reason: str) -> None:
    lifted = StrategyDirective.objects.filter(pk=directive.pk, lifted_at__isnull=True).update(
        lifted_at=timezone.now(), lifted_reason=reason, blocking=[]
    )
    if lifted:
        audit_record(
            action="directive_lifted",
            target=f"strategy {directive.strategy_id} directive #{directive.sequence}",
            reason=reason,
            details={"directive": directive.pk, "critique": directive.source_ref, "replay": directive.is_replay},
        )


def directives_update(strategy: Strategy, *, is_replay: bool) -> list[StrategyDirective]:
    """Each directive in force: its ``blocking`` list is its critique's incomplete actions. It is
    lifted when it had actions and all are complete, or when it asks nothing more and a later
    critique's directive has replaced it. Returns those still in force."""
    directives = list(
        StrategyDirective.objects.filter(strategy=strategy, is_replay=is_replay, lifted_at__isnull=True).order_by(
            "sequence"
        )
    )
    latest = max((directive.sequence for directive in directives), default=0)
    in_force = []
    for directive in directives:
        actions = list(CritiqueAction.objects.filter(critique_id=directive.source_ref).order_by("number"))
        incomplete = [_blocking_item(action) for action in actions if not action.is_complete]
        if actions and not incomplete:
            _lift(directive, f"all {len(actions)} required action(s) of critique #{directive.sequence} complete")
            continue
        if not incomplete and directive.sequence < latest:
            _lift(directive, f"nothing left to do; replaced by critique #{latest}")
            continue
        if incomplete != directive.blocking:
            StrategyDirective.objects.filter(pk=directive.pk).update(blocking=incomplete)
            directive.blocking = incomplete
        in_force.append(directive)
    return in_force


def _critique_of(action: CritiqueAction) -> Critique:
    return Critique.objects.select_related("strategy").get(pk=action.critique_id)


def action_attest(action: CritiqueAction, *, user: User | AnonymousUser, comment: str) -> CritiqueAction:
    """An approver attests a free-form action, with a comment saying what was done. Refused for anyone
    else, without a comment, for a kind code checks, and for an action already complete."""
    if not user.has_perm(ATTEST_PERMISSION):
        raise NotAllowed("only approvers can attest a critique's required action")
    comment = comment.strip()
    if not comment:
        raise InputRefused("say what was done: an attestation needs a comment")
    if is_machine_checked(action.kind):
        raise StateConflict(
            f"action {action.number} ({action.kind}) is checked by code, not attested: "
            "it completes when its check passes"
        )
    now = timezone.now()
    with transaction.atomic():
        attested = CritiqueAction.objects.filter(pk=action.pk, status=CritiqueAction.Status.OPEN).update(
            status=CritiqueAction.Status.ATTESTED, attested_by=user, attestation=comment, completed_at=now
        )
        if not attested:
            action.refresh_from_db()
            raise StateConflict(f"action {action.number} is already {action.get_status_display()}")
        critique = _critique_of(action)
        audit_record(
            actor=user,
            action="critique_action_attested",
            target=f"critique {critique.pk} action {action.number}",
            reason=comment,
            details={"kind": action.kind, "strategy": critique.strategy_id, "replay": critique.is_replay},
        )
        directives_update(critique.strategy, is_replay=critique.is_replay)
    action.refresh_from_db()
    return action
