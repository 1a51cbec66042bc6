"""Strategic effectiveness after each weekly review: the flag for the owner, and retiring a strategy.

``after_weekly_review`` runs after every READY weekly review (``reviews.triggers``). For the
review's strategy (the report's own, or the strategy whose replay account the report is about) it
reads the inaction-superiority rate of the last ``INACTION_FLAG_WEEKS`` weekly reviews of the same
book and flags the strategy when each is strictly above ``INACTION_FLAG_SHARE``
(``reviews.domain.effectiveness.should_flag``). A flag is set once, with its figures, and audited;
nothing clears it automatically: a person reads it and keeps or retires the strategy.

``strategy_retire`` is the person's decision: the strategy stops running (``is_active`` False:
``trading.run_due_strategies`` starts active strategies only), who, when and why are kept, the
retirement is audited, and the strategy's testament (a final epoch review into memory) is run by
``reviews.triggers.on_strategy_retired``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviews.domain.effectiveness import should_flag
from reviews.models import RetrospectiveReport
from trading.audit import audit_record
from trading.models import Account, Strategy
from vocabulary.refusals import InputRefused, StateConflict

__all__ = [
    "StrategyAlreadyRetired",
    "after_weekly_review",
    "flag_settings",
    "strategies_of",
    "strategy_retire",
    "weekly_superiorities",
]

logger = logging.getLogger(__name__)

REPLAY_ACCOUNT_PREFIX = "replay: "


class StrategyAlreadyRetired(StateConflict):
    """A retired strategy cannot be retired again (409)."""


def flag_settings() -> tuple[Decimal, int]:
    """(share, weeks): flag when inaction beat the strategy in more than ``share`` of positions
    for ``weeks`` consecutive weekly reviews."""
    retro = settings.RETROSPECTIVE
    return Decimal(str(retro["INACTION_FLAG_SHARE"])), int(str(retro["INACTION_FLAG_WEEKS"]))


def strategies_of(report: RetrospectiveReport) -> list[Strategy]:
    """The strategies a review judges: its own strategy, or the strategy whose replay account it
    reviewed (``trading.book.accounts.replay_account`` names it "replay: <strategy>"). A review of
    the live account as a whole judges no single strategy."""
    if report.strategy_id is not None:
        return [report.strategy] if report.strategy is not None else []
    return _replay_owners(report.account)


def _replay_owners(account: Account) -> list[Strategy]:
    if not account.name.startswith(REPLAY_ACCOUNT_PREFIX):
        return []
    name = account.name.removeprefix(REPLAY_ACCOUNT_PREFIX)
    # The account name is cut at 64 characters: a long strategy name matches by its prefix.
    candidates = Strategy.objects.filter(name__startswith=name).order_by("pk")
    return [strategy for strategy in candidates if f"{REPLAY_ACCOUNT_PREFIX}{strategy.name}"[:64] == account.name]


def _same_book(report: RetrospectiveReport) -> Q:
    """The weekly reviews of the same book as ``report``: same strategy, or same account when the
    report names no strategy."""
    if report.strategy_id is not None:
        return Q(strategy_id=report.strategy_id)
    return Q(account_id=report.account_id, strategy__isnull=True)


def weekly_superiorities(report: RetrospectiveReport, weeks: int) -> list[tuple[RetrospectiveReport, Any]]:
    """The last ``weeks`` READY weekly reviews of the report's book up to its period end, oldest
    first, each with its hard part's ``inaction.superiority`` (a 4-decimal string or None)."""
    latest = list(
        RetrospectiveReport.objects.filter(
            _same_book(report),
            horizon=RetrospectiveReport.Horizon.WEEKLY,
            status=RetrospectiveReport.Status.READY,
            period_end__lte=report.period_end,
        ).order_by("-period_end", "-id")[:weeks]
    )
    latest.reverse()
    return [(row, ((row.hard or {}).get("inaction") or {}).get("superiority")) for row in latest]


def _percent(rate: Any) -> str:
    return f"{Decimal(str(rate)) * 100:.2f}%"


def _flag_reason(rows: Sequence[tuple[RetrospectiveReport, Any]], share: Decimal) -> str:
    weeks = "; ".join(
        f"week ending {row.period_end:%d %b %Y}: inaction beat "
        f"{((row.hard or {}).get('inaction') or {}).get('beaten_by_inaction', '?')} of "
        f"{((row.hard or {}).get('inaction') or {}).get('positions', '?')} positions ({_percent(rate)})"
        for row, rate in rows
    )
    return (
        f"Inaction beat the strategy in more than {_percent(share)} of its positions in "
        f"{len(rows)} consecutive weekly reviews ({weeks}). Doing nothing would have done better: "
        "revise the strategy or retire it."
    )


def after_weekly_review(report: RetrospectiveReport) -> None:
    """Flag the review's strategy when inaction kept beating it (see the module). Idempotent: a
    strategy already flagged keeps its first flag."""
    if report.horizon != RetrospectiveReport.Horizon.WEEKLY or report.status != RetrospectiveReport.Status.READY:
        return
    share, weeks = flag_settings()
    rows = weekly_superiorities(report, weeks)
    if not should_flag([rate for _, rate in rows], share=share, weeks=weeks):
        return
    reason = _flag_reason(rows, share)
    for strategy in strategies_of(report):
        _flag(strategy, report=report, reason=reason, rows=rows)


def _flag(
    strategy: Strategy, *, report: RetrospectiveReport, reason: str, rows: Sequence[tuple[RetrospectiveReport, Any]]
) -> None:
    with transaction.atomic():
        claimed = Strategy.objects.filter(pk=strategy.pk, flagged_on__isnull=True).update(
            flagged_on=report.period_end, flag_reason=reason
        )
        if not claimed:
            return  # flagged before: the first flag stands until a person acts
        audit_record(
            action="strategy_flagged",
            target=f"strategy {strategy.pk}",
            reason=reason,
            details={
                "report": report.pk,
                "weekly_reviews": [row.pk for row, _ in rows],
                "superiorities": [rate for _, rate in rows],
            },
        )
    logger.info("strategy %s flagged: %s", strategy.pk, reason)


def strategy_retire(*, strategy: Strategy, actor: Any, reason: str) -> Strategy:
    """Retire ``strategy``: it stops running, and its testament review runs.

    Refuses a blank reason (400, InputRefused) and a strategy already retired (409); neither changes anything.
    The testament runs after the retirement is committed, so a failing review never undoes it."""
    why = " ".join((reason or "").split())
    if not why:
        raise InputRefused("say why the strategy is retired: the reason is required")
    with transaction.atomic():
        claimed = Strategy.objects.filter(pk=strategy.pk, retired_at__isnull=True).update(
            is_active=False, retired_at=timezone.now(), retired_by=actor, retire_reason=why
        )
        if not claimed:
            raise StrategyAlreadyRetired(f"{strategy.name} is already retired")
        audit_record(
            actor=actor,
            action="strategy_retired",
            target=f"strategy {strategy.pk}",
            reason=why,
            details={"flagged_on": str(strategy.flagged_on) if strategy.flagged_on else None},
        )
    strategy.refresh_from_db()
    _run_testament(strategy)
    return strategy


def _run_testament(strategy: Strategy) -> None:
    from reviews.triggers import on_strategy_retired  # late: the triggers module calls back into this one

    on_strategy_retired(strategy)
