"""When a retrospective runs, and how each runs exactly once.

**The claim.** Every review is keyed by the event or period that caused it
(``RetrospectiveReport.trigger_key``, unique): ``daily:<account>:<day>``, ``weekly:<account>:<end>``
(``weekly:<account>:s<strategy>:<end>`` for one live strategy), ``epoch:<account>:<end>``,
``position:<id>``, ``loss:<id>``, ``testament:strategy:<id>``. ``run_review`` creates the row or finds
it, then claims an attempt with a conditional update (``attempts`` from n to n + 1): of two callers
that meet on the same attempt, one proceeds and the other returns the row as it is. A READY row is
returned untouched. A RUNNING row (its worker died: Celery delivers the task again, ``acks_late``)
or a FAILED one is taken up by the next attempt and finished; the hard part it already stored is
reused, as every stage keeps its output before the next starts.

**The finish** is one transaction: the row turns READY only if this attempt still holds it (a
later attempt that took it over wins instead), and what a READY review does to the rest of the
desk happens in the same transaction, so it happens once: the narrative's proposals become
candidate heuristics, a testament is written to memory, a position retrospective updates its
lesson with hindsight (``reviews.hindsight.apply_hindsight``) and a weekly review judges the
strategy's effectiveness (``reviews.effectiveness.after_weekly_review``). A failure there leaves
the row FAILED with its reason, for the next attempt.

**The schedules** (Celery beat, ``reviews.tasks``): ``daily_reviews`` reviews the previous session
of every account that was active in it; ``weekly_reviews`` the seven days ending that day, per
account and per live strategy; ``epoch_reviews`` every ``EPOCH_INTERVAL_DAYS`` since an account's
last epoch (or its first activity). **The events**: a closed position gets its retrospective at
once (``on_position_closed``; a live close through the ``reviews.review_position`` task, a replay's
in its own process); a realised loss larger than ``LOSS_REVIEW_THRESHOLD_PCT`` of the account's
equity gets an immediate loss review; a retired strategy gets its testament
(``on_strategy_retired``), whose narrative goes into memory.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Max, Min, Q, Sum
from django.utils import timezone

from agents.domain.memory import LIVE_SCOPE
from agents.models import MemoryEntry
from reviews.models import RetrospectiveReport
from reviews.narrative import NarrativeOutcome, narrate, propose
from reviews.retrospective import REPLAY_ACCOUNT_PREFIX, build_hard_part, position_lifecycle_block
from trading.audit import audit_record
from trading.book.accounts import default_account, replay_account
from trading.models import Account, DailyBar, Order, Position, Strategy, StrategyRun, Thesis

__all__ = [
    "EPOCH_CATCH_UP",
    "daily_reviews",
    "epoch_reviews",
    "loss_period",
    "loss_review_due",
    "on_position_closed",
    "on_strategy_retired",
    "previous_session",
    "run_review",
    "weekly_reviews",
]

logger = logging.getLogger(__name__)

Horizon = RetrospectiveReport.Horizon
Status = RetrospectiveReport.Status
# Epochs an account may catch up in one evening (after a long pause of the scheduler).
EPOCH_CATCH_UP = 12
# A scheduled pass retries the FAILED reviews of its horizon made within this many days.
RETRY_DAYS = 7
MAX_ATTEMPTS = 5
TESTAMENT_CHARS = 1500


# --- one review, exactly once --------------------------------------------------------------------


def run_review(
    *,
    trigger_key: str,
    horizon: str,
    account: Account,
    start: dt.date,
    end: dt.date,
    strategy: Strategy | None = None,
    position: Position | None = None,
) -> RetrospectiveReport:
    """Run the review keyed ``trigger_key`` (see the module): claimed once, finished once, a READY
    one returned untouched. A database error is raised for the task to retry; any other error
    leaves the row FAILED with its reason and is logged."""
    report, attempt = _claim(
        trigger_key=trigger_key,
        horizon=horizon,
        account=account,
        start=start,
        end=end,
        strategy=strategy,
        position=position,
    )
    if attempt is None:
        return report
    try:
        hard = report.hard or _stored_hard_part(report, attempt)
        outcome = narrate(report, hard)
        return _finish(report, attempt, hard, outcome)
    except DatabaseError:
        raise
    except Exception as error:
        logger.exception("retrospective %s (%s) failed", report.pk, trigger_key)
        return _fail(report, attempt, error)


def _claim(
    *,
    trigger_key: str,
    horizon: str,
    account: Account,
    start: dt.date,
    end: dt.date,
    strategy: Strategy | None,
    position: Position | None,
) -> tuple[RetrospectiveReport, int | None]:
    """The report row and the attempt this caller claimed, or None when it may not work on it."""
    defaults = {
        "horizon": horizon,
        "account": account,
        "strategy": strategy,
        "position": position,
        "period_start": start,
        "period_end": end,
        "is_replay": account.name.startswith(REPLAY_ACCOUNT_PREFIX) or bool(position and position.is_replay),
    }
    try:
        with transaction.atomic():
            report, _ = RetrospectiveReport.objects.get_or_create(trigger_key=trigger_key, defaults=defaults)
    except IntegrityError:  # another caller created it between our read and our write
        report = RetrospectiveReport.objects.get(trigger_key=trigger_key)
    if report.status == Status.READY:
        return report, None
    attempt = report.attempts + 1
    claimed = (
        RetrospectiveReport.objects.filter(pk=report.pk, attempts=report.attempts)
        .exclude(status=Status.READY)
        .update(attempts=attempt, status=Status.RUNNING, error="")
    )
    report.refresh_from_db()
    return report, attempt if claimed else None


def _stored_hard_part(report: RetrospectiveReport, attempt: int) -> dict[str, Any]:
    """Compute the hard part and keep it on the row before the narrative is asked for."""
    hard = build_hard_part(
        account=report.account,
        start=report.period_start,
        end=report.period_end,
        strategy=report.strategy,
        position=report.position if report.horizon == Horizon.POSITION else None,
    )
    if report.horizon == Horizon.LOSS and report.position is not None:
        hard["lifecycle"] = position_lifecycle_block(report.position)
    RetrospectiveReport.objects.filter(pk=report.pk, attempts=attempt).update(hard=hard)
    report.hard = hard
    return hard


def _finish(
    report: RetrospectiveReport, attempt: int, hard: dict[str, Any], outcome: NarrativeOutcome
) -> RetrospectiveReport:
    with transaction.atomic():
        won = RetrospectiveReport.objects.filter(pk=report.pk, attempts=attempt, status=Status.RUNNING).update(
            status=Status.READY,
            hard=hard,
            narrative=outcome.narrative,
            ungrounded=outcome.ungrounded,
            confidence=outcome.confidence,
            model_used=outcome.model_used[:200],
            tier=outcome.tier[:8],
            error=outcome.error,
            finished_at=timezone.now(),
        )
        report.refresh_from_db()
        if not won:
            return report  # a later attempt took it over; it finishes and acts
        _after_ready(report)
    return report


def _after_ready(report: RetrospectiveReport) -> None:
    """What a READY review does to the rest of the desk, once (inside the finishing transaction)."""
    from reviews.effectiveness import after_weekly_review
    from reviews.hindsight import apply_hindsight

    candidates = propose(report)
    if report.horizon == Horizon.TESTAMENT:
        _testament_memory(report)
    if report.horizon == Horizon.POSITION:
        apply_hindsight(report)
    if report.horizon == Horizon.WEEKLY:
        after_weekly_review(report)
    audit_record(
        action="retrospective_ready",
        target=f"retrospective {report.pk}",
        reason=report.trigger_key,
        details={
            "horizon": report.horizon,
            "period": [report.period_start.isoformat(), report.period_end.isoformat()],
            "net": ((report.hard or {}).get("attribution") or {}).get("net"),
            "ungrounded": len(report.ungrounded or []),
            "candidates": candidates,
            "narrative_error": report.error,
            "attempts": report.attempts,
        },
    )


def _fail(report: RetrospectiveReport, attempt: int, error: Exception) -> RetrospectiveReport:
    reason = f"{type(error).__name__}: {' '.join(str(error).split())}"
    RetrospectiveReport.objects.filter(pk=report.pk, attempts=attempt).exclude(status=Status.READY).update(
        status=Status.FAILED, error=reason, finished_at=timezone.now()
    )
    report.refresh_from_db()
    return report


def _testament_memory(report: RetrospectiveReport) -> MemoryEntry:
    """The retired strategy's last lesson, for every later run to recall: the narrative's
    hindsight and its first points, or, without a narrative, the figures themselves."""
    name = report.strategy.name if report.strategy is not None else report.account.name
    narrative = report.narrative or {}
    hard = report.hard or {}
    figures = (
        f"net {(hard.get('attribution') or {}).get('net')} over {(hard.get('inaction') or {}).get('positions')} "
        f"closed positions, inaction superiority {(hard.get('inaction') or {}).get('superiority')}"
    )
    parts = [f"Testament of strategy {name} ({report.period_start} to {report.period_end}): {figures}."]
    if narrative:
        parts += [str(narrative.get("hindsight") or "")]
        parts += [f"Worked: {point}" for point in (narrative.get("what_worked") or [])[:1]]
        parts += [f"Failed: {point}" for point in (narrative.get("what_failed") or [])[:1]]
    text = " ".join(part for part in parts if part)[:TESTAMENT_CHARS]
    return MemoryEntry.objects.create(
        kind="testament",
        symbol="",
        text=text,
        tags={"strategy": name, "horizon": "testament", "report": str(report.pk)},
        created_on=report.period_end,
        scope=LIVE_SCOPE,
    )


# --- events --------------------------------------------------------------------------------------


def on_position_closed(position: Position) -> None:
    """A closed position's retrospective (``RETROSPECTIVE["POSITION_CLOSE_REVIEW"]``) and, when its
    realised loss is large enough (``loss_review_due``), an immediate loss review."""
    closed_on = position.closed_on
    if position.status != Position.Status.CLOSED or closed_on is None:
        raise ValueError(f"position {position.pk} is not closed: only a closed position has a retrospective")
    retro = settings.RETROSPECTIVE
    if retro["POSITION_CLOSE_REVIEW"]:
        run_review(
            trigger_key=f"position:{position.pk}",
            horizon=Horizon.POSITION,
            account=position.account,
            start=position.opened_on,
            end=closed_on,
            position=position,
        )
    if loss_review_due(position):
        start, end = loss_period(position)
        run_review(
            trigger_key=f"loss:{position.pk}",
            horizon=Horizon.LOSS,
            account=position.account,
            start=start,
            end=end,
            position=position,
        )


def loss_period(position: Position) -> tuple[dt.date, dt.date]:
    """A loss review reads the account's book over the week up to the close (the context the loss
    happened in) and the losing position's own lifecycle."""
    closed_on = position.closed_on
    if closed_on is None:
        raise ValueError(f"position {position.pk} is not closed")
    return max(position.opened_on, closed_on - dt.timedelta(days=6)), closed_on


def loss_review_due(position: Position) -> bool:
    """Whether the position's realised loss exceeds ``LOSS_REVIEW_THRESHOLD_PCT`` per cent of the
    account's equity just before it was booked (capital, every realised result but this one, and
    the open positions' marks)."""
    loss = position.realised_pnl
    if loss is None or loss >= 0:
        return False
    account = position.account
    positions = Position.objects.filter(account=account)
    realised = positions.filter(status=Position.Status.CLOSED).exclude(pk=position.pk).aggregate(
        total=Sum("realised_pnl")
    )["total"] or Decimal(0)
    marks = positions.filter(status=Position.Status.OPEN).aggregate(total=Sum("unrealised_pnl"))["total"] or Decimal(0)
    equity = account.capital + realised + marks
    threshold = Decimal(str(settings.RETROSPECTIVE["LOSS_REVIEW_THRESHOLD_PCT"]))
    return equity > 0 and -loss * 100 > threshold * equity


def on_strategy_retired(strategy: Strategy) -> RetrospectiveReport:
    """The retired strategy's testament: an epoch-like review of its whole life on the live book,
    on the deep tier, whose narrative is written into memory."""
    end = timezone.localdate(strategy.retired_at) if strategy.retired_at else timezone.localdate()
    first_live = StrategyRun.objects.filter(strategy=strategy, is_replay=False).aggregate(first=Min("as_of"))["first"]
    first_replayed = StrategyRun.objects.filter(strategy=strategy, is_replay=True).aggregate(first=Min("as_of"))[
        "first"
    ]
    # A strategy that only ever ran in replay lived in its replay account: that is its life.
    replayed_only = first_live is None and first_replayed is not None
    account = replay_account(strategy.name) if replayed_only else default_account()
    first_run = first_replayed if replayed_only else first_live
    start = min(day for day in (timezone.localdate(strategy.created_at), first_run, end) if day is not None)
    return run_review(
        trigger_key=f"testament:strategy:{strategy.pk}",
        horizon=Horizon.TESTAMENT,
        account=account,
        start=start,
        end=end,
        strategy=strategy,
    )


# --- schedules -----------------------------------------------------------------------------------


def previous_session(day: dt.date) -> tuple[dt.date, dt.date] | None:
    """The last session before ``day`` as a period: from the day after the session before it (so
    consecutive daily reviews cover every calendar day once) to the session itself."""
    last = DailyBar.objects.filter(date__lt=day).aggregate(last=Max("date"))["last"]
    if last is None:
        return None
    before = DailyBar.objects.filter(date__lt=last).aggregate(last=Max("date"))["last"]
    return (before + dt.timedelta(days=1) if before else last), last


def _active_account_ids(start: dt.date, end: dt.date) -> set[int]:
    """Accounts that did something in the period: closed or filled, placed an order, sized a thesis,
    or held a live position through it."""
    closed = Position.objects.filter(closed_on__gte=start, closed_on__lte=end)
    held = Position.objects.filter(is_replay=False, opened_on__lte=end).filter(
        Q(closed_on__isnull=True) | Q(closed_on__gte=start)
    )
    orders = Order.objects.filter(
        Q(placed_on__gte=start, placed_on__lte=end) | Q(filled_on__gte=start, filled_on__lte=end)
    )
    theses = Thesis.objects.filter(run__as_of__gte=start, run__as_of__lte=end)
    ids: set[int] = set()
    for rows in (closed, held, orders, theses):
        ids.update(rows.values_list("account_id", flat=True).distinct())
    return ids


def _accounts(ids: set[int]) -> list[Account]:
    return list(Account.objects.filter(pk__in=ids).order_by("pk"))


def _retry_failed(horizon: str) -> list[RetrospectiveReport]:
    """FAILED reviews of the horizon from the last week, tried again (up to ``MAX_ATTEMPTS``)."""
    since = timezone.now() - dt.timedelta(days=RETRY_DAYS)
    failed = RetrospectiveReport.objects.filter(
        horizon=horizon, status=Status.FAILED, attempts__lt=MAX_ATTEMPTS, created_at__gte=since
    ).select_related("account", "strategy", "position")
    return [_again(report) for report in failed]


def _again(report: RetrospectiveReport) -> RetrospectiveReport:
    return run_review(
        trigger_key=report.trigger_key,
        horizon=report.horizon,
        account=report.account,
        start=report.period_start,
        end=report.period_end,
        strategy=report.strategy,
        position=report.position,
    )


def _each(accounts: list[Account], review: Callable[[Account], RetrospectiveReport]) -> list[RetrospectiveReport]:
    """One review per account; a database error stops the pass (the task retries it, and the
    reviews already READY are skipped then)."""
    return [review(account) for account in accounts]


def daily_reviews(*, day: dt.date | None = None) -> list[RetrospectiveReport]:
    """The previous session's review of every account active in it (``day``: today by default)."""
    today = day or timezone.localdate()
    period = previous_session(today)
    reports = _retry_failed(Horizon.DAILY)
    if period is None:
        return reports
    start, end = period

    def review(account: Account) -> RetrospectiveReport:
        return run_review(
            trigger_key=f"daily:{account.pk}:{end.isoformat()}",
            horizon=Horizon.DAILY,
            account=account,
            start=start,
            end=end,
        )

    return reports + _each(_accounts(_active_account_ids(start, end)), review)


def _active_live_strategies(start: dt.date, end: dt.date) -> list[Strategy]:
    """Live strategies that ran, or whose positions closed, in the period."""
    ran = StrategyRun.objects.filter(is_replay=False, as_of__gte=start, as_of__lte=end).values_list(
        "strategy_id", flat=True
    )
    closed = Position.objects.filter(is_replay=False, closed_on__gte=start, closed_on__lte=end).values_list(
        "thesis__run__strategy_run__strategy_id", flat=True
    )
    ids = {pk for pk in [*ran, *closed] if pk is not None}
    return list(Strategy.objects.filter(pk__in=ids).order_by("pk"))


def weekly_reviews(*, day: dt.date | None = None) -> list[RetrospectiveReport]:
    """The seven days ending ``day`` (today by default): one review per active account, and one
    per live strategy active in the week (its effectiveness is judged on its own positions)."""
    end = day or timezone.localdate()
    start = end - dt.timedelta(days=6)
    reports = _retry_failed(Horizon.WEEKLY)

    def review(account: Account) -> RetrospectiveReport:
        return run_review(
            trigger_key=f"weekly:{account.pk}:{end.isoformat()}",
            horizon=Horizon.WEEKLY,
            account=account,
            start=start,
            end=end,
        )

    reports += _each(_accounts(_active_account_ids(start, end)), review)
    live = default_account()
    for strategy in _active_live_strategies(start, end):
        reports.append(
            run_review(
                trigger_key=f"weekly:{live.pk}:s{strategy.pk}:{end.isoformat()}",
                horizon=Horizon.WEEKLY,
                account=live,
                start=start,
                end=end,
                strategy=strategy,
            )
        )
    return reports


def _first_activity(account: Account) -> dt.date | None:
    """The account's first day of business: its first order or its first thesis."""
    days = [
        Order.objects.filter(account=account).aggregate(first=Min("placed_on"))["first"],
        Thesis.objects.filter(account=account).aggregate(first=Min("run__as_of"))["first"],
    ]
    known = [day for day in days if day is not None]
    return min(known) if known else None


def _epochs_due(account: Account, today: dt.date, interval: int) -> list[tuple[dt.date, dt.date]]:
    """The account's epochs that ended before ``today``: each ``interval`` days from the day after
    its last epoch, or from its first activity (at most ``EPOCH_CATCH_UP`` of them, oldest first)."""
    last = (
        RetrospectiveReport.objects.filter(account=account, horizon=Horizon.EPOCH, strategy__isnull=True)
        .order_by("-period_end")
        .values_list("period_end", flat=True)
        .first()
    )
    start = last + dt.timedelta(days=1) if last else _first_activity(account)
    due: list[tuple[dt.date, dt.date]] = []
    while start is not None and len(due) < EPOCH_CATCH_UP:
        end = start + dt.timedelta(days=interval - 1)
        if end >= today:
            break
        due.append((start, end))
        start = end + dt.timedelta(days=1)
    return due


def epoch_reviews(*, day: dt.date | None = None) -> list[RetrospectiveReport]:
    """Every account's epochs due by ``day`` (today by default): one each ``EPOCH_INTERVAL_DAYS``."""
    today = day or timezone.localdate()
    interval = cast(int, settings.RETROSPECTIVE["EPOCH_INTERVAL_DAYS"])
    reports = _retry_failed(Horizon.EPOCH)
    with_business = set(Order.objects.values_list("account_id", flat=True).distinct()) | set(
        Thesis.objects.values_list("account_id", flat=True).distinct()
    )
    for account in _accounts(with_business):
        for start, end in _epochs_due(account, today, interval):
            reports.append(
                run_review(
                    trigger_key=f"epoch:{account.pk}:{end.isoformat()}",
                    horizon=Horizon.EPOCH,
                    account=account,
                    start=start,
                    end=end,
                )
            )
    return reports
