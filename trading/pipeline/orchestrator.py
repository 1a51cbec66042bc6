"""Stages 1-7 of a pipeline run, each persisted before the next starts.

A run resumes at its first unfinished stage: a finished stage's stored output is read back, never
recomputed, so a retried or crashed run cannot duplicate a note, a debate or a thesis. Numbers by
code, words by models: the models argue; calibration, prices, validation and size are computed
here from stored data.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar, cast

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents import recording, roles
from agents.clients import PROVIDERS, model_choice, require_priced
from agents.domain.citations import check_citations
from agents.domain.llm import BudgetExceeded, ModelChoice, StageFailed
from agents.domain.memory import format_memory_block
from agents.domain.playbook import PlaybookRule
from agents.domain.pricing import PriceTable
from agents.models import Heuristic
from agents.playbook import active_playbook
from agents.roles import AnalystNote, DebateResult, TradeThesis, anchors_from_bundle
from security.redaction import redact_data, redact_secrets
from trading.audit import audit_record
from trading.book.accounts import (
    account_for_run,
    account_live_ideas,
    account_lock,
    account_portfolio,
    instrument_live_idea,
    risk_limits,
)
from trading.book.approvals import directives_in_force, gate_reason, thesis_expiry
from trading.book.domain.risk import PortfolioState, evaluate_risk
from trading.events import DeskEvent, publish
from trading.market import services
from trading.market.domain.features import NoPriceData
from trading.market.research_signals import attached_signals
from trading.models import (
    Account,
    AnalystNoteRecord,
    DebateRecord,
    HeuristicCitation,
    Instrument,
    PipelineRun,
    ResearchSignal,
    StageRun,
    Strategy,
    StrategyDirective,
    StrategyRun,
    Thesis,
)
from trading.models.pipeline import STAGES
from trading.pipeline.citations import (
    case_texts,
    citations_link_thesis,
    citations_store,
    note_texts,
    thesis_texts,
    verdict_texts,
)
from trading.pipeline.dispatch import QueueUnavailable, run_send
from trading.pipeline.domain.conviction import haircut_conviction
from trading.pipeline.domain.levels import ThesisInvalid, anchor_levels, validate_thesis
from trading.pipeline.leases import (
    LIVE_STATUSES,
    AttemptKeeper,
    ExclusiveLease,
    LeaseLost,
    RunLease,
    WakingRecorder,
    attempt_owner,
    lease_free,
    owner_is_dead_here,
    this_host,
)
from trading.pipeline.outputs import (
    AnalystsOutput,
    ContextOutput,
    DebateCalibration,
    DebateOutput,
    DirectiveSeen,
    FeaturesOutput,
    RiskDecisionOutput,
    RiskOutput,
    RunOutputs,
    RunSnapshot,
    StageOutput,
    StageOutputUnreadable,
    TraderOutput,
)
from trading.pipeline.research_evidence import research_evidence
from trading.pipeline.signals import run_finished
from vocabulary.features import FeatureBundle

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

logger = logging.getLogger(__name__)

# ATR(14) needs 14 true ranges, so 15 sessions of bars.
ATR_MIN_SESSIONS = 15
# A sweep queues at most this many runs again; the rest wait for the next one.
REQUEUE_BATCH = 500
# A conviction the trader restates within this of the calibrated one is the same number, rounded.
CONVICTION_TOLERANCE = 0.005


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


@dataclass(frozen=True)
class ReplayRuns:
    """How a history replay's runs execute in this context: their stage inputs read from
    ``source`` (a ``ReplayCache``, with the selectors' questions and answers) and, when ``quiet``,
    no channel events (nobody watches a replay's run page while it runs; the rows are the same)."""

    source: Any = None
    quiet: bool = False
    # The day's runs are made and executed inside one transaction of this process (nobody else can
    # see them, let alone claim them, until it commits): no lease renewal is needed between stages,
    # and a stage row cannot exist before its stage starts.
    exclusive: bool = False
    # The replay's account, found once: its runs would each look it up by name several times. Only
    # its id, name, currency and limits are read from it (its cash is read under its lock).
    account: Account | None = None
    # What every run of one replay day reads alike, read by the first of them (``_day_memo``).
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    # The runs made here (``exclusive`` only) and not yet executed, by id: each row was inserted
    # already claimed by the attempt that will execute it, whose lease waits here with the run.
    made: dict[int, tuple[PipelineRun, RunLease]] = field(default_factory=dict, compare=False, repr=False)
    # What each run's row gets at its ending (``exclusive`` only): written with it, in one update.
    at_ending: dict[int, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)


_replay_runs: ContextVar[ReplayRuns | None] = ContextVar("replay_runs", default=None)


@contextmanager
def replay_runs(mode: ReplayRuns) -> Iterator[None]:
    token = _replay_runs.set(mode)
    try:
        yield
    finally:
        _replay_runs.reset(token)


_MEMO_DAY = object()  # the key of the day a replay's memo holds
_Read = TypeVar("_Read")


def _day_memo(as_of: dt.date, key: Hashable, read: Callable[[], _Read]) -> _Read:
    """``read()``, once per replay day and ``key`` in a replay context; every time outside one.

    A replay day runs its pipeline runs between its book pass and its approvals, and no run changes
    what is read through here: the book changes at the pass and at the approvals, the critique's
    directives at its pre-step, the playbook at the reviews of the pass (or by a person, whose edit
    in the middle of a replay day reaches the replay's next day). So the first run's answer stands
    for the day's others. Each worker process keeps its own, for the day it is on."""
    mode = _replay_runs.get()
    if mode is None:
        return read()
    memo = mode.memo
    if memo.get(_MEMO_DAY) != as_of:
        memo.clear()
        memo[_MEMO_DAY] = as_of
    if key not in memo:
        memo[key] = read()
    return cast("_Read", memo[key])


def _directives_in_force(run: PipelineRun, strategy_id: int) -> list[StrategyDirective]:
    return _day_memo(
        run.as_of,
        ("directives", strategy_id, run.is_replay),
        lambda: directives_in_force(strategy_id, is_replay=run.is_replay, as_of=run.as_of),
    )


def _exclusive() -> bool:
    """Whether this context's runs are made and executed in one transaction of this process (see
    ``ReplayRuns.exclusive``): nobody else can see them, so nothing of theirs exists before they do."""
    mode = _replay_runs.get()
    return mode is not None and mode.exclusive


def _account_of(run: PipelineRun) -> Account:
    """``account_for_run``, or the replay's account its mode holds."""
    mode = _replay_runs.get()
    if mode is not None and mode.account is not None and run.is_replay:
        return mode.account
    return account_for_run(run)


def _publish(run: PipelineRun, kind: str, **data: Any) -> None:
    mode = _replay_runs.get()
    if mode is not None and mode.quiet:
        return
    publish(DeskEvent(kind=kind, data={"run_id": run.pk, **data}), group=run_group(run.pk))


# --- creating and claiming runs ---------------------------------------------------------------


def pipeline_run_create(
    *,
    instrument: Instrument,
    as_of: dt.date,
    provider: str,
    user: User | AnonymousUser | None = None,
    strategy_run: StrategyRun | None = None,
    is_replay: bool = False,
) -> PipelineRun:
    """A queued run. A strategy's daily loop (a replay's too) names its ``strategy_run``, stored
    with the row itself rather than by a second write."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    require_priced(provider)
    mode = _replay_runs.get()
    # Made in a replay day's transaction, where nobody else can see it: inserted as its first
    # attempt's claim (``_take_fresh``) leaves it, instead of inserted queued, claimed and read.
    claimed = mode is not None and mode.exclusive and is_replay and settings.RUN_MAX_ATTEMPTS >= 1
    lease = ExclusiveLease(run_id=0, owner=attempt_owner(), seconds=settings.RUN_LEASE_SECONDS) if claimed else None
    run = PipelineRun.objects.create(
        instrument=instrument,
        as_of=as_of,
        provider=provider,
        created_by=user if user and user.is_authenticated else None,
        strategy_run=strategy_run,
        is_replay=is_replay,
        **(_claimed_by(lease) if lease is not None else {}),
    )
    if mode is not None and lease is not None:
        mode.made[run.pk] = (run, dataclasses.replace(lease, run_id=run.pk))
    audit_record(
        actor=user,
        actor_label="" if user else "system",
        action="run_created",
        target=f"run {run.pk}",
        details={"symbol": instrument.symbol, "as_of": as_of.isoformat(), "provider": provider},
    )
    return run


def _claimed_by(lease: RunLease) -> dict[str, Any]:
    """A run's fields as its first attempt's claim leaves them, held by ``lease``."""
    now = timezone.now()
    return {
        "status": PipelineRun.Status.RUNNING,
        "started_at": now,
        "enqueued_at": now,
        "attempts": 1,
        "lease_owner": lease.owner,
        "lease_expires_at": lease.expiry(now),
    }


def _claim(run_id: int, lease: RunLease) -> PipelineRun | None:
    """Take the run for this attempt, or None: finished, gone, held by a live lease (another
    executor is on it; a duplicate message must not run it twice), or out of attempts (given up)."""
    mode = _replay_runs.get()
    if mode is not None and mode.exclusive and _take_fresh(lease):
        return PipelineRun.objects.select_related("instrument", "strategy_run__strategy").get(pk=run_id)
    seen = PipelineRun.objects.filter(pk=run_id, status__in=LIVE_STATUSES).first()
    if seen is None:
        return None
    if seen.lease_expires_at and seen.lease_expires_at >= timezone.now():
        logger.info("run %s is held by %s until %s: not run twice", run_id, seen.lease_owner, seen.lease_expires_at)
        return None
    if seen.attempts >= settings.RUN_MAX_ATTEMPTS:
        run_give_up(seen)
        return None
    now = timezone.now()
    # Only if nobody changed it since we looked: the attempt count and the holder are the ones we saw.
    claimed = lease.take_over(
        expect=Q(attempts=seen.attempts, lease_owner=seen.lease_owner),
        status=PipelineRun.Status.RUNNING,
        started_at=now,
        attempts=F("attempts") + 1,
        enqueued_at=Coalesce(F("enqueued_at"), Value(now)),  # a worker has the message: it was sent
    )
    if not claimed:
        return None
    if seen.lease_owner:
        audit_record(
            action="run_taken_over",
            target=f"run {run_id}",
            reason=f"the lease of {seen.lease_owner} expired at {seen.lease_expires_at:%Y-%m-%d %H:%M:%S}",
            details={"owner": lease.owner, "previous": seen.lease_owner},
        )
    # The instrument and the strategy (run) are read by every stage: one query, not three.
    return PipelineRun.objects.select_related("instrument", "strategy_run__strategy").get(pk=run_id)


def _take_fresh(lease: RunLease) -> bool:
    """Claim a run never attempted and never leased (a replay run made a moment ago) in one write,
    without reading it first: the claim ``_claim`` makes once it has looked, for the one case in
    which looking finds nothing to refuse, nothing to give up and nobody to take it from. False
    when the run is not that; ``_claim`` then looks."""
    if settings.RUN_MAX_ATTEMPTS < 1:
        return False  # no attempt allowed at all: ``_claim`` gives the run up
    now = timezone.now()
    return lease.take_over(
        expect=Q(attempts=0, lease_owner=""),
        status=PipelineRun.Status.RUNNING,
        started_at=now,
        attempts=F("attempts") + 1,
        enqueued_at=Coalesce(F("enqueued_at"), Value(now)),
    )


def run_give_up(run: PipelineRun) -> bool:
    """Fail a run that used all its attempts, with the last attempt's reason. Conditional on what
    the caller saw (attempts, no live lease), so a run another worker just claimed is left alone."""
    now = timezone.now()
    last = run.failure_reason or "no attempt finished"
    reason = redact_secrets(f"gave up after {run.attempts} attempts: {last}")
    given_up = (
        PipelineRun.objects.filter(pk=run.pk, status__in=LIVE_STATUSES, attempts=run.attempts)
        .filter(lease_free(now))
        .update(
            status=PipelineRun.Status.FAILED,
            failure_reason=reason,
            finished_at=now,
            lease_owner="",
            lease_expires_at=None,
        )
    )
    if not given_up:
        return False
    audit_record(action="run_gave_up", target=f"run {run.pk}", reason=reason, details={"attempts": run.attempts})
    run.status, run.failure_reason = PipelineRun.Status.FAILED, reason
    _publish(run, "run.finished", status=run.status, reason=reason)
    run_finished.send(sender=PipelineRun, run=run)
    return True


def _run_row_later(run: PipelineRun, **fields: Any) -> bool:
    """Keep ``fields`` for the run's row until its ending writes them along (True), in a replay
    day's transaction: nobody can read the row before the day commits, and a run that does not
    reach its ending (an error past its stages) ends the day, which leaves nothing. Elsewhere
    False: the caller writes them now."""
    mode = _replay_runs.get()
    if mode is None or not mode.exclusive:
        return False
    mode.at_ending.setdefault(run.pk, {}).update(fields)
    return True


def _finish(run: PipelineRun, status: str, reason: str, lease: RunLease) -> None:
    reason = redact_secrets(reason)  # a provider's error text may echo its credentials
    mode = _replay_runs.get()
    later = mode.at_ending.pop(run.pk, {}) if mode is not None else {}
    # Only while this attempt holds the run: one that was taken over writes no ending.
    finished = PipelineRun.objects.filter(pk=run.pk, lease_owner=lease.owner).update(
        status=status,
        failure_reason=reason,
        finished_at=timezone.now(),
        lease_owner="",
        lease_expires_at=None,
        **later,
    )
    if not finished:
        raise LeaseLost(f"run {run.pk} is no longer held by {lease.owner}")
    lease.ended()  # the ending cleared the lease: releasing it again would change nothing
    run.status, run.failure_reason = status, reason
    _publish(run, "run.finished", status=status, reason=reason)


_Output = TypeVar("_Output", bound=StageOutput)


def _finished(output: _Output | None, stage: str) -> _Output:
    if output is None:
        # Stages run in order and a later one starts only once the earlier ones are stored.
        raise LookupError(f"the {stage} stage has no stored output to read: it has not finished")
    return output


@dataclass
class RunContext:
    run: PipelineRun
    choice: ModelChoice
    recorder: recording.BufferedRecorder
    budget: recording.RunBudget
    outputs: RunOutputs
    lease: RunLease
    # The run's account, found once per attempt (its limits and cash are read under its lock).
    account: Account
    # The stages with a row already (an earlier attempt started them): the others are inserted
    # without looking first.
    stage_rows: frozenset[str] = frozenset()
    # An exclusive replay run's stage rows, kept here and inserted together when the run ends.
    buffer: _StageBuffer | None = None

    @property
    def bundle(self) -> FeatureBundle:
        return _finished(self.outputs.features, "features").bundle

    @property
    def memory_block(self) -> str:
        return _finished(self.outputs.context, "context").memory_block

    @property
    def notes(self) -> list[AnalystNote]:
        return list(_finished(self.outputs.analysts, "analysts").notes.values())

    @property
    def playbook(self) -> list[PlaybookRule]:
        """The heuristics the run's agents may cite: the ones active when its context was read."""
        return _finished(self.outputs.context, "context").playbook

    @property
    def playbook_codes(self) -> set[str]:
        return {rule.code for rule in self.playbook}


# --- the stages ---------------------------------------------------------------------------------


def _stage_features(ctx: RunContext) -> FeaturesOutput:
    try:
        mode = _replay_runs.get()
        source = mode.source if mode is not None else None
        bundle = services.feature_bundle_for(instrument=ctx.run.instrument, as_of=ctx.run.as_of, source=source)
    except NoPriceData as error:
        raise StageFailed(str(error)) from None
    return FeaturesOutput(bundle=bundle)


def _memory_query(instrument: Instrument, bundle: FeatureBundle) -> str:
    t = bundle.technical
    trend = "uptrend" if t.sma_50 and t.last_close > t.sma_50 else "downtrend"
    return f"{instrument.symbol} {instrument.sector} {trend} breakout support resistance earnings"


def _strategy_of(run: PipelineRun) -> Strategy | None:
    strategy_run = run.strategy_run  # no query when the run has none
    return strategy_run.strategy if strategy_run is not None else None


DIRECTIVES_HEADING = (
    "Critique directives in force for this strategy (from the desk's independent critic; code holds the "
    "strategy to their required actions and checkable prohibitions):"
)


def _directives_of_run(run: PipelineRun) -> list[StrategyDirective]:
    """The directives the run's snapshot recorded (so the agents read exactly what the run says it
    saw); for a run without a snapshot, those in force now."""
    strategy_run = run.strategy_run
    if strategy_run is None:
        return []
    seen = (run.used or {}).get("directives") if isinstance(run.used, dict) else None
    if seen is None:
        return _directives_in_force(run, strategy_run.strategy_id)
    ids = [item["id"] for item in seen if isinstance(item, dict) and "id" in item]
    return _day_memo(
        run.as_of,
        ("directives by id", *ids),
        lambda: list(StrategyDirective.objects.filter(pk__in=ids).order_by("sequence", "id")),
    )


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def directives_block(directives: list[StrategyDirective]) -> str:
    """The lines every agent reads after the memory block: each directive's text and each of its
    prohibitions, one line each. They go to the prompt inside the memory fence (written by a model:
    data to weigh, never instructions); the gate itself is enforced in code, not by these words."""
    if not directives:
        return ""
    lines = [DIRECTIVES_HEADING]
    for directive in directives:
        state = (
            f"blocking: {len(directive.blocking)} required action(s) incomplete"
            if directive.is_blocking
            else directive.severity
        )
        lines.append(f"- critique #{directive.sequence} ({state}): {_one_line(directive.text)}")
        for item in directive.prohibitions or []:
            if isinstance(item, dict):
                what = f"{item.get('kind', 'text')} {item.get('value', '')}".strip()
                lines.append(f"- critique #{directive.sequence} prohibits {what}: {_one_line(item.get('text', ''))}")
    return "\n".join(lines) + "\n"


def _attached_signals(run: PipelineRun) -> list[ResearchSignal] | None:
    """The research signals attached to the run's strategy (a person's change reaches a replay
    the next day), or None outside a strategy."""
    strategy_run = run.strategy_run
    if strategy_run is None:
        return None
    strategy_id = strategy_run.strategy_id
    return _day_memo(run.as_of, ("research signals", strategy_id), lambda: attached_signals(strategy_id))


def _stage_context(ctx: RunContext) -> ContextOutput:
    instrument = ctx.run.instrument
    # A replay's run reads its own replay's lessons beside the live ones; a live run, live ones only.
    # Named here from the run itself, so a replay run resumed by any worker reads the same memory.
    replay_account = ctx.account.pk if ctx.run.is_replay else None
    as_of = ctx.run.as_of
    hits = recording.memory_search(
        _memory_query(instrument, ctx.bundle),
        symbol=instrument.symbol,
        as_of=as_of,
        scopes=recording.memory_scopes(replay_account_id=replay_account),
        # Lessons are written by reviews and critiques, before a replay day's runs: looked for once.
        index=_day_memo(as_of, "memory index", recording.memory_cache.refresh),
    )
    strategy = _strategy_of(ctx.run)
    memory_block = format_memory_block(hits)
    if strategy is not None:
        # The mandate travels with the memory block, so every agent reads it before the evidence.
        mandate = " ".join(strategy.philosophy.split())
        memory_block = f"Strategy mandate ({strategy.name}): {mandate}\n{memory_block}"
        # The critique's directives follow, inside the same fence as the memory.
        memory_block += directives_block(_directives_of_run(ctx.run))
    return ContextOutput(
        memory_block=memory_block,
        memory_ids=[hit.record.id for hit in hits],
        mandate=strategy.philosophy if strategy else "",
        playbook=_day_memo(ctx.run.as_of, "playbook", active_playbook),
        research_signals=research_evidence(ctx.run, signals=_attached_signals(ctx.run)),
    )


def _stage_analysts(ctx: RunContext) -> AnalystsOutput:
    results = roles.run_analysts(
        ctx.choice,
        ctx.bundle,
        memory_block=ctx.memory_block,
        playbook=ctx.playbook,
        research_signals=_finished(ctx.outputs.context, "context").research_signals,
        recorder=ctx.recorder,
        budget=ctx.budget,
    )
    notes = {role: r for role, r in results.items() if isinstance(r, AnalystNote)}
    # Every indicator value a note cites, checked against the bundle; kept for the run page and
    # for any later critique. A mismatch is shown, never silently corrected.
    checks = {role: check_citations(note, ctx.bundle) for role, note in notes.items()}
    return AnalystsOutput(
        notes=notes,
        failures={role: r.reason for role, r in results.items() if isinstance(r, StageFailed)},
        quorum=roles.quorum_met(results),
        citations=checks,
        citation_mismatches=sum(check.mismatches for check in checks.values()),
    )


def _stage_debate(ctx: RunContext) -> DebateOutput:
    notes, bundle = ctx.notes, ctx.bundle
    recorder, budget, memory_block, playbook = ctx.recorder, ctx.budget, ctx.memory_block, ctx.playbook
    bull, bear = roles.build_cases(
        ctx.choice, notes, bundle, recorder=recorder, budget=budget, memory_block=memory_block, playbook=playbook
    )
    bull_final, bear_final = roles.rebut_cases(
        ctx.choice, bull, bear, recorder=recorder, budget=budget, memory_block=memory_block, playbook=playbook
    )
    verdict = roles.judge(
        ctx.choice,
        notes,
        bull_final,
        bear_final,
        anchors=anchors_from_bundle(bundle),
        recorder=recorder,
        budget=budget,
        memory_block=memory_block,
        playbook=playbook,
    )
    calibration = DebateCalibration(**dataclasses.asdict(haircut_conviction(verdict.conviction, verdict.winner, notes)))
    calibration = _capped(calibration, _directives_of_run(ctx.run))
    result = verdict.model_copy(
        update={"conviction": calibration.conviction, "proposed_conviction": calibration.proposed}
    )
    return DebateOutput(
        bull_initial=bull, bear_initial=bear, bull=bull_final, bear=bear_final, result=result, calibration=calibration
    )


def conviction_cap(directives: list[StrategyDirective]) -> tuple[float, int] | None:
    """The lowest ``max_conviction`` of the directives in force, and the critique that set it. The
    cap is derived by code from the strategy's record (its win rate plus the allowed gap), never
    taken from a model."""
    caps = []
    for directive in directives:
        for item in directive.prohibitions or []:
            if isinstance(item, dict) and item.get("kind") == "max_conviction":
                try:
                    caps.append((min(1.0, max(0.0, float(item.get("value", "")))), directive.sequence))
                except ValueError:
                    continue
    return min(caps) if caps else None


def _capped(calibration: DebateCalibration, directives: list[StrategyDirective]) -> DebateCalibration:
    """The conviction the desk acts on, never above a directive's cap: code calibrates conviction,
    and a critique that found it above the strategy's record tells code how far to trust it."""
    cap = conviction_cap(directives)
    if cap is None:
        return calibration
    value, sequence = cap
    conviction = min(calibration.conviction, round(value, 4))
    return calibration.model_copy(update={"conviction": conviction, "cap": value, "capped_by": sequence})


def _decimal(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _overruled(proposed: TradeThesis, debate: DebateResult) -> list[str]:
    """What the trader's reply said that code did not follow, in words for the thesis page."""
    warnings = []
    if proposed.direction != debate.winner:
        warnings.append(
            f"the trader replied {proposed.direction}, against the debate's winner {debate.winner}; "
            f"the thesis stays {debate.winner} (the reply is kept for audit)"
        )
    if abs(proposed.conviction - debate.conviction) > CONVICTION_TOLERANCE:
        warnings.append(
            f"the trader restated conviction as {proposed.conviction:.2f}; the calibrated "
            f"{debate.conviction:.4f} stands"
        )
    return warnings


def _stage_trader(ctx: RunContext) -> TraderOutput:
    """The trader writes the rationale and risks. Direction and conviction are the debate's
    (calibrated by code); entry, stop and target come from the last close and ATR. Without an
    ATR there are no prices to anchor to, and the stage fails closed rather than trade the
    model's numbers."""
    bundle, instrument = ctx.bundle, ctx.run.instrument
    debate = _finished(ctx.outputs.debate, "debate").result
    atr = _decimal(bundle.technical.atr_14)
    if atr is None or atr <= 0:
        raise StageFailed(
            f"no ATR(14) for {instrument.symbol} as of {ctx.run.as_of} (it needs {ATR_MIN_SESSIONS} sessions of "
            "bars): prices are set from ATR, never taken from the model"
        )
    proposed = roles.propose_thesis(
        ctx.choice,
        debate,
        ctx.notes,
        anchors_from_bundle(bundle),
        other_symbols=_other_symbols(instrument),
        recorder=ctx.recorder,
        budget=ctx.budget,
        memory_block=ctx.memory_block,
        playbook=ctx.playbook,
    )
    owned = proposed.model_copy(
        update={"direction": debate.winner, "conviction": debate.conviction, "levels_source": "model"}
    )
    try:
        anchored = anchor_levels(
            owned, last_price=Decimal(str(bundle.technical.last_close)), atr=atr, tick=instrument.tick_size
        )
        validate_thesis(anchored, atr=atr, tick=instrument.tick_size)
    except ThesisInvalid as error:
        raise StageFailed(f"thesis validator: {error}") from None
    return TraderOutput(proposed=proposed, thesis=anchored, warnings=_overruled(proposed, debate))


def _other_symbols(instrument: Instrument) -> list[str]:
    """Every other instrument's symbol, in the instruments' order: from the replay's cache when it
    holds them (read once for the replay), else from the table."""
    mode = _replay_runs.get()
    source = mode.source if mode is not None else None
    if source is not None and hasattr(source, "other_symbols"):
        return list(source.other_symbols(instrument))
    return list(Instrument.objects.exclude(pk=instrument.pk).values_list("symbol", flat=True))


def _held(run: PipelineRun, account: Account) -> str:
    """Why the run holds because its instrument already has a live idea in the account; "" if not.
    Asked before the models are called and again under the account's lock. A replay day reads the
    account's live ideas once (``_day_memo``): its book stands still while its runs execute, and it
    has one run per instrument, so the only idea a run adds (its own pending thesis, made after
    both questions) is in an instrument no other run of the day asks about."""
    if _replay_runs.get() is None:
        busy = instrument_live_idea(account, run.instrument_id, exclude_run_id=run.pk)
    else:
        ideas = _day_memo(run.as_of, ("live ideas", account.pk), lambda: account_live_ideas(account))
        busy = ideas.get(run.instrument_id, "")
    return f"HOLD: {run.instrument.symbol} {busy}; one live idea per instrument" if busy else ""


def _portfolio(run: PipelineRun, account: Account) -> PortfolioState:
    """The account's book as the run's sizing reads it, once ``_held`` found nothing of the run's
    instrument in it. In a replay day it is read once (``_day_memo``), without the instrument: the
    book stands still while the day's runs execute, and the instrument's share of it is 0 for
    every run that gets here."""
    if _replay_runs.get() is None:
        return account_portfolio(account, today=run.as_of, instrument_id=run.instrument_id)
    return _day_memo(run.as_of, ("portfolio", account.pk), lambda: account_portfolio(account, today=run.as_of))


def _prohibited(run: PipelineRun, thesis: TradeThesis, directive: StrategyDirective) -> str:
    """The first checkable prohibition of the directive the run breaks, in words; "" when none.
    Direction and instrument are read from the thesis code made; a heuristic from this run's stored
    citations. A prohibition of kind ``text`` is for the agents to weigh; code cannot check it."""
    cited = {code.upper() for code in HeuristicCitation.objects.filter(run=run).values_list("code", flat=True)}
    for item in directive.prohibitions or []:
        if not isinstance(item, dict):
            continue
        kind, value = item.get("kind"), str(item.get("value", "")).strip().upper()
        broken = (
            (kind == "direction" and value == thesis.direction.upper())
            or (kind == "instrument" and value == run.instrument.symbol.upper())
            or (kind == "heuristic" and value in cited)
        )
        if broken:
            why = _one_line(item.get("text", "")) or "no reason given"
            return f"HOLD: critique #{directive.sequence} prohibits {kind} {value} ({why})"
    return ""


def _gated(run: PipelineRun, thesis: TradeThesis) -> str:
    """Why the strategy's critique holds this run: a blocking directive (its incomplete required
    actions named), or a checkable prohibition the thesis breaks; "" otherwise. Checked here, after
    the agents have argued, so a run under a directive still leaves its notes, debate and stated
    conviction for the directive's machine checks to read, but no thesis."""
    strategy_run = run.strategy_run
    if strategy_run is None:
        return ""
    directives = _directives_in_force(run, strategy_run.strategy_id)
    blocked = gate_reason(directives)
    if blocked:
        return f"HOLD: held by the strategy's critique: {blocked}"
    for directive in directives:
        if prohibited := _prohibited(run, thesis, directive):
            return prohibited
    return ""


def _thesis_store(*, run: PipelineRun, fields: dict[str, Any]) -> Thesis:
    """The run's thesis: the one an earlier attempt stored, or a new one. A replay run made in this
    transaction (``exclusive``) has none yet, so it is written without looking."""
    mode = _replay_runs.get()
    if mode is not None and mode.exclusive:
        return Thesis.objects.create(run=run, **fields)
    stored, _ = Thesis.objects.get_or_create(run=run, defaults=fields)
    return stored


def _account_locked(run: PipelineRun, account_id: int) -> Account:
    """``account_lock``; in a replay day's transaction (``exclusive``), taken by the day's first
    risk stage and held by the transaction until the day commits, so the day's other runs use the
    row it read: nothing changes the account between the day's book pass and its approvals."""
    if not _exclusive():
        return account_lock(account_id)
    return _day_memo(run.as_of, ("account lock", account_id), lambda: account_lock(account_id))


def _stage_risk(ctx: RunContext) -> RiskOutput:
    """Size and check against the live book, then store the thesis, all under the account's
    lock: twelve runs on one instrument at the same moment leave one thesis, and the others say
    why they hold."""
    run, instrument = ctx.run, ctx.run.instrument
    trader = _finished(ctx.outputs.trader, "trader")
    thesis = trader.thesis
    with transaction.atomic():
        account = _account_locked(run, ctx.account.pk)
        if instrument.currency != account.currency:
            # The limits are in the account's money; without an exchange rate a USD price against
            # rupee capital would size the trade wrong by the whole rate.
            raise StageFailed(
                f"{instrument.symbol} trades in {instrument.currency} but the account {account.name!r} is in "
                f"{account.currency}, and the desk has no exchange rate to size it with"
            )
        ctx.lease.hold()  # an attempt that was taken over must not leave a second thesis
        held = _held(run, account) or _gated(run, thesis)
        if held:
            return RiskOutput(held=held)
        decision = evaluate_risk(
            direction=thesis.direction,
            entry=Decimal(str(thesis.entry)),
            stop=Decimal(str(thesis.stop)),
            target=Decimal(str(thesis.target)),
            lot_size=instrument.lot_size,
            limits=risk_limits(account, _strategy_of(run)),
            portfolio=_portfolio(run, account),
        )
        summary = RiskDecisionOutput.model_validate(decision.to_dict())
        warnings = [*trader.warnings, decision.sizing] if decision.sizing else list(trader.warnings)
        stored = _thesis_store(
            run=run,
            fields={
                "account": account,
                "instrument": instrument,
                "direction": thesis.direction,
                "conviction": Decimal(str(round(thesis.conviction, 4))),
                "entry": Decimal(str(thesis.entry)),
                "stop": Decimal(str(thesis.stop)),
                "target": Decimal(str(thesis.target)),
                "horizon_sessions": thesis.horizon_sessions,
                "quantity": decision.quantity,
                "risk_amount": decision.risk_amount.quantize(Decimal("0.01")),
                "notional": decision.notional.quantize(Decimal("0.01")),
                "risk_approved": decision.approved,
                "risk_checks": [check.model_dump(mode="json") for check in summary.checks],
                "payload": thesis.model_dump(mode="json"),
                "warnings": warnings,
                "status": Thesis.Status.PENDING if decision.approved else Thesis.Status.REJECTED_BY_RISK,
                "expires_at": thesis_expiry(timezone.now()),
            },
        )
        # The debate's and the trader's playbook citations are the thesis's.
        citations_link_thesis(run=run, thesis=stored, kept=ctx.buffer.citations if ctx.buffer else None)
    return RiskOutput(decision=summary)


STAGE_FUNCTIONS: dict[str, Callable[[RunContext], StageOutput]] = {
    "features": _stage_features,
    "context": _stage_context,
    "analysts": _stage_analysts,
    "debate": _stage_debate,
    "trader": _stage_trader,
    "risk": _stage_risk,
}


# --- the rows a stage leaves besides its output -------------------------------------------------
# Written in the transaction that marks the stage done, so a stage is either done with its rows or
# not done at all, and a resumed or re-delivered run (which reads a done stage back) never writes
# them again. Keyed on the run (and role) besides: writing them twice could only overwrite, never add.

UNIT_PLACES = Decimal("0.0001")


def _unit(value: float) -> Decimal:
    """A stance, confidence, conviction or share as stored: 4 decimals."""
    return Decimal(str(value)).quantize(UNIT_PLACES)


def _features_rows(ctx: RunContext, output: FeaturesOutput) -> None:
    """Link the run to the FeatureSnapshot holding exactly the bundle it used (reused when the day's
    bundle is unchanged; a new row when it changed, so an earlier run's link never moves)."""
    run = ctx.run
    mode = _replay_runs.get()
    day_rows = None
    if mode is not None and mode.exclusive and mode.source is not None:
        # A replay day's transaction: its universe's rows of the day, read once for all its runs
        # (each run adds its own instrument's, which no other run of the day reads).
        universe = mode.source.instruments
        day_rows = _day_memo(run.as_of, "feature snapshots", lambda: services.feature_snapshots_on(run.as_of, universe))
    snapshot = services.feature_snapshot_keep(
        instrument=run.instrument, as_of=run.as_of, bundle=output.bundle, day_rows=day_rows
    )
    if not _run_row_later(ctx.run, feature_snapshot=snapshot):
        PipelineRun.objects.filter(pk=ctx.run.pk).update(feature_snapshot=snapshot)
    ctx.run.feature_snapshot = snapshot


def _analysts_rows(ctx: RunContext, output: AnalystsOutput) -> None:
    """One row per note (a failed analyst has none), with code's check of the numbers it cites, and
    the playbook heuristics each note cites."""
    records: dict[str, AnalystNoteRecord] = {}
    mode = _replay_runs.get()
    fresh = mode is not None and mode.exclusive  # no row can exist yet: one insert for them all
    for role, note in output.notes.items():
        check = output.citations.get(role)
        citations = [] if check is None else [citation.model_dump(mode="json") for citation in check.citations]
        fields = {
            "stance": _unit(note.stance),
            "confidence": _unit(note.confidence),
            "abstained": note.abstained,
            "summary": note.summary,
            "evidence": list(note.evidence),
            "citations": citations,
            "citation_mismatches": 0 if check is None else check.mismatches,
            "citations_verified": sum(1 for citation in citations if citation["ok"]),
            "model_used": note.model_used,
        }
        if fresh:
            records[role] = AnalystNoteRecord(run=ctx.run, role=role, **fields)
        else:
            records[role], _ = AnalystNoteRecord.objects.update_or_create(run=ctx.run, role=role, defaults=fields)
    if fresh and records:
        AnalystNoteRecord.objects.bulk_create(records.values())
    citations_store(
        run=ctx.run,
        texts_by_role={role: note_texts(note) for role, note in output.notes.items()},
        active_codes=ctx.playbook_codes,
        notes=records,
        fresh=fresh,
        heuristics=_heuristics(ctx.run),
        kept=ctx.buffer.citations if ctx.buffer else None,
    )


def _heuristics(run: PipelineRun) -> dict[str, Heuristic] | None:
    """Every heuristic row by code, read once per replay day (``_day_memo``); None for a live run,
    whose citations read the rows they cite."""
    if _replay_runs.get() is None:
        return None
    return _day_memo(run.as_of, "heuristics", lambda: {row.code: row for row in Heuristic.objects.all()})


def _debate_rows(ctx: RunContext, output: DebateOutput) -> None:
    """The debate as code calibrated it: the conviction stored is the calibrated one, the
    manager's own number beside it for audit."""
    calibration = output.calibration
    fields = {
        "winner": output.result.winner,
        "proposed_conviction": _unit(calibration.proposed),
        "conviction": _unit(calibration.conviction),
        "opposing": calibration.opposing,
        "side_taking": calibration.side_taking,
        "opposing_share": _unit(calibration.opposing_share),
        "rationale": output.result.manager_rationale,
    }
    mode = _replay_runs.get()
    if mode is not None and mode.exclusive:
        DebateRecord.objects.create(run=ctx.run, **fields)  # no row can exist yet
    else:
        DebateRecord.objects.update_or_create(run=ctx.run, defaults=fields)
    citations_store(
        run=ctx.run,
        texts_by_role={
            "bull": case_texts(output.bull_initial, output.bull),
            "bear": case_texts(output.bear_initial, output.bear),
            "manager": verdict_texts(output.result),
        },
        active_codes=ctx.playbook_codes,
        fresh=_exclusive(),
        heuristics=_heuristics(ctx.run),
        kept=ctx.buffer.citations if ctx.buffer else None,
    )


def _trader_rows(ctx: RunContext, output: TraderOutput) -> None:
    """The playbook heuristics the thesis cites; tied to the thesis row when the risk stage makes it."""
    citations_store(
        run=ctx.run,
        texts_by_role={"trader": thesis_texts(output.thesis)},
        active_codes=ctx.playbook_codes,
        fresh=_exclusive(),
        heuristics=_heuristics(ctx.run),
        kept=ctx.buffer.citations if ctx.buffer else None,
    )


STAGE_ROWS: dict[str, Callable[[RunContext, Any], None]] = {
    "features": _features_rows,
    "analysts": _analysts_rows,
    "debate": _debate_rows,
    "trader": _trader_rows,
}


# --- running ------------------------------------------------------------------------------------


def _stage_transaction() -> transaction.Atomic:
    """A finished stage's writes, all or nothing. In a replay day's transaction (``exclusive``)
    any error there ends the day, which rolls back as one: a savepoint per stage would only cost
    two statements each time. (Not for a stage's own work: a stage that fails is recorded as
    failed and the run goes on to its ending, so its writes need their savepoint.)"""
    mode = _replay_runs.get()
    return transaction.atomic(savepoint=not (mode is not None and mode.exclusive))


def _start_stage(run: PipelineRun, stage: str, lease: RunLease, *, has_row: bool = True) -> StageRun:
    """The stage's row, marked running. ``has_row`` False: no attempt started this stage before
    (read when this attempt began), so the row is inserted without looking; no other attempt can
    add it meanwhile, as it would need the lease this one holds (checked in the same transaction)."""
    with transaction.atomic():
        lease.hold()
        if has_row:
            record, created = StageRun.objects.get_or_create(
                run=run, stage=stage, defaults={"position": STAGES.index(stage), "status": StageRun.Status.RUNNING}
            )
        else:
            record, created = (
                StageRun.objects.create(
                    run=run, stage=stage, position=STAGES.index(stage), status=StageRun.Status.RUNNING
                ),
                True,
            )
        if not created:
            StageRun.objects.filter(pk=record.pk).update(
                status=StageRun.Status.RUNNING, error="", started_at=timezone.now()
            )
    _publish(run, "stage.started", stage=stage)
    return record


class _StageBuffer:
    """The stage rows of a run made and executed in one transaction (``ReplayRuns.exclusive``):
    nobody can read them before the transaction commits, so instead of an insert when each stage
    starts and an update when it ends, each row is kept in memory with its own times and status
    and all are inserted in one statement when the run ends, as they would stand by then. Its
    model calls wait for the run's end too (``flush``), and so do its playbook citations (tied to
    their note as it is inserted, and to the thesis when the risk stage makes it)."""

    def __init__(self) -> None:
        self.rows: list[StageRun] = []
        self.citations: list[HeuristicCitation] = []

    def start(self, run: PipelineRun, stage: str) -> StageRun:
        record = StageRun(
            run=run,
            stage=stage,
            position=STAGES.index(stage),
            status=StageRun.Status.RUNNING,
            started_at=timezone.now(),
        )
        self.rows.append(record)
        return record

    def write(self) -> None:
        """Insert the rows kept, once; each keeps the ``started_at`` stamped when its stage started."""
        rows, self.rows = self.rows, []
        if rows:
            StageRun.objects.bulk_create(rows)
        citations, self.citations = self.citations, []
        if citations:
            HeuristicCitation.objects.bulk_create(citations)


def _complete_stage(ctx: RunContext, record: StageRun, output: StageOutput) -> StageOutput:
    # An analyst's failure reason may echo a provider's credentials: what is kept (the stage, its
    # rows and what later stages read) is the redacted output.
    stored = redact_data(output.stored())
    output = type(output).model_validate(stored)
    if ctx.buffer is not None:
        # Written with the run's other rows when it ends (its calls too): nobody can see it sooner.
        with _stage_transaction():
            record.status, record.output, record.finished_at, record.error = (
                StageRun.Status.DONE,
                stored,
                timezone.now(),
                "",
            )
            if rows := STAGE_ROWS.get(record.stage):
                rows(ctx, output)
        ctx.outputs.record(output)
        _publish(ctx.run, "stage.finished", stage=record.stage, status="done")
        return output
    # The calls first, in their own transaction: they were made (and paid for) whether or not this
    # attempt still holds the run.
    ctx.recorder.flush()
    with _stage_transaction():
        ctx.lease.hold()
        StageRun.objects.filter(pk=record.pk).update(
            status=StageRun.Status.DONE, output=stored, finished_at=timezone.now(), error=""
        )
        if rows := STAGE_ROWS.get(record.stage):
            rows(ctx, output)
    ctx.outputs.record(output)
    _publish(ctx.run, "stage.finished", stage=record.stage, status="done")
    return output


def _fail_stage(ctx: RunContext, record: StageRun, reason: str) -> None:
    reason = redact_secrets(reason)
    if ctx.buffer is not None:
        record.status, record.error, record.finished_at = StageRun.Status.FAILED, reason, timezone.now()
        _publish(ctx.run, "stage.finished", stage=record.stage, status="failed", reason=reason)
        return
    ctx.recorder.flush()
    with transaction.atomic():
        ctx.lease.hold()
        StageRun.objects.filter(pk=record.pk).update(
            status=StageRun.Status.FAILED, error=reason, finished_at=timezone.now()
        )
    _publish(ctx.run, "stage.finished", stage=record.stage, status="failed", reason=reason)


@dataclass
class _Progress:
    stage: str = "start"


def pipeline_run_execute(run_id: int, *, stop_after: str | None = None) -> PipelineRun | None:
    """Run (or resume) one pipeline run, under a lease. Returns the run as it stands: finished, or
    still running when another executor holds it (this call then did nothing, or stopped without
    writing when its lease was taken over); None when it is gone.

    ``stop_after`` ends the call after that stage as if the process had died there (tests)."""
    mode = _replay_runs.get()
    made = mode.made.pop(run_id, None) if mode is not None and mode.exclusive else None
    if made is not None:
        run, lease = made  # inserted claimed by this attempt a moment ago (``pipeline_run_create``)
    else:
        lease = (ExclusiveLease if mode is not None and mode.exclusive else RunLease).for_this_attempt(run_id)
        claimed = _claim(run_id, lease)
        if claimed is None:
            return PipelineRun.objects.filter(pk=run_id).first()
        run = claimed
    recorder = WakingRecorder(run_id=run.pk, prices=PriceTable.from_mapping(settings.LLM.get("PRICES", {})))
    keeper = AttemptKeeper(lease, recorder).start()
    progress = _Progress()
    buffer = _StageBuffer() if mode is not None and mode.exclusive else None
    try:
        executed = _execute(run, lease, recorder, progress, stop_after=stop_after, buffer=buffer)
        if buffer is not None:
            buffer.write()
            recorder.flush()
        return executed
    except LeaseLost:
        logger.warning("run %s: %s lost its lease in %s; stopped without writing", run.pk, lease.owner, progress.stage)
        audit_record(
            action="run_lease_lost",
            target=f"run {run.pk}",
            reason=f"another executor took the run over; this attempt stopped in {progress.stage} without writing",
            details={"owner": lease.owner},
        )
        return PipelineRun.objects.filter(pk=run_id).first()
    except BaseException as error:
        _note_attempt_death(run, lease, progress.stage, error)
        if buffer is not None:
            _write_quietly(buffer, run.pk)
        raise
    finally:
        keeper.stop()
        _flush_quietly(recorder, run.pk)
        _write_later(run.pk)
        lease.release()


@dataclass(frozen=True)
class _Stored:
    """What earlier attempts left: the finished stages' outputs, and every stage with a row."""

    outputs: RunOutputs
    stage_rows: frozenset[str]


def _finished_outputs(run: PipelineRun, lease: RunLease) -> _Stored | None:
    """The stages an earlier attempt finished, read back (never run again), and the stages it
    started (their rows exist); None when a finished one does not read as its stage's shape (a
    newer desk's row): the run has then failed with why, as no later attempt would read it better."""
    mode = _replay_runs.get()
    if mode is not None and mode.exclusive:
        # Made a moment ago in this transaction: no stage has run.
        return _Stored(outputs=RunOutputs.from_stored({}), stage_rows=frozenset())
    rows = list(StageRun.objects.filter(run=run).values_list("stage", "status", "output"))
    done = {stage: output for stage, status, output in rows if status == StageRun.Status.DONE}
    try:
        outputs = RunOutputs.from_stored(done)
    except StageOutputUnreadable as error:
        _finish(run, PipelineRun.Status.FAILED, f"cannot resume: {error}", lease)
        return None
    return _Stored(outputs=outputs, stage_rows=frozenset(stage for stage, _, _ in rows))


def _choose_model(run: PipelineRun, lease: RunLease) -> ModelChoice | None:
    """The run's models, or None when there are none to be had: the run has then failed with why."""
    try:
        return model_choice(run.provider, symbol=run.instrument.symbol)
    except OperationalError:
        raise
    except Exception as error:
        # No key, an unknown provider: no later attempt would do better, so the run fails now with
        # the reason instead of staying "running" to be queued again and again.
        _finish(run, PipelineRun.Status.FAILED, f"could not start: {error}", lease)
        return None


def _directives_seen(run: PipelineRun) -> list[DirectiveSeen]:
    strategy_run = run.strategy_run
    if strategy_run is None:
        return []
    return [
        DirectiveSeen(
            id=directive.pk,
            sequence=directive.sequence,
            severity="directive" if directive.severity == StrategyDirective.Severity.DIRECTIVE else "advisory",
            blocking=directive.is_blocking,
        )
        for directive in _directives_in_force(run, strategy_run.strategy_id)
    ]


def _run_snapshot(run: PipelineRun, choice: ModelChoice, account: Account) -> RunSnapshot:
    """What the run uses, as it stands now: its account, the limits in force (the account's,
    tightened or loosened by the strategy), the strategy's mandate and the critique directives in
    force (which its context stage shows the agents), the provider and models."""
    strategy = _strategy_of(run)
    limits = dataclasses.asdict(risk_limits(account, strategy))
    return RunSnapshot(
        account=account.name,
        account_id=account.pk,
        currency=account.currency,
        strategy=strategy.name if strategy else "",
        mandate=strategy.philosophy if strategy else "",
        risk_limits={
            name: value if value is None or isinstance(value, bool) else str(value) for name, value in limits.items()
        },
        provider=run.provider,
        models={"default": choice.default_model, "deep": choice.deep_model},
        directives=_directives_seen(run),
    )


def _snapshot_once(run: PipelineRun, lease: RunLease, choice: ModelChoice, account: Account) -> None:
    """Keep what the run uses, on its first attempt only: a resumed run keeps the snapshot of the
    attempt that started it, whatever changed since. Only while this attempt holds the run."""
    snapshot = _run_snapshot(run, choice, account).model_dump(mode="json")
    if run.used is None and _run_row_later(run, used=snapshot):
        run.used = snapshot  # a run made in this replay day's transaction: its first attempt
        return
    written = PipelineRun.objects.filter(pk=run.pk, used__isnull=True, lease_owner=lease.owner).update(used=snapshot)
    if written:
        run.used = snapshot


# What ends a run early after a stage finished: (status, reason), or None to go on.
_Ending = tuple[str, str] | None


def _ending_after(output: StageOutput) -> _Ending:
    if isinstance(output, RiskOutput) and output.held:
        return PipelineRun.Status.HELD, output.held
    if isinstance(output, AnalystsOutput) and not output.quorum:
        return PipelineRun.Status.DEGRADED, "quorum not met: fewer than 3 of 4 analyst notes"
    return None


def _run_stage(ctx: RunContext, stage: str) -> StageOutput | None:
    """One stage, stored; None when it failed (the run is then finished as failed, with why)."""
    ctx.budget.refresh()
    if ctx.buffer is not None:
        record = ctx.buffer.start(ctx.run, stage)
    else:
        record = _start_stage(ctx.run, stage, ctx.lease, has_row=stage in ctx.stage_rows)
    try:
        output = STAGE_FUNCTIONS[stage](ctx)
    except (StageFailed, BudgetExceeded) as error:
        reason = getattr(error, "reason", None) or f"{type(error).__name__}: {error}"
    except (OperationalError, LeaseLost):
        raise  # the database blinked (the task retries; the run resumes here), or the run is not ours
    except Exception as error:
        # A bug or a time limit must not leave the run "running" to be retried forever.
        logger.exception("run %s failed in stage %s", ctx.run.pk, stage)
        reason = f"internal error: {type(error).__name__}: {error}"
    else:
        return _complete_stage(ctx, record, output)
    _fail_stage(ctx, record, reason)
    _finish(ctx.run, PipelineRun.Status.FAILED, f"{stage}: {reason}", ctx.lease)
    return None


def _execute(
    run: PipelineRun,
    lease: RunLease,
    recorder: WakingRecorder,
    progress: _Progress,
    *,
    stop_after: str | None,
    buffer: _StageBuffer | None = None,
) -> PipelineRun:
    stored = _finished_outputs(run, lease)
    if stored is None:
        return run
    done = stored.outputs
    account = _account_of(run)
    if not done.has("risk") and (held := _held(run, account)):
        # Checked first so a busy instrument costs no model call; checked again under the lock.
        _finish(run, PipelineRun.Status.HELD, held, lease)
        return run
    choice = _choose_model(run, lease)
    if choice is None:
        return run
    _snapshot_once(run, lease, choice, account)
    mode = _replay_runs.get()
    budget = recording.RunBudget(
        run_id=run.pk,
        recorder=recorder,
        provider=run.provider,
        # Made a moment ago in this transaction: no call of it is stored yet.
        fresh=mode is not None and mode.exclusive,
    )
    ctx = RunContext(
        run=run,
        choice=choice,
        recorder=recorder,
        budget=budget,
        outputs=done,
        lease=lease,
        account=account,
        stage_rows=stored.stage_rows,
        buffer=buffer,
    )
    for stage in [stage for stage in STAGES if not done.has(stage)]:
        progress.stage = stage
        output = _run_stage(ctx, stage)
        if output is None:
            return run
        if ending := _ending_after(output):
            _finish(run, *ending, lease)
            return run
        if stage == stop_after:
            return run
    _finish(run, PipelineRun.Status.COMPLETED, "", lease)
    return run


def _note_attempt_death(run: PipelineRun, lease: RunLease, stage: str, error: BaseException) -> None:
    """What killed this attempt, kept on the run (still running) for the next attempt's give-up
    reason. Best effort: the error may be the database itself."""
    note = redact_secrets(f"attempt {run.attempts} died in {stage}: {type(error).__name__}: {error}")
    try:
        PipelineRun.objects.filter(pk=run.pk, lease_owner=lease.owner).update(failure_reason=note)
    except Exception:
        logger.warning("run %s: could not note why attempt %s died", run.pk, run.attempts, exc_info=True)


def _write_later(run_id: int) -> None:
    """What ``_run_row_later`` kept for a run that stopped before its ending (``stop_after``, or
    an error on its way out): written now, as the live path would have written it already."""
    mode = _replay_runs.get()
    later = mode.at_ending.pop(run_id, None) if mode is not None else None
    if later:
        try:
            PipelineRun.objects.filter(pk=run_id).update(**later)
        except Exception:
            logger.warning("run %s: could not write its snapshot and bundle link", run_id, exc_info=True)


def _write_quietly(buffer: _StageBuffer, run_id: int) -> None:
    # The stages an attempt started are kept even when it dies, as the live path's rows are.
    try:
        buffer.write()
    except Exception:
        logger.warning("run %s: could not write its stage rows", run_id, exc_info=True)


def _flush_quietly(recorder: recording.BufferedRecorder, run_id: int) -> None:
    # The calls an attempt finished are kept even when it dies; a failure here must not hide the
    # error that is on its way out.
    try:
        recorder.flush()
    except Exception:
        logger.warning("run %s: could not write its last model calls", run_id, exc_info=True)


# --- runs nobody executes -------------------------------------------------------------------------


def stale_runs_requeue(*, older_than: dt.timedelta, queue: str | None = None) -> list[int]:
    """Queue again the runs nobody executes: running with a lease that expired (its executor
    stopped renewing it: the worker died) and not queued again since, and queued runs whose
    message was sent more than ``older_than`` ago and never picked up (a broker that lost it). A
    run with a live lease is left alone however slow its stage. Runs out of attempts fail with
    the reason instead. Resuming is safe because finished stages are read back, not redone."""
    now = timezone.now()
    cutoff = now - older_than
    not_sent_since = Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=F("lease_expires_at")) | Q(enqueued_at__lt=cutoff)
    orphaned = Q(status=PipelineRun.Status.RUNNING) & lease_free(now) & not_sent_since
    lost = Q(status=PipelineRun.Status.QUEUED, enqueued_at__lt=cutoff)
    requeued = []
    for run in PipelineRun.objects.filter(orphaned | lost).order_by("pk")[:REQUEUE_BATCH]:
        if _requeue(run, queue=queue, why=_why_lost(run)):
            requeued.append(run.pk)
    return requeued


def dead_workers_runs_requeue(*, queue: str | None = None) -> list[int]:
    """At a worker's start, at once: the runs whose executor is gone, because its lease expired or
    because it was a process of this host that no longer exists (the worker that was killed; with
    the embedded broker its message died with it). Sent to ``queue``, the starting worker's."""
    now = timezone.now()
    held = (
        PipelineRun.objects.filter(status=PipelineRun.Status.RUNNING)
        .exclude(lease_owner="")
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=F("lease_expires_at")))
        .order_by("pk")
    )
    requeued = []
    for run in held[:REQUEUE_BATCH]:
        if run.lease_expires_at is not None and run.lease_expires_at >= now:
            if not owner_is_dead_here(run.lease_owner):
                continue  # a live executor
            # Its holder is dead: its lease need not be waited out.
            expired = PipelineRun.objects.filter(
                pk=run.pk, lease_owner=run.lease_owner, lease_expires_at=run.lease_expires_at
            ).update(lease_expires_at=now - dt.timedelta(seconds=1))
            if not expired:
                continue
            why = f"its process {run.lease_owner} is gone (seen by a worker starting on {this_host()})"
            run.lease_expires_at = now - dt.timedelta(seconds=1)
        else:
            why = _why_lost(run)
        if _requeue(run, queue=queue, why=why):
            requeued.append(run.pk)
    return requeued


def _why_lost(run: PipelineRun) -> str:
    if run.status == PipelineRun.Status.QUEUED:
        return f"its message, sent at {run.enqueued_at:%Y-%m-%d %H:%M:%S}, was never picked up"
    if run.lease_owner:
        return f"{run.lease_owner} stopped renewing its lease (expired at {run.lease_expires_at:%Y-%m-%d %H:%M:%S})"
    return "its attempt stopped and nobody picked the run up again"


def _requeue(run: PipelineRun, *, queue: str | None, why: str) -> bool:
    """One run nobody executes: its last attempt noted, then sent again, or given up when it has
    used all its attempts. Every step is conditional on the state the caller saw."""
    if run.status == PipelineRun.Status.RUNNING:
        note = redact_secrets(f"attempt {run.attempts} stopped without finishing: {why}")
        noted = (
            PipelineRun.objects.filter(pk=run.pk, status=run.status, attempts=run.attempts, lease_owner=run.lease_owner)
            .filter(lease_free(timezone.now()))
            .update(failure_reason=note)
        )
        if not noted:
            return False  # claimed meanwhile
        run.failure_reason = note
        if run.attempts >= settings.RUN_MAX_ATTEMPTS:
            run_give_up(run)
            return False
    try:
        return run_send(run.pk, expect=Q(enqueued_at=run.enqueued_at), queue=queue, action="run_requeued", reason=why)
    except QueueUnavailable:
        return False  # still unsent: the next sweep tries again


__all__ = [
    "PROVIDERS",
    "STAGES",
    "ReplayRuns",
    "pipeline_run_create",
    "pipeline_run_execute",
    "replay_runs",
    "run_group",
]
