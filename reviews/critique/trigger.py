"""The critique's pre-step of every strategy run: decide, record why, and run the critique.

Trading announces each new strategy run (``trading.strategies.signals.strategy_run_opened``) and
never imports this module; the answer goes back as data trading owns: the run's ``critique_*``
fields, and later the ``StrategyDirective`` the critique writes.

First the open required actions of earlier critiques are checked again, so a gate whose actions
are complete lifts before this run reads it. The draw is ``reviews.domain.critique``'s, seeded per
(desk seed, strategy, run count), so a replay or a test draws what the live desk drew. When it
fires, a ``Critique`` row is made with the strategy's next sequence number (race-safe: the
sequence is unique per strategy and replay flag, and a lost race takes the next number). A replay
runs the critique here, in process; a live run sends it to a worker (``reviews.run_critique``) and
waits for it at most the configured deadline (trading schedules that), so a slow or failed critique
never holds trading up. Its end, however it ends, is written on the strategy run and lets the run
proceed at once.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import math
from collections.abc import Sequence
from decimal import Decimal
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Max
from django.utils import timezone

from reviews.critique.actions import action_attest, actions_check
from reviews.critique.archive import archive_clear
from reviews.critique.evidence import evidence_forget
from reviews.critique.signal_ics import bundles_forget
from reviews.domain.critique import AdaptiveSettings, TrajectorySignals, TriggerDecision, decide
from reviews.models import Critique, CritiqueAction, SignalIC
from trading.audit import audit_record
from trading.book.accounts import default_account, replay_account
from trading.models import DailyBar, Position, Strategy, StrategyRun
from trading.strategies.replay import REPLAY_USER

logger = logging.getLogger(__name__)

SEQUENCE_ATTEMPTS = 5
# Realised volatility: the recent window against the longer one (sessions).
RECENT_SESSIONS = 20
LONGER_SESSIONS = 120

State = StrategyRun.CritiqueState
Decision = StrategyRun.CritiqueDecision


def _config() -> AdaptiveSettings:
    return AdaptiveSettings.from_mapping(dict(settings.CRITIQUE))


def run_count_of(strategy_run: StrategyRun) -> int:
    """The run's number in its strategy's history, this run included: the strategy's live counter, or
    for a replay its replay runs up to this day."""
    if strategy_run.is_replay:
        return StrategyRun.objects.filter(
            strategy_id=strategy_run.strategy_id, is_replay=True, as_of__lte=strategy_run.as_of
        ).count()
    return int(Strategy.objects.filter(pk=strategy_run.strategy_id).values_list("run_count", flat=True).get())


# --- the trajectory's signs, for the adaptive mode ------------------------------------------------


def _stdev(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


def volatility_ratio(strategy: Strategy, as_of: dt.date) -> float | None:
    """Recent realised volatility of the universe's mean daily return over its longer-run one."""
    bars = DailyBar.objects.filter(instrument__in=strategy.universe.all(), date__lte=as_of).order_by("-date")
    closes: dict[int, list[tuple[dt.date, Decimal]]] = {}
    for instrument_id, day, close in bars.values_list("instrument_id", "date", "close")[
        : (LONGER_SESSIONS + 1) * max(strategy.universe.count(), 1)
    ]:
        closes.setdefault(instrument_id, []).append((day, close))
    by_day: dict[dt.date, list[float]] = {}
    for series in closes.values():
        ordered = sorted(series)
        for (_, before), (day, after) in pairwise(ordered):
            if before:
                by_day.setdefault(day, []).append(float(after / before) - 1.0)
    returns = [sum(values) / len(values) for _, values in sorted(by_day.items())]
    longer, recent = _stdev(returns[-LONGER_SESSIONS:]), _stdev(returns[-RECENT_SESSIONS:])
    if longer is None or recent is None or longer == 0 or len(returns) < RECENT_SESSIONS * 2:
        return None
    return recent / longer


def _drawdown(pnls: Sequence[Decimal], capital: Decimal) -> float:
    """The drawdown of cumulative realised profit from its peak (the start counts as 0), over capital."""
    peak = total = Decimal("0")
    for pnl in pnls:
        total += pnl
        peak = max(peak, total)
    return float((peak - total) / capital) if capital > 0 else 0.0


def _clean_streak(strategy: Strategy, is_replay: bool) -> int:
    streak = 0
    done = Critique.objects.filter(strategy=strategy, is_replay=is_replay, status=Critique.Status.DONE)
    for findings in done.order_by("-sequence").values_list("findings", flat=True):
        if any(isinstance(item, dict) and item.get("fired") for item in findings or []):
            break
        streak += 1
    return streak


def trajectory_signals(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> TrajectorySignals:
    """The adaptive mode's inputs, from stored rows dated on or before ``as_of``."""
    account = replay_account(strategy.name) if is_replay else default_account()
    closed = Position.objects.filter(
        thesis__run__strategy_run__strategy=strategy, is_replay=is_replay, closed_on__lte=as_of
    ).exclude(realised_pnl=None)
    rows: list[tuple[dt.date, Decimal]] = [
        (day, pnl)
        for day, pnl in closed.order_by("closed_on", "pk").values_list("closed_on", "realised_pnl")
        if day is not None and pnl is not None
    ]
    last = (
        Critique.objects.filter(strategy=strategy, is_replay=is_replay, as_of__lt=as_of)
        .order_by("-sequence")
        .values_list("as_of", flat=True)
        .first()
    )
    before = [pnl for day, pnl in rows if last is not None and day <= last]
    unresolved = CritiqueAction.objects.filter(
        critique__strategy=strategy, critique__is_replay=is_replay, status=CritiqueAction.Status.OPEN
    ).count()
    return TrajectorySignals(
        volatility_ratio=volatility_ratio(strategy, as_of),
        unresolved=unresolved,
        drawdown_now=_drawdown([pnl for _, pnl in rows], account.capital),
        drawdown_before=_drawdown(before, account.capital),
        clean_streak=_clean_streak(strategy, is_replay),
    )


# --- deciding and recording -----------------------------------------------------------------------


def trigger_decide(strategy_run: StrategyRun) -> TriggerDecision:
    config = _config()
    strategy = strategy_run.strategy
    run_count = run_count_of(strategy_run)
    signals = None
    if config.adaptive and run_count > config.min_runs:
        signals = trajectory_signals(strategy, as_of=strategy_run.as_of, is_replay=strategy_run.is_replay)
    return decide(run_count, strategy_id=strategy.pk, config=config, signals=signals)


def _next_sequence(strategy_run: StrategyRun) -> int:
    latest = Critique.objects.filter(strategy_id=strategy_run.strategy_id, is_replay=strategy_run.is_replay).aggregate(
        latest=Max("sequence")
    )["latest"]
    return (latest or 0) + 1


def critique_create(strategy_run: StrategyRun, decision: TriggerDecision) -> Critique:
    """The run's critique row with the strategy's next sequence; the existing one when the run has
    one already (a signal delivered twice). Two runs of one strategy racing for a number: the loser's
    insert breaks the unique constraint inside its savepoint and it takes the next number."""
    for _ in range(SEQUENCE_ATTEMPTS):
        existing = Critique.objects.filter(strategy_run=strategy_run).first()
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                return Critique.objects.create(
                    strategy_id=strategy_run.strategy_id,
                    strategy_run=strategy_run,
                    is_replay=strategy_run.is_replay,
                    sequence=_next_sequence(strategy_run),
                    run_count=decision.run_count,
                    as_of=strategy_run.as_of,
                    trigger=decision.as_json(),
                )
        except IntegrityError:
            continue
    raise IntegrityError(f"strategy run {strategy_run.pk}: no free critique sequence after {SEQUENCE_ATTEMPTS} tries")


def _record(strategy_run: StrategyRun, **fields: Any) -> None:
    StrategyRun.objects.filter(pk=strategy_run.pk).update(**fields)
    for name, value in fields.items():
        setattr(strategy_run, name, value)


def _recheck_actions(strategy_run: StrategyRun) -> None:
    """Before each run, the open machine-checkable actions are checked again on what the strategy has
    done since (yesterday's runs, a lesson written, a position cut), so a gate whose actions are
    complete is lifted before this run reads it. A check that breaks leaves the gate as it was."""
    open_checks = (
        CritiqueAction.objects.filter(
            critique__strategy_id=strategy_run.strategy_id,
            critique__is_replay=strategy_run.is_replay,
            status=CritiqueAction.Status.OPEN,
        )
        .exclude(kind=CritiqueAction.Kind.FREE_FORM)
        .exists()
    )
    if not open_checks:
        return
    try:
        with transaction.atomic():
            actions_check(strategy_run.strategy, is_replay=strategy_run.is_replay, as_of=strategy_run.as_of)
    except Exception:
        logger.exception("re-checking the critique actions before strategy run %s failed", strategy_run.pk)


REPLAY_ATTESTATION = (
    "history replay: no person can attest during a replay, so the replay's policy attests a free-form "
    "action on the session after it was issued (the runs in between were held)"
)


def _replay_attest(strategy_run: StrategyRun) -> None:
    """In a history replay nobody is there to attest, and one free-form action would hold every later
    day. The replay's approver of record (its policy user, an approver like any other) attests each
    free-form action on the first session after the one that issued it, with a comment saying so and
    audited like a person's attestation; machine-checked actions stay bound to their checks."""
    waiting = CritiqueAction.objects.filter(
        critique__strategy_id=strategy_run.strategy_id,
        critique__is_replay=True,
        critique__as_of__lt=strategy_run.as_of,
        kind=CritiqueAction.Kind.FREE_FORM,
        status=CritiqueAction.Status.OPEN,
    ).select_related("critique")
    if not waiting:
        return
    policy_user = get_user_model().objects.filter(username=REPLAY_USER).first()
    if policy_user is None:
        return  # not started by replay_strategy (a test driving the signal by hand): a person attests
    for action in waiting:
        action_attest(action, user=policy_user, comment=REPLAY_ATTESTATION)


def on_strategy_run_opened(strategy_run: StrategyRun, *, replay: bool) -> Critique | None:
    """Decide and record; when it fires, make the critique and run it (replay) or send it (live).
    Inside the caller's transaction, in a savepoint of its own: a failure here is recorded on the run
    as a failed critique and the run goes on, as if the critique had failed in its worker."""
    if replay:
        _replay_attest(strategy_run)
    _recheck_actions(strategy_run)
    if not settings.CRITIQUE["ENABLED"]:
        _record(strategy_run, critique_decision=Decision.OFF, critique_reason="the critique is switched off")
        return None
    try:
        with transaction.atomic():
            decision = trigger_decide(strategy_run)
            if not decision.fired:
                outcome = Decision.EXEMPT if decision.exempt else Decision.SKIPPED
                _record(strategy_run, critique_decision=outcome, critique_reason=decision.summary)
                return None
            critique = critique_create(strategy_run, decision)
            _record(
                strategy_run,
                critique_decision=Decision.FIRED,
                critique_reason=decision.summary,
                critique_ref=critique.pk,
                critique_state=State.PENDING,
            )
            audit_record(
                action="critique_triggered",
                target=f"strategy run {strategy_run.pk}",
                reason=decision.summary,
                details={"critique": critique.pk, "sequence": critique.sequence, **decision.as_json()},
            )
    except Exception as error:
        logger.exception("critique pre-step of strategy run %s failed", strategy_run.pk)
        _record(
            strategy_run,
            critique_state=State.FAILED,
            critique_reason=f"the critique pre-step failed: {type(error).__name__}: {error}",
        )
        return None
    if replay:
        _execute_in_process(critique.pk)
    else:
        transaction.on_commit(functools.partial(_send, critique.pk))
    return critique


def _execute_in_process(critique_id: int) -> None:
    """A replay's critique, here and now; whatever breaks fails it, visibly, and the replay goes on."""
    try:
        critique_execute(critique_id)
    except Exception as error:
        logger.exception("replay critique %s failed", critique_id)
        critique_fail(critique_id, f"{type(error).__name__}: {error}")
        critique_ended(critique_id)


def _send(critique_id: int) -> None:
    """Send the critique to a worker. A broker that refuses it fails the critique, visibly, and the
    strategy run proceeds at once instead of waiting out a deadline for nothing."""
    from celery import current_app

    try:
        current_app.send_task("reviews.run_critique", args=[critique_id])
    except Exception as error:
        logger.warning("critique %s not sent: %s", critique_id, error)
        critique_fail(critique_id, f"the task queue refused it: {type(error).__name__}: {error}")
        critique_ended(critique_id)


# --- running it and its end -----------------------------------------------------------------------


def critique_fail(critique_id: int, error: str) -> None:
    """Mark a critique failed that the service could not (it never started, or broke unexpectedly)."""
    Critique.objects.filter(pk=critique_id).exclude(status=Critique.Status.DONE).update(
        status=Critique.Status.FAILED, error=error[:4000], finished_at=timezone.now()
    )
    audit_record(action="critique_failed", target=f"critique {critique_id}", reason=error[:500])


def critique_execute(critique_id: int) -> Critique | None:
    """Run the critique (the service is idempotent), then record its end. A database error is left to
    the task's retry; anything else fails the critique, visibly, and trading goes on."""
    from reviews.critique.service import critique_run  # type: ignore[import-not-found,unused-ignore]

    try:
        critique_run(critique_id)
    except OperationalError:
        raise
    except Exception as error:
        logger.exception("critique %s failed", critique_id)
        critique_fail(critique_id, f"{type(error).__name__}: {error}")
    return critique_ended(critique_id)


def critique_ended(critique_id: int) -> Critique | None:
    """Write how the critique ended on its strategy run and, live, let the run proceed now (the
    deadline task finds it proceeded). A failure shows whether the run waited for it or not; a
    critique that finished after the deadline leaves the run marked late."""
    critique = Critique.objects.filter(pk=critique_id).first()
    if critique is None or critique.strategy_run_id is None:
        return critique
    runs = StrategyRun.objects.filter(pk=critique.strategy_run_id)
    if critique.status == Critique.Status.FAILED:
        runs.exclude(critique_state=State.FAILED).update(critique_state=State.FAILED)
    elif critique.status == Critique.Status.DONE:
        runs.filter(critique_state=State.PENDING).update(critique_state=State.DONE)
    else:
        return critique  # still running (a retry will end it)
    if not critique.is_replay:
        _proceed(critique)
    return critique


def _proceed(critique: Critique) -> None:
    from trading.strategies.runs import strategy_run_proceed

    if critique.strategy_run_id is None:
        return
    try:
        strategy_run_proceed(
            critique.strategy_run_id, reason=f"critique #{critique.sequence} ended ({critique.status})"
        )
    except Exception:
        # The deadline task (and the beat sweep) still proceeds it.
        logger.exception("strategy run %s could not proceed after its critique", critique.strategy_run_id)


def replay_critiques_clear(strategy: Strategy) -> None:
    """A replay starts again: its critiques (their actions go with them), their archive files (a new
    replay numbers from 1 again, and a stale file must not read as one of the new) and its logged ICs go."""
    Critique.objects.filter(strategy=strategy, is_replay=True).delete()
    SignalIC.objects.filter(strategy=strategy, is_replay=True).delete()
    archive_clear(strategy, is_replay=True)
    evidence_forget(strategy)
    bundles_forget(strategy)
