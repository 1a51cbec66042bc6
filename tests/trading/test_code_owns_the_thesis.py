"""Code decides direction, conviction, levels and the book's admission; a model that disagrees is
kept for audit and never acted on. Runs on the real pipeline with a hostile fake provider."""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import pytest
from django.db import connection

from agents.domain.llm import ModelChoice, ModelReply, ModelRequest
from agents.roles import OfflineModel
from trading.book.approvals import thesis_approve
from trading.models import Instrument, PipelineRun, StageRun, Thesis
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute
from trading.pipeline.outputs import StageOutput, read_stage_output


class HostileTrader:
    """The offline model for every role but the trader, whose reply flips the debate's side,
    claims a conviction of 0.99, says its own (off-grid) prices are anchored, and is schema-valid."""

    provider = "offline"

    def __init__(self) -> None:
        self.inner = OfflineModel()

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        reply = self.inner.complete(request, model=model)
        if request.role != "trader":
            return reply
        thesis = json.loads(reply.text)
        flipped = "LONG" if thesis["direction"] == "SHORT" else "SHORT"
        entry = thesis["entry"]
        stop, target = (entry * 0.5, entry * 3.01) if flipped == "LONG" else (entry * 1.5, entry * 0.33)
        thesis.update(
            direction=flipped,
            conviction=0.99,
            entry=entry + 0.01,
            stop=stop,
            target=target,
            levels_source="atr-anchor",
        )
        return reply.model_copy(update={"text": json.dumps(thesis)})


def _run(instrument: Instrument) -> PipelineRun:
    as_of = instrument.bars.latest("date").date
    return pipeline_run_create(instrument=instrument, as_of=as_of, provider="offline")


def _stage(run: PipelineRun, name: str) -> StageOutput:
    return read_stage_output(name, StageRun.objects.get(run=run, stage=name).output)


def test_a_trader_reply_that_disagrees_is_kept_for_audit_and_never_acted_on(
    instrument_with_bars, roomy_account, monkeypatch
):
    hostile = ModelChoice(client=HostileTrader(), default_model="offline-rules", deep_model="offline-rules")
    monkeypatch.setattr("trading.pipeline.orchestrator.model_choice", lambda provider, symbol: hostile)
    run = _run(instrument_with_bars)

    assert pipeline_run_execute(run.pk).status == PipelineRun.Status.COMPLETED
    debate = _stage(run, "debate").result
    trader = _stage(run, "trader")
    thesis = Thesis.objects.get(run=run)
    technical = _stage(run, "features").bundle.technical

    assert trader.proposed.direction != debate.winner  # the reply is on the record
    assert thesis.direction == debate.winner
    assert thesis.conviction == Decimal(str(debate.conviction)).quantize(Decimal("0.0001"))
    assert thesis.entry == Decimal(str(technical.last_close)).quantize(Decimal("0.05"))
    assert abs(thesis.entry - thesis.stop) <= Decimal(str(2 * technical.atr_14)) + Decimal("0.05")
    assert any("the trader replied" in warning for warning in thesis.warnings)
    assert any("0.99" in warning for warning in thesis.warnings)


def test_without_an_atr_the_trader_stage_fails_closed_and_no_thesis_is_made(instrument, roomy_account):
    from tests.conftest import make_bars

    make_bars(instrument, 12)  # too short a history for ATR(14)
    run = _run(instrument)

    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert "no ATR(14)" in finished.failure_reason and "never taken from the model" in finished.failure_reason
    assert not Thesis.objects.exists()


def test_a_short_is_refused_by_its_own_check_on_a_cash_delivery_account(instrument_with_bars, db):
    # The seeded walk ends in a downtrend: the debate goes SHORT.
    run = _run(instrument_with_bars)
    pipeline_run_execute(run.pk)
    thesis = Thesis.objects.get(run=run)

    assert thesis.direction == "SHORT" and thesis.status == Thesis.Status.REJECTED_BY_RISK
    short_check = next(check for check in thesis.risk_checks if check["name"] == "short_allowed")
    assert not short_check["passed"] and "cash delivery" in short_check["detail"]


def test_a_second_run_on_a_pending_instrument_holds_and_says_why(instrument_with_bars, roomy_account, approver):
    first = _run(instrument_with_bars)
    pipeline_run_execute(first.pk)
    pending = Thesis.objects.get(run=first)

    second = pipeline_run_execute(_run(instrument_with_bars).pk)
    assert second.status == PipelineRun.Status.HELD
    assert second.failure_reason == (
        f"HOLD: RELIANCE a thesis is already pending approval (thesis #{pending.pk}); one live idea per instrument"
    )
    assert not second.stages.exists()  # held before any model was asked

    thesis_approve(thesis=pending, user=approver)
    third = pipeline_run_execute(_run(instrument_with_bars).pk)
    assert third.status == PipelineRun.Status.HELD and "an order is already working" in third.failure_reason
    assert Thesis.objects.count() == 1


def test_a_usd_instrument_in_a_rupee_account_is_refused_rather_than_sized_wrong(instrument_with_bars, roomy_account):
    Instrument.objects.filter(pk=instrument_with_bars.pk).update(currency="USD")
    instrument_with_bars.refresh_from_db()

    finished = pipeline_run_execute(_run(instrument_with_bars).pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert "trades in USD but the account" in finished.failure_reason
    assert not Thesis.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_runs_on_one_instrument_started_at_once_leave_one_thesis(instrument_with_bars, roomy_account):
    runs = [_run(instrument_with_bars) for _ in range(4)]
    barrier = threading.Barrier(len(runs), timeout=60)

    def execute(run_id: int) -> None:
        barrier.wait()
        try:
            pipeline_run_execute(run_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=execute, args=(run.pk,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    statuses = sorted(PipelineRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True))
    assert statuses == ["completed"] + ["held"] * 3, statuses
    assert Thesis.objects.filter(instrument=instrument_with_bars).count() == 1
