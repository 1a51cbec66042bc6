"""Reads for the review pages and the reviews' API: the latest ready review of each horizon for a
book, the event reviews beside them, the previous review a diff compares with, the strategies the
weekly reviews flagged, when the scheduled reviews run next, and the filtered lists the API pages.

Every figure shown comes from a report's stored hard part (computed by code when the review ran)
or from ``reviews.domain.diff`` over two of them; nothing is recomputed from the book here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from reviews.domain.diff import DiffInputError, HardDiff, diff_hard_parts
from reviews.models import RetrospectiveReport, TradeReview
from trading import edge
from trading.book.accounts import default_account
from trading.models import Account, Strategy

__all__ = [
    "EVENT_HORIZONS",
    "HOME_HORIZONS",
    "ReportDiff",
    "ScheduledReview",
    "book_choice",
    "flagged_strategies",
    "flags_by_place",
    "latest_reviews",
    "position_retrospectives_matching",
    "previous_review",
    "recent_event_reviews",
    "report_diff",
    "reports_matching",
    "review_name",
    "scheduled_reviews",
    "trade_reviews_matching",
]

Horizon = RetrospectiveReport.Horizon
Status = RetrospectiveReport.Status
HOME_HORIZONS = (Horizon.DAILY, Horizon.WEEKLY, Horizon.EPOCH)
EVENT_HORIZONS = (Horizon.POSITION, Horizon.LOSS, Horizon.TESTAMENT)
HORIZON_VALUES = tuple(Horizon.values)
STATUS_VALUES = tuple(Status.values)
OUTCOMES = ("win", "loss", "scratch")
RECENT_EVENTS = 12
MAX_ID = 2**63 - 1
REVIEW_NAMES: dict[str, str] = {
    Horizon.DAILY: "daily review",
    Horizon.WEEKLY: "weekly review",
    Horizon.EPOCH: "epoch review",
    Horizon.POSITION: "position retrospective",
    Horizon.LOSS: "loss review",
    Horizon.TESTAMENT: "testament",
}

# The beat entries (config/settings.py) that run the scheduled reviews, and the setting that
# switches each off.
SCHEDULE_ENTRIES = {
    Horizon.DAILY: ("reviews.daily_reviews", "DAILY_ENABLED", "DESK_REVIEW_DAILY"),
    Horizon.WEEKLY: ("reviews.weekly_reviews", "WEEKLY_ENABLED", "DESK_REVIEW_WEEKLY"),
    Horizon.EPOCH: ("reviews.epoch_reviews", "EPOCH_ENABLED", "DESK_REVIEW_EPOCH"),
}


# --- the book a page shows -------------------------------------------------------------------


def book_choice(wanted: str) -> tuple[Account, list[Account], bool]:
    """The account ``?account=<id>`` names (the live paper book when blank), every account for the
    selector, and whether the wanted one was unknown (then the live book is shown, and the page
    says so: never silently another book)."""
    live = default_account()
    accounts = list(Account.objects.order_by("id"))
    wanted = wanted.strip()
    if not wanted:
        return live, accounts, False
    chosen = next((account for account in accounts if str(account.pk) == wanted), None)
    return (chosen or live), accounts, chosen is None


# --- the reviews of a book -------------------------------------------------------------------


def _ready(account: Account) -> QuerySet[RetrospectiveReport]:
    return RetrospectiveReport.objects.filter(account=account, status=Status.READY)


def latest_reviews(account: Account) -> dict[str, RetrospectiveReport | None]:
    """The latest READY daily, weekly and epoch review of ``account`` (None where none is ready
    yet), latest by the end of the period they cover."""
    return {
        horizon: _ready(account)
        .filter(horizon=horizon)
        .select_related("strategy")
        .order_by("-period_end", "-id")
        .first()
        for horizon in HOME_HORIZONS
    }


def recent_event_reviews(account: Account, limit: int = RECENT_EVENTS) -> list[RetrospectiveReport]:
    """The latest position retrospectives, loss reviews and testaments of ``account``."""
    return list(
        _ready(account)
        .filter(horizon__in=EVENT_HORIZONS)
        .select_related("position__instrument", "strategy")
        .order_by("-period_end", "-id")[:limit]
    )


def flagged_strategies(account: Account) -> list[Strategy]:
    """Strategies the weekly reviews flagged and that are not retired: every one for the live book,
    only those reviewed on ``account`` for a replay's book."""
    flagged = Strategy.objects.filter(flagged_on__isnull=False, retired_at__isnull=True)
    if account.pk != default_account().pk:
        flagged = flagged.filter(retrospectives__account=account)
    return list(flagged.distinct().order_by("-flagged_on", "name"))


def previous_review(report: RetrospectiveReport) -> RetrospectiveReport | None:
    """The READY review of the same horizon, account and strategy that ended before ``report``'s
    period did (or, ending the same day, was written before it)."""
    earlier = Q(period_end__lt=report.period_end) | Q(period_end=report.period_end, id__lt=report.pk)
    return (
        _ready(report.account)
        .filter(earlier, horizon=report.horizon, strategy=report.strategy)
        .exclude(pk=report.pk)
        .order_by("-period_end", "-id")
        .first()
    )


@dataclass(frozen=True)
class ReportDiff:
    """``report`` against ``previous``; ``diff`` is None with ``reason`` saying why there is none."""

    report: RetrospectiveReport
    previous: RetrospectiveReport | None
    diff: HardDiff | None
    reason: str


def review_name(horizon: str) -> str:
    """'weekly review', 'position retrospective', 'testament': how the pages name a report."""
    return REVIEW_NAMES.get(horizon, f"{horizon} review")


def report_diff(report: RetrospectiveReport) -> ReportDiff:
    name = review_name(report.horizon)
    if report.status != Status.READY:
        reason = f"this {name} is {report.status}: there is nothing to compare until it is ready"
        return ReportDiff(report, None, None, reason)
    previous = previous_review(report)
    if previous is None:
        reason = (
            f"there is no earlier ready {name} of {report.account.name}"
            f"{' for ' + report.strategy.name if report.strategy else ''} to compare this one with"
        )
        return ReportDiff(report, None, None, reason)
    try:
        diff = diff_hard_parts(previous.hard, report.hard)
    except DiffInputError as problem:
        return ReportDiff(report, previous, None, f"the two reports cannot be compared: {problem}")
    return ReportDiff(report, previous, diff, "")


# --- when the scheduled reviews run ---------------------------------------------------------


@dataclass(frozen=True)
class ScheduledReview:
    horizon: str
    enabled: bool
    next_at: dt.datetime | None
    setting: str


def scheduled_reviews(now: dt.datetime | None = None) -> list[ScheduledReview]:
    """When beat next sends each scheduled review, on the desk's clock (None when the entry is
    missing from the schedule or switched off)."""
    now = timezone.localtime(now)
    entries = {entry.get("task"): entry for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    schedule = []
    for horizon, (task, switch, variable) in SCHEDULE_ENTRIES.items():
        enabled = bool(settings.RETROSPECTIVE.get(switch, True))
        entry = entries.get(task)
        next_at = _next_run(entry["schedule"], now) if enabled and entry else None
        schedule.append(ScheduledReview(horizon, enabled, next_at, variable))
    return schedule


def _next_run(schedule: Any, now: dt.datetime) -> dt.datetime | None:
    """A crontab's next time after ``now``, to the minute (or a plain interval's)."""
    try:
        remaining = schedule.remaining_estimate(now)
    except (AttributeError, TypeError, ValueError):
        return None
    moment = timezone.localtime(now + remaining + dt.timedelta(seconds=30))
    return moment.replace(second=0, microsecond=0)


# --- the API's lists ---------------------------------------------------------------------------


def reports_matching(params: Mapping[str, str]) -> QuerySet[RetrospectiveReport]:
    """Reports filtered by ``horizon``, ``account`` (id), ``strategy`` (id) and ``status``, latest
    first. A bad filter, or an account or strategy that does not exist, is refused (400)."""
    reports = RetrospectiveReport.objects.select_related("account", "strategy", "position__instrument")
    if horizon := params.get("horizon", "").strip():
        reports = reports.filter(horizon=edge.parse_choice(horizon, "horizon", HORIZON_VALUES))
    if status := params.get("status", "").strip():
        reports = reports.filter(status=edge.parse_choice(status, "status", STATUS_VALUES))
    reports = _by_account(reports, params)
    if strategy := params.get("strategy", "").strip():
        strategy_id = _parse_id(strategy, "strategy")
        if not Strategy.objects.filter(pk=strategy_id).exists():
            raise edge.InputInvalid(f"there is no strategy {strategy_id}")
        reports = reports.filter(strategy_id=strategy_id)
    return reports.order_by("-period_end", "-id")


def position_retrospectives_matching(params: Mapping[str, str]) -> QuerySet[RetrospectiveReport]:
    """READY position retrospectives, filtered by ``account`` (id) and ``position`` (id)."""
    reports = RetrospectiveReport.objects.filter(horizon=Horizon.POSITION, status=Status.READY).select_related(
        "account", "strategy", "position__instrument"
    )
    reports = _by_account(reports, params)
    if position := params.get("position", "").strip():
        reports = reports.filter(position_id=_parse_id(position, "position"))
    return reports.order_by("-period_end", "-id")


def trade_reviews_matching(params: Mapping[str, str]) -> QuerySet[TradeReview]:
    """Stage-12 trade reviews, filtered by ``account`` (id) and ``outcome``, latest first."""
    reviews = TradeReview.objects.select_related("position__instrument", "position__account")
    if outcome := params.get("outcome", "").strip():
        reviews = reviews.filter(outcome=edge.parse_choice(outcome.lower(), "outcome", OUTCOMES))
    if account := params.get("account", "").strip():
        reviews = reviews.filter(position__account=_account(account))
    return reviews.order_by("-created_at", "-id")


def _by_account(reports: QuerySet[RetrospectiveReport], params: Mapping[str, str]) -> QuerySet[RetrospectiveReport]:
    if account := params.get("account", "").strip():
        return reports.filter(account=_account(account))
    return reports


def _account(text: str) -> Account:
    account_id = _parse_id(text, "account")
    account = Account.objects.filter(pk=account_id).first()
    if account is None:
        raise edge.InputInvalid(f"there is no account {account_id}")
    return account


def _parse_id(text: str, name: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= MAX_ID:
        raise edge.InputInvalid(f"{name} {edge.short(text)!r} is not an id (a whole number from 1)")
    return int(text)


# --- a report read for a page -------------------------------------------------------------------


def flags_by_place(ungrounded: Sequence[Mapping[str, Any]] | Any) -> dict[str, list[str]]:
    """The numbers the grounding check flagged, keyed by where in the narrative they stand
    (``what_worked[0]``, ``hindsight``, ...)."""
    places: dict[str, list[str]] = {}
    for flag in ungrounded if isinstance(ungrounded, list) else []:
        if isinstance(flag, Mapping):
            places.setdefault(str(flag.get("where", "")), []).append(str(flag.get("number", "")))
    return places
