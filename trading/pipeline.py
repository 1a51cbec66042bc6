"""Stages 1-7 of a pipeline run, each persisted before the next starts.

A run resumes at its first unfinished stage: a finished stage's stored output is read back, never
recomputed, so a retried or crashed run cannot duplicate a note, a debate or a thesis. Numbers by
code, words by models: the models argue; calibration, prices, validation and size are computed
here from stored data.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import Count, F, Max, Sum
from django.utils import timezone

from agents import recording
from agents.domain import roles
from agents.domain.citations import check_citations
from agents.domain.llm import BudgetExceeded, LatencyClient, ModelChoice, StageFailed
from agents.domain.memory import format_memory_block
from agents.domain.offline import OfflineModel
from agents.domain.pricing import FREE_PROVIDERS, PriceTable
from agents.domain.prompts import anchors_from_bundle
from agents.domain.schemas import AnalystNote, DebateResult, TradeThesis
from agents.providers.factory import PROVIDERS, ProviderSettings, build_llm_client
from trading import services
from trading.approvals import thesis_expiry
from trading.audit import audit_record
from trading.domain.calibration import calibrate_conviction
from trading.domain.features import NoPriceData
from trading.domain.levels import ThesisInvalid, anchor_levels, validate_thesis
from trading.domain.risk import evaluate_risk
from trading.domain.schemas import FeatureBundle
from trading.events import DeskEvent, publish
from trading.models import Instrument, PipelineRun, StageRun, Thesis
from trading.portfolio import account_for_run, account_lock, account_portfolio, instrument_live_idea, risk_limits

logger = logging.getLogger(__name__)

STAGES = ("features", "context", "analysts", "debate", "trader", "risk")
# ATR(14) needs 14 true ranges, so 15 sessions of bars.
ATR_MIN_SESSIONS = 15
# A conviction the trader restates within this of the calibrated one is the same number, rounded.
CONVICTION_TOLERANCE = 0.005
DEFAULT_MODELS = {
    "offline": ("offline-rules", "offline-rules"),
    "replay": ("replay", "replay"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-5"),
    "openai": ("gpt-4.1-mini", "gpt-4.1"),
    "ollama": ("llama3.1", "llama3.1"),
}


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def _publish(run: PipelineRun, kind: str, **data: Any) -> None:
    publish(DeskEvent(kind=kind, data={"run_id": run.pk, **data}), group=run_group(run.pk))


# --- creating and claiming runs ---------------------------------------------------------------


def provider_models(provider: str) -> tuple[str, str]:
    """The default and deep model a provider's runs use."""
    default_model, deep_model = DEFAULT_MODELS[provider]
    if provider not in ("offline", "replay"):
        # A real provider's model names are configurable; the offline and replay ones are not.
        default_model = settings.LLM["DEFAULT_MODEL"] or default_model
        deep_model = settings.LLM["DEEP_MODEL"] or deep_model
    return default_model, deep_model


def require_priced(provider: str) -> None:
    """A paid provider's models must have a price, or the daily cost budget would count their
    calls as free and never stop them."""
    if provider in FREE_PROVIDERS:
        return
    table = PriceTable.from_mapping(settings.LLM.get("PRICES", {}))
    unpriced = sorted({model for model in provider_models(provider) if not table.known(model)})
    if unpriced and table.fallback is None:
        raise ValueError(
            f"{provider} model {', '.join(unpriced)} has no price, so the daily cost budget could not count its "
            'calls: add it to LLM_PRICES (e.g. {"' + unpriced[0] + '": {"input": "3", "output": "15"}}, USD per '
            'million tokens) or set a "*" fallback price'
        )


def pipeline_run_create(*, instrument: Instrument, as_of: dt.date, provider: str, user=None) -> PipelineRun:
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    require_priced(provider)
    run = PipelineRun.objects.create(
        instrument=instrument,
        as_of=as_of,
        provider=provider,
        created_by=user if user and user.is_authenticated else None,
    )
    audit_record(
        actor=user,
        actor_label="" if user else "system",
        action="run_created",
        target=f"run {run.pk}",
        details={"symbol": instrument.symbol, "as_of": as_of.isoformat(), "provider": provider},
    )
    return run


def _claim(run_id: int) -> PipelineRun | None:
    claimed = PipelineRun.objects.filter(
        pk=run_id, status__in=[PipelineRun.Status.QUEUED, PipelineRun.Status.RUNNING]
    ).update(status=PipelineRun.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1)
    if not claimed:
        return None
    return PipelineRun.objects.select_related("instrument").get(pk=run_id)


def _finish(run: PipelineRun, status: str, reason: str = "") -> None:
    PipelineRun.objects.filter(pk=run.pk).update(status=status, failure_reason=reason, finished_at=timezone.now())
    run.status, run.failure_reason = status, reason
    _publish(run, "run.finished", status=status, reason=reason)


# --- the model choice for a run -----------------------------------------------------------------


def model_choice(provider: str, *, symbol: str) -> ModelChoice:
    default_model, deep_model = provider_models(provider)
    client = build_llm_client(
        provider,
        settings=ProviderSettings.from_sources(settings.LLM, os.environ),
        replay_lookup=recording.replay_lookup_for(symbol) if provider == "replay" else None,
        offline_client=OfflineModel(),
    )
    latency = settings.LLM.get("OFFLINE_LATENCY_MS", 0.0)
    if provider == "offline" and latency:
        client = LatencyClient(client, latency)
    return ModelChoice(client=client, default_model=default_model, deep_model=deep_model)


@dataclass
class RunContext:
    run: PipelineRun
    choice: ModelChoice
    recorder: recording.BufferedRecorder
    budget: recording.RunBudget
    outputs: dict[str, dict]

    @property
    def bundle(self) -> FeatureBundle:
        return FeatureBundle.model_validate(self.outputs["features"]["bundle"])

    @property
    def notes(self) -> list[AnalystNote]:
        return [AnalystNote.model_validate(n) for n in self.outputs["analysts"]["notes"].values()]


# --- the stages ---------------------------------------------------------------------------------


def _stage_features(ctx: RunContext) -> dict:
    try:
        bundle = services.feature_bundle_for(instrument=ctx.run.instrument, as_of=ctx.run.as_of)
    except NoPriceData as error:
        raise StageFailed(str(error)) from None
    return {"bundle": bundle.model_dump(mode="json")}


def _memory_query(instrument: Instrument, bundle: FeatureBundle) -> str:
    t = bundle.technical
    trend = "uptrend" if t.sma_50 and t.last_close > t.sma_50 else "downtrend"
    return f"{instrument.symbol} {instrument.sector} {trend} breakout support resistance earnings"


def _strategy_of(run: PipelineRun):
    return run.strategy_run.strategy if run.strategy_run_id else None


def _stage_context(ctx: RunContext) -> dict:
    instrument = ctx.run.instrument
    # A replay's run reads its own replay's lessons beside the live ones; a live run, live ones only.
    # Named here from the run itself, so a replay run resumed by any worker reads the same memory.
    replay_account = account_for_run(ctx.run).pk if ctx.run.is_replay else None
    hits = recording.memory_search(
        _memory_query(instrument, ctx.bundle),
        symbol=instrument.symbol,
        as_of=ctx.run.as_of,
        scopes=recording.memory_scopes(replay_account_id=replay_account),
    )
    strategy = _strategy_of(ctx.run)
    memory_block = format_memory_block(hits)
    if strategy is not None:
        # The mandate travels with the memory block, so every agent reads it before the evidence.
        mandate = " ".join(strategy.philosophy.split())
        memory_block = f"Strategy mandate ({strategy.name}): {mandate}\n{memory_block}"
    return {
        "memory_block": memory_block,
        "memory_ids": [hit.record.id for hit in hits],
        "mandate": strategy.philosophy if strategy else "",
    }


def _stage_analysts(ctx: RunContext) -> dict:
    results = roles.run_analysts(
        ctx.choice,
        ctx.bundle,
        memory_block=ctx.outputs["context"]["memory_block"],
        recorder=ctx.recorder,
        budget=ctx.budget,
    )
    notes = {role: r.model_dump(mode="json") for role, r in results.items() if isinstance(r, AnalystNote)}
    failures = {role: r.reason for role, r in results.items() if isinstance(r, StageFailed)}
    # Every indicator value a note cites, checked against the bundle; kept for the run page and
    # for any later critique. A mismatch is shown, never silently corrected.
    checks = {role: check_citations(r, ctx.bundle) for role, r in results.items() if isinstance(r, AnalystNote)}
    return {
        "notes": notes,
        "failures": failures,
        "quorum": roles.quorum_met(results),
        "citations": {role: check.model_dump(mode="json") for role, check in checks.items()},
        "citation_mismatches": sum(check.mismatches for check in checks.values()),
    }


def _stage_debate(ctx: RunContext) -> dict:
    notes, bundle = ctx.notes, ctx.bundle
    memory_block = ctx.outputs["context"]["memory_block"]
    common = {"recorder": ctx.recorder, "budget": ctx.budget, "memory_block": memory_block}
    bull, bear = roles.build_cases(ctx.choice, notes, bundle, **common)
    bull_final, bear_final = roles.rebut_cases(ctx.choice, bull, bear, **common)
    verdict = roles.judge(ctx.choice, notes, bull_final, bear_final, anchors=anchors_from_bundle(bundle), **common)
    calibrated = calibrate_conviction(verdict.conviction, verdict.winner, notes)
    result = verdict.model_copy(
        update={"conviction": calibrated.conviction, "proposed_conviction": calibrated.proposed}
    )
    return {
        "bull_initial": bull.model_dump(mode="json"),
        "bear_initial": bear.model_dump(mode="json"),
        "bull": bull_final.model_dump(mode="json"),
        "bear": bear_final.model_dump(mode="json"),
        "result": result.model_dump(mode="json"),
        "calibration": {
            "proposed": calibrated.proposed,
            "conviction": calibrated.conviction,
            "opposing": calibrated.opposing,
            "side_taking": calibrated.side_taking,
            "haircut": calibrated.haircut,
        },
    }


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


def _stage_trader(ctx: RunContext) -> dict:
    """The trader writes the rationale and risks. Direction and conviction are the debate's
    (calibrated by code); entry, stop and target come from the last close and ATR. Without an
    ATR there are no prices to anchor to, and the stage fails closed rather than trade the
    model's numbers."""
    bundle, instrument = ctx.bundle, ctx.run.instrument
    debate = DebateResult.model_validate(ctx.outputs["debate"]["result"])
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
        other_symbols=list(Instrument.objects.exclude(pk=instrument.pk).values_list("symbol", flat=True)),
        recorder=ctx.recorder,
        budget=ctx.budget,
        memory_block=ctx.outputs["context"]["memory_block"],
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
    return {
        "proposed": proposed.model_dump(mode="json"),
        "thesis": anchored.model_dump(mode="json"),
        "warnings": _overruled(proposed, debate),
    }


def _held(run: PipelineRun, account) -> str:
    busy = instrument_live_idea(account, run.instrument_id, exclude_run_id=run.pk)
    return f"HOLD: {run.instrument.symbol} {busy}; one live idea per instrument" if busy else ""


def _stage_risk(ctx: RunContext) -> dict:
    """Size and check against the live book, then store the thesis, all under the account's
    lock: twelve runs on one instrument at the same moment leave one thesis, and the others say
    why they hold."""
    run, instrument = ctx.run, ctx.run.instrument
    thesis = TradeThesis.model_validate(ctx.outputs["trader"]["thesis"])
    with transaction.atomic():
        account = account_lock(account_for_run(run).pk)
        if instrument.currency != account.currency:
            # The limits are in the account's money; without an exchange rate a USD price against
            # rupee capital would size the trade wrong by the whole rate.
            raise StageFailed(
                f"{instrument.symbol} trades in {instrument.currency} but the account {account.name!r} is in "
                f"{account.currency}, and the desk has no exchange rate to size it with"
            )
        held = _held(run, account)
        if held:
            return {"held": held}
        decision = evaluate_risk(
            direction=thesis.direction,
            entry=Decimal(str(thesis.entry)),
            stop=Decimal(str(thesis.stop)),
            target=Decimal(str(thesis.target)),
            lot_size=instrument.lot_size,
            limits=risk_limits(account, _strategy_of(run)),
            portfolio=account_portfolio(account, today=run.as_of, instrument_id=instrument.pk),
        )
        summary = decision.to_dict()
        warnings = list(ctx.outputs["trader"].get("warnings", []))
        if decision.sizing:
            warnings.append(decision.sizing)
        Thesis.objects.get_or_create(
            run=run,
            defaults={
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
                "risk_checks": summary["checks"],
                "payload": thesis.model_dump(mode="json"),
                "warnings": warnings,
                "status": Thesis.Status.PENDING if decision.approved else Thesis.Status.REJECTED_BY_RISK,
                "expires_at": thesis_expiry(timezone.now()),
            },
        )
    return {"decision": summary}


STAGE_FUNCTIONS: dict[str, Callable[[RunContext], dict]] = {
    "features": _stage_features,
    "context": _stage_context,
    "analysts": _stage_analysts,
    "debate": _stage_debate,
    "trader": _stage_trader,
    "risk": _stage_risk,
}


# --- running ------------------------------------------------------------------------------------


def _start_stage(run: PipelineRun, stage: str) -> StageRun:
    record, created = StageRun.objects.get_or_create(
        run=run, stage=stage, defaults={"position": STAGES.index(stage), "status": StageRun.Status.RUNNING}
    )
    if not created:
        StageRun.objects.filter(pk=record.pk).update(
            status=StageRun.Status.RUNNING, error="", started_at=timezone.now()
        )
    _publish(run, "stage.started", stage=stage)
    return record


def _complete_stage(ctx: RunContext, record: StageRun, output: dict) -> None:
    with transaction.atomic():
        ctx.recorder.flush()
        StageRun.objects.filter(pk=record.pk).update(
            status=StageRun.Status.DONE, output=output, finished_at=timezone.now(), error=""
        )
    ctx.outputs[record.stage] = output
    _publish(ctx.run, "stage.finished", stage=record.stage, status="done")


def _fail_stage(ctx: RunContext, record: StageRun, reason: str) -> None:
    with transaction.atomic():
        ctx.recorder.flush()
        StageRun.objects.filter(pk=record.pk).update(
            status=StageRun.Status.FAILED, error=reason, finished_at=timezone.now()
        )
    _publish(ctx.run, "stage.finished", stage=record.stage, status="failed", reason=reason)


def pipeline_run_execute(run_id: int, *, stop_after: str | None = None) -> PipelineRun | None:
    """Run (or resume) one pipeline run. Returns None when the run is gone or already finished.

    ``stop_after`` ends the call after that stage as if the process had died there (tests)."""
    run = _claim(run_id)
    if run is None:
        return PipelineRun.objects.filter(pk=run_id).first()
    done = {s.stage: s.output for s in StageRun.objects.filter(run=run, status=StageRun.Status.DONE)}
    if "risk" not in done and (held := _held(run, account_for_run(run))):
        # Checked first so a busy instrument costs no model call; checked again under the lock.
        _finish(run, PipelineRun.Status.HELD, held)
        return run
    recorder = recording.BufferedRecorder(run_id=run.pk, prices=PriceTable.from_mapping(settings.LLM.get("PRICES", {})))
    ctx = RunContext(
        run=run,
        choice=model_choice(run.provider, symbol=run.instrument.symbol),
        recorder=recorder,
        budget=recording.RunBudget(run_id=run.pk, recorder=recorder, provider=run.provider),
        outputs=dict(done),
    )
    for stage in STAGES:
        if stage in done:
            continue
        ctx.budget.refresh()
        record = _start_stage(run, stage)
        try:
            output = STAGE_FUNCTIONS[stage](ctx)
        except (StageFailed, BudgetExceeded) as error:
            reason = getattr(error, "reason", None) or f"{type(error).__name__}: {error}"
            _fail_stage(ctx, record, reason)
            _finish(run, PipelineRun.Status.FAILED, f"{stage}: {reason}")
            return run
        except OperationalError:
            raise  # the database blinked: the task retries and the run resumes at this stage
        except Exception as error:
            # A bug or a time limit must not leave the run "running" to be retried forever.
            logger.exception("run %s failed in stage %s", run.pk, stage)
            reason = f"internal error: {type(error).__name__}: {error}"
            _fail_stage(ctx, record, reason)
            _finish(run, PipelineRun.Status.FAILED, f"{stage}: {reason}")
            return run
        _complete_stage(ctx, record, output)
        if stage == "risk" and output.get("held"):
            _finish(run, PipelineRun.Status.HELD, output["held"])
            return run
        if stage == "analysts" and not output["quorum"]:
            _finish(run, PipelineRun.Status.DEGRADED, "quorum not met: fewer than 3 of 4 analyst notes")
            return run
        if stage == stop_after:
            return run
    _finish(run, PipelineRun.Status.COMPLETED)
    return run


def stale_runs_requeue(*, older_than: dt.timedelta, queue: str | None = None) -> list[int]:
    """Queue again the runs whose worker died: still queued or running, with no stage activity
    for ``older_than``. Resuming is safe because finished stages are read back, not redone."""
    from trading.tasks import run_pipeline

    cutoff = timezone.now() - older_than
    candidates = PipelineRun.objects.filter(
        status__in=[PipelineRun.Status.QUEUED, PipelineRun.Status.RUNNING], created_at__lt=cutoff
    ).annotate(last_activity=Max("stages__started_at"))
    stale = [run.pk for run in candidates if (run.last_activity or run.started_at or run.created_at) < cutoff]
    for run_id in stale:
        audit_record(action="run_requeued", target=f"run {run_id}", reason=f"no activity since {cutoff:%Y-%m-%d %H:%M}")
        run_pipeline.apply_async((run_id,), queue=queue)
    return stale


def run_totals(run: PipelineRun) -> dict[str, Any]:
    totals = run.model_calls.aggregate(
        calls=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost=Sum("cost")
    )
    return {key: value or 0 for key, value in totals.items()}


__all__ = [
    "PROVIDERS",
    "STAGES",
    "pipeline_run_create",
    "pipeline_run_execute",
    "run_group",
    "run_totals",
]
