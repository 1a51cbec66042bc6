"""A person attaches a shortlisted research candidate to a desk strategy as a signal, or detaches it.

This is the only place research meets the desk, and only through a person: research writes a
``trading.models.market.ResearchSignal`` row (what the signal is, its parameters, the figures the
session measured), and the pipeline reads it as evidence. Nothing here places, approves or sizes a
trade. Attaching needs the approver's permission (``trading.approve_thesis``): it changes what the
analysts of a live strategy read. Both actions are audited; detaching is one click and keeps the row.

The strategy is reached through the signal's foreign key, not by importing the strategies'
models, which the import contracts keep out of research's reach.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone

from research.models import ResearchCandidate
from research.signals import SIGNALS
from trading.audit import audit_record
from trading.models.market import ResearchSignal
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

__all__ = [
    "APPROVE_PERMISSION",
    "attachable_strategies",
    "can_attach",
    "signal_attach",
    "signal_detach",
    "signal_figures",
    "signal_name",
]

APPROVE_PERMISSION = "trading.approve_thesis"
MAX_REASON_CHARS = 2_000  # the desk's one limit on free text a person types (trading.edge)


def can_attach(user: Any) -> bool:
    return bool(user.has_perm(APPROVE_PERMISSION))


def strategy_model() -> type[Model]:
    """``trading.Strategy``, as the signal's foreign key names it."""
    return ResearchSignal._meta.get_field("strategy").related_model  # type: ignore[return-value]


def attachable_strategies() -> list[tuple[int, str]]:
    """Active strategies that are not retired, as ``(id, name)``, by name."""
    strategies = strategy_model().objects.filter(is_active=True, retired_at__isnull=True).order_by("name")  # type: ignore[attr-defined]
    return list(strategies.values_list("id", "name"))


def signal_name(key: str, params: dict[str, Any]) -> str:
    """How the analysts see it: ``sma_crossover(fast=10, slow=50)``."""
    values = ", ".join(f"{name}={value}" for name, value in sorted(params.items()))
    return f"{key}({values})"[:120]


def signal_figures(candidate: ResearchCandidate) -> dict[str, Any]:
    """The session's figures for the candidate, copied as the session computed them."""
    trial = candidate.trial
    return {
        "oos": dict(trial.oos_metrics),
        "oos_sharpe": trial.oos_sharpe,
        "holdout": dict(candidate.holdout_metrics),
        "dsr": trial.dsr,
        "n_trials": trial.n_trials_at_eval,
        "pbo": candidate.session.pbo,
    }


def _check_reason(reason: str) -> str:
    reason = reason.strip()
    if len(reason) > MAX_REASON_CHARS:
        raise InputRefused(f"the reason is {len(reason):,} characters; at most {MAX_REASON_CHARS:,} are kept")
    if "\x00" in reason:
        raise InputRefused("the reason contains a NUL character")
    return reason


def _check_candidate(candidate: ResearchCandidate) -> None:
    trial = candidate.trial
    if trial.kind != trial.Kind.TUNE or trial.strategy not in SIGNALS:
        raise InputRefused(
            f"candidate {candidate.rank} of session {candidate.session_id} is generated code ({trial.strategy}); "
            "only a built-in signal strategy can be attached, so no generated code runs on the desk's path"
        )
    if not candidate.holdout_metrics:
        raise StateConflict(
            f"candidate {candidate.rank} of session {candidate.session_id} has no holdout score yet; "
            "attach it once the session has scored its shortlist"
        )


def _strategy(strategy_id: int) -> Any:
    strategy = strategy_model().objects.filter(pk=strategy_id).first()  # type: ignore[attr-defined]
    if strategy is None:
        raise InputRefused(f"there is no strategy {strategy_id}", {"strategy": [f"no strategy {strategy_id}"]})
    if not strategy.is_active or strategy.retired_at is not None:
        raise StateConflict(f"strategy {strategy.name} is not active; a retired or paused strategy takes no signal")
    return strategy


@transaction.atomic
def signal_attach(*, candidate: ResearchCandidate, strategy_id: int, user: Any, reason: str = "") -> ResearchSignal:
    """Attach ``candidate`` to the strategy as a research signal, audited. Refused: without the
    approver's permission (403), for generated code or an unknown strategy (400), for a candidate
    not scored on the holdout, an inactive strategy, or the same signal already attached (409)."""
    if not can_attach(user):
        raise NotAllowed("attaching a research signal to a strategy needs the approver or admin role")
    reason = _check_reason(reason)
    _check_candidate(candidate)
    strategy = _strategy(strategy_id)
    trial = candidate.trial
    name = signal_name(trial.strategy, trial.params)
    source = f"research session {candidate.session_id}, trial {trial.number}, candidate {candidate.rank}"
    try:
        with transaction.atomic():  # the partial unique constraint decides a double click
            signal = ResearchSignal.objects.create(
                strategy_id=strategy.pk,
                name=name,
                signal=trial.strategy,
                params=dict(trial.params),
                figures=signal_figures(candidate),
                source=source,
                candidate_ref=candidate.pk,
                attached_by=user,
            )
    except IntegrityError:
        raise StateConflict(f"{name} is already attached to strategy {strategy.name}") from None
    audit_record(
        actor=user,
        action="research_signal_attached",
        target=f"strategy {strategy.pk}",
        reason=reason,
        details={"signal_id": signal.pk, "name": name, "candidate": candidate.pk, "source": source},
    )
    return signal


@transaction.atomic
def signal_detach(*, signal_id: int, user: Any, reason: str = "") -> ResearchSignal:
    """Detach an attached signal, audited: from the next run on, the analysts no longer read it.
    The row stays (``detached_at``) so earlier runs' evidence keeps its provenance. Claimed with a
    conditional update, so a double click detaches once and the second is told so (409)."""
    if not can_attach(user):
        raise NotAllowed("detaching a research signal needs the approver or admin role")
    reason = _check_reason(reason)
    signal = ResearchSignal.objects.filter(pk=signal_id).first()
    if signal is None:
        raise InputRefused(f"there is no research signal {signal_id}")
    claimed = ResearchSignal.objects.filter(pk=signal_id, detached_at__isnull=True).update(
        detached_at=timezone.now(), detached_by=user
    )
    if not claimed:
        raise StateConflict(f"{signal.name} is already detached from strategy {signal.strategy_id}")
    signal.refresh_from_db()
    audit_record(
        actor=user,
        action="research_signal_detached",
        target=f"strategy {signal.strategy_id}",
        reason=reason,
        details={"signal_id": signal.pk, "name": signal.name, "candidate": signal.candidate_ref},
    )
    return signal
