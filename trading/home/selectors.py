"""What the home page reads: the desk's state at a glance, from stored rows only.

Everything is the live book's (replays trade their own accounts and never show here). Each part is
a fixed number of queries whatever the size of the book, so the page and its JSON stay cheap to
poll."""

from __future__ import annotations

import datetime as dt
import functools
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.models import OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from trading.book.accounts import default_account
from trading.home.domain import DayChange, PositionPnl, book_day_change
from trading.market.domain.freshness import Staleness
from trading.market.selectors import stale_exchanges
from trading.models import (
    Account,
    BookPass,
    Notification,
    Order,
    PipelineRun,
    Position,
    PositionMark,
    ReplayJob,
    Strategy,
    StrategyDirective,
    StrategyRun,
    Thesis,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SHORT_LIST = 5
FAILED_RUNS_WINDOW = dt.timedelta(days=7)
APPROVE_PERMISSION = "trading.approve_thesis"


def pending_theses(now: dt.datetime | None = None) -> QuerySet[Thesis]:
    """Live theses a person can still decide: pending, passed by the risk engine, not past their
    approval window (the expiry task may not have run yet), newest first."""
    now = now or timezone.now()
    return (
        Thesis.objects.filter(status=Thesis.Status.PENDING, risk_approved=True, run__is_replay=False)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .order_by("-created_at", "-id")
    )


@dataclass(frozen=True)
class Pnl:
    currency: str
    realised: Decimal
    unrealised: Decimal
    dividends: Decimal
    today: DayChange | None

    @property
    def total(self) -> Decimal:
        return self.realised + self.unrealised + self.dividends


@dataclass(frozen=True)
class HeldStrategy:
    strategy: Strategy
    held_by: str  # the gate's words: the blocking directive's actions or the last run's blocked_by
    flagged: bool


@dataclass
class HomeState:
    account: Account
    pending_count: int
    pending: list[Thesis]
    pnl: Pnl
    open_count: int
    open_positions: list[Position]
    working_count: int
    working_orders: list[Order]
    running_count: int
    running: list[PipelineRun]
    replays_running: list[ReplayJob]
    failed_count: int
    failed: list[PipelineRun]
    strategies: list[HeldStrategy]
    stale: list[Staleness] = field(default_factory=list)


def book_pnl(account: Account) -> Pnl:
    """Realised (closed positions, net of costs), unrealised (open positions at their last mark,
    before exit costs) and the dividends open positions have received; and the change since the
    previous session's marks."""
    positions = Position.objects.filter(account=account)
    totals = positions.aggregate(
        realised=Sum("realised_pnl", filter=Q(status=Position.Status.CLOSED)),
        unrealised=Sum("unrealised_pnl", filter=Q(status=Position.Status.OPEN)),
        dividends=Sum("dividends", filter=Q(status=Position.Status.OPEN)),
    )
    return Pnl(
        currency=account.currency,
        realised=totals["realised"] or Decimal(0),
        unrealised=totals["unrealised"] or Decimal(0),
        dividends=totals["dividends"] or Decimal(0),
        today=_day_change(account),
    )


def _latest_days(queryset: QuerySet, field_name: str) -> list[dt.date]:
    return list(
        queryset.exclude(**{f"{field_name}__isnull": True})
        .order_by(f"-{field_name}")
        .values_list(field_name, flat=True)
        .distinct()[:2]
    )


def _day_change(account: Account) -> DayChange | None:
    """The book's sessions are the days its daily pass processed, marked a position or closed one;
    today's change compares the last two."""
    sessions = (
        _latest_days(BookPass.objects.filter(account=account), "date")
        + _latest_days(PositionMark.objects.filter(position__account=account), "date")
        + _latest_days(Position.objects.filter(account=account), "closed_on")
    )
    days = sorted(set(sessions))[-2:]
    if not days:
        return None
    previous = days[0] if len(days) == 2 else None
    moving = Position.objects.filter(account=account, opened_on__lte=days[-1])
    if previous is not None:
        moving = moving.filter(Q(status=Position.Status.OPEN) | Q(closed_on__gt=previous))
    rows = list(moving.values("pk", "opened_on", "closed_on", "realised_pnl", "status"))
    marks: dict[int, dict[dt.date, Decimal]] = defaultdict(dict)
    for position_id, day, pnl in PositionMark.objects.filter(
        position_id__in=[row["pk"] for row in rows], date__lte=days[-1]
    ).values_list("position_id", "date", "unrealised_pnl"):
        marks[position_id][day] = pnl
    positions = [
        PositionPnl(
            opened_on=row["opened_on"],
            closed_on=row["closed_on"] if row["status"] == Position.Status.CLOSED else None,
            realised=row["realised_pnl"],
            marks=marks[row["pk"]],
        )
        for row in rows
    ]
    return book_day_change(positions, days)


def held_strategies() -> list[HeldStrategy]:
    """Live strategies a gate holds (a blocking directive in force, or their latest run held by
    one) or the weekly reviews flagged; retired ones are left out."""
    latest_run = StrategyRun.objects.filter(strategy=OuterRef("pk"), is_replay=False).order_by("-as_of", "-id")
    strategies = {
        s.pk: s
        for s in Strategy.objects.filter(retired_at__isnull=True).annotate(
            last_blocked_by=Subquery(latest_run.values("blocked_by")[:1])
        )
    }
    held: dict[int, str] = {}
    for directive in StrategyDirective.objects.filter(
        strategy_id__in=strategies,
        is_replay=False,
        lifted_at__isnull=True,
        severity=StrategyDirective.Severity.DIRECTIVE,
    ).order_by("-opened_at", "-id"):
        if directive.is_blocking and directive.strategy_id not in held:
            actions = "; ".join(str(action.get("text", "")) for action in directive.blocking if action.get("text"))
            held[directive.strategy_id] = f"directive #{directive.sequence}: {actions or 'required actions open'}"
    for strategy in strategies.values():
        blocked_by = getattr(strategy, "last_blocked_by", "") or ""
        if blocked_by and strategy.pk not in held:
            held[strategy.pk] = blocked_by
    rows = []
    for strategy in strategies.values():
        if strategy.pk in held or strategy.flagged_on is not None:
            rows.append(
                HeldStrategy(
                    strategy=strategy, held_by=held.get(strategy.pk, ""), flagged=strategy.flagged_on is not None
                )
            )
    return sorted(rows, key=lambda row: row.strategy.name)


def home_state(now: dt.datetime | None = None) -> HomeState:
    now = now or timezone.now()
    account = default_account()
    pending = pending_theses(now)
    positions = Position.objects.filter(account=account, status=Position.Status.OPEN)
    working = Order.objects.filter(account=account, status=Order.Status.WORKING)
    running = PipelineRun.objects.filter(
        is_replay=False, status__in=(PipelineRun.Status.QUEUED, PipelineRun.Status.RUNNING)
    )
    failed = PipelineRun.objects.filter(
        is_replay=False, status=PipelineRun.Status.FAILED, created_at__gte=now - FAILED_RUNS_WINDOW
    )
    return HomeState(
        account=account,
        pending_count=pending.count(),
        pending=list(pending.select_related("instrument", "account")[:SHORT_LIST]),
        pnl=book_pnl(account),
        open_count=positions.count(),
        open_positions=list(positions.select_related("instrument").order_by("-opened_on", "-id")[:SHORT_LIST]),
        working_count=working.count(),
        working_orders=list(working.select_related("instrument").order_by("-placed_at", "-id")[:SHORT_LIST]),
        running_count=running.count(),
        running=list(running.select_related("instrument").order_by("-created_at", "-id")[:SHORT_LIST]),
        replays_running=list(
            ReplayJob.objects.filter(status__in=(ReplayJob.Status.QUEUED, ReplayJob.Status.RUNNING))
            .select_related("strategy")
            .order_by("-created_at", "-id")[:SHORT_LIST]
        ),
        failed_count=failed.count(),
        failed=list(failed.select_related("instrument").order_by("-created_at", "-id")[:SHORT_LIST]),
        strategies=held_strategies(),
        stale=stale_exchanges(now),
    )


@dataclass(frozen=True)
class NavCounts:
    pending: int | None  # None for a person who may not decide
    unread: int


def nav_counts(user: User) -> NavCounts:
    """The navigation's badges in one query, on every page: the person's unread notifications, and
    the theses waiting for a decision if the person may decide them (the auth backend's rule: an
    active superuser, or the permission held directly or through a group). The pending count is
    ``pending_theses``'s, whose filter the statement repeats (a test holds the two together)."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _nav_counts_sql(),
            {
                "user": user.pk,
                "pending": Thesis.Status.PENDING,
                "yes": True,
                "no": False,
                "now": connection.ops.adapt_datetimefield_value(now),
                "app": "trading",
                "codename": "approve_thesis",
            },
        )
        row = cursor.fetchone()
    if row is None:
        return NavCounts(pending=None, unread=0)
    is_active, is_superuser, unread, pending, by_group, by_self = row
    may_decide = bool(is_active) and (bool(is_superuser) or bool(by_group) or bool(by_self))
    return NavCounts(pending=pending if may_decide else None, unread=unread)


@functools.cache
def _nav_counts_sql() -> str:
    """The badges' statement, written out: built through the ORM it cost more to compile (2.8 ms,
    on every page) than to run (0.25 ms in all now). Table names from the models, parameters by name."""
    user_model = get_user_model()
    users = user_model._meta.db_table
    user_groups = user_model.groups.through._meta.db_table
    user_perms = user_model.user_permissions.through._meta.db_table
    group_perms = Group.permissions.through._meta.db_table
    approve = (
        f"SELECT p.id FROM {Permission._meta.db_table} p "
        f"INNER JOIN {ContentType._meta.db_table} ct ON ct.id = p.content_type_id "
        "WHERE ct.app_label = %(app)s AND p.codename = %(codename)s"
    )
    return (
        f"SELECT u.is_active, u.is_superuser, "
        f"(SELECT COUNT(*) FROM {Notification._meta.db_table} n WHERE n.user_id = u.id AND n.read_at IS NULL), "
        f"(SELECT COUNT(*) FROM {Thesis._meta.db_table} t "
        f"INNER JOIN {PipelineRun._meta.db_table} r ON r.id = t.run_id "
        "WHERE t.status = %(pending)s AND t.risk_approved = %(yes)s AND r.is_replay = %(no)s "
        "AND (t.expires_at IS NULL OR t.expires_at > %(now)s)), "
        f"EXISTS (SELECT 1 FROM {user_groups} ug INNER JOIN {group_perms} gp ON gp.group_id = ug.group_id "
        f"WHERE ug.user_id = u.id AND gp.permission_id IN ({approve})), "
        f"EXISTS (SELECT 1 FROM {user_perms} up WHERE up.user_id = u.id AND up.permission_id IN ({approve})) "
        f"FROM {users} u WHERE u.id = %(user)s"
    )
