"""Stages 1-7 end to end on the real services with the offline model."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from agents import roles
from agents.domain.llm import StageFailed
from agents.models import ModelCall
from trading.book.domain.risk import CHECK_NAMES
from trading.models import PipelineRun, StageRun, Thesis
from trading.pipeline.orchestrator import STAGES, pipeline_run_create, pipeline_run_execute
from trading.pipeline.presenters import run_outputs as _outputs


@pytest.fixture
def run(instrument_with_bars):
    as_of = instrument_with_bars.bars.latest("date").date
    return pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")


def test_an_offline_run_goes_from_features_to_a_sized_thesis(run):
    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.COMPLETED, finished.failure_reason
    outputs = _outputs(run)
    assert list(outputs.stored()) == list(STAGES)
    notes = outputs.analysts.notes
    assert set(notes) == {"news", "sentiment", "technical", "fundamental"}
    assert notes["fundamental"].abstained and notes["fundamental"].model_used == "deterministic-abstain"
    assert notes["technical"].model_used == "offline-rules"
    thesis = Thesis.objects.get(run=run)
    technical = outputs.features.bundle.technical
    assert float(thesis.entry) == pytest.approx(technical.last_close, abs=0.05)
    stop_distance = abs(thesis.entry - thesis.stop)
    assert float(stop_distance) == pytest.approx(2 * technical.atr_14, abs=0.05)
    assert abs(thesis.target - thesis.entry) == 2 * stop_distance
    assert len(thesis.risk_checks) == len(CHECK_NAMES)
    assert ModelCall.objects.filter(run=run, ok=True).count() >= 6


def test_a_run_interrupted_after_the_analysts_resumes_without_duplicates(run):
    pipeline_run_execute(run.pk, stop_after="analysts")
    analyst_calls = ModelCall.objects.filter(run=run).count()
    notes_before = _outputs(run).analysts

    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.COMPLETED
    assert StageRun.objects.filter(run=run).count() == len(STAGES)
    assert _outputs(run).analysts == notes_before
    assert ModelCall.objects.filter(run=run, role__in=["news", "technical"]).count() == analyst_calls
    assert Thesis.objects.filter(run=run).count() == 1


def test_a_finished_run_delivered_again_changes_nothing(run):
    pipeline_run_execute(run.pk)
    calls = ModelCall.objects.count()

    again = pipeline_run_execute(run.pk)

    assert again.status == PipelineRun.Status.COMPLETED
    assert ModelCall.objects.count() == calls and Thesis.objects.count() == 1


def test_two_failed_analysts_degrade_the_run_before_the_debate(run, monkeypatch):
    real = roles.run_analysts

    def two_fail(*args, **kwargs):
        results = real(*args, **kwargs)
        results["news"] = StageFailed("news: provider kept failing")
        results["technical"] = StageFailed("technical: invalid output after one repair")
        return results

    monkeypatch.setattr(roles, "run_analysts", two_fail)
    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.DEGRADED
    assert "quorum" in finished.failure_reason
    assert _outputs(run).debate is None and not Thesis.objects.exists()


def test_a_broken_thesis_geometry_fails_closed_with_the_reason(run, monkeypatch):
    real = roles.propose_thesis

    def upside_down(*args, **kwargs):
        thesis = real(*args, **kwargs)
        return thesis.model_copy(update={"target": thesis.stop, "stop": thesis.target})

    monkeypatch.setattr(roles, "propose_thesis", upside_down)
    monkeypatch.setattr("trading.pipeline.orchestrator.anchor_levels", lambda thesis, **kwargs: thesis)
    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert finished.failure_reason.startswith("trader: thesis validator:")
    assert not Thesis.objects.exists()


def test_a_spent_token_budget_stops_the_run_with_a_clear_status(run, settings):
    settings.LLM = {**settings.LLM, "RUN_TOKEN_BUDGET": 1}

    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert "budget" in finished.failure_reason


def test_a_replayed_run_reproduces_the_recorded_one(run, instrument_with_bars):
    pipeline_run_execute(run.pk)
    replay = pipeline_run_create(instrument=instrument_with_bars, as_of=run.as_of, provider="replay")

    finished = pipeline_run_execute(replay.pk)

    assert finished.status == PipelineRun.Status.COMPLETED, finished.failure_reason
    original, replayed = _outputs(run), _outputs(replay)
    assert replayed.debate == original.debate
    assert replayed.trader == original.trader


def test_a_replay_without_a_recording_fails_instead_of_guessing(run, instrument_with_bars):
    replay = pipeline_run_create(instrument=instrument_with_bars, as_of=run.as_of, provider="replay")

    finished = pipeline_run_execute(replay.pk)

    # The one analyst that calls a model (no news, no fundamentals, no positioning feed: the other
    # three abstain) cannot be answered, and nor can the debate: nothing is guessed.
    assert finished.status == PipelineRun.Status.FAILED
    failures = _outputs(replay).analysts.failures
    assert set(failures) == {"technical"}
    assert all("ReplayMiss" in reason for reason in failures.values())
    assert finished.failure_reason.startswith("debate:") and "ReplayMiss" in finished.failure_reason


def test_the_command_prints_a_readable_summary(instrument_with_bars, capsys):
    call_command("run_pipeline", "RELIANCE")

    out = capsys.readouterr().out
    assert "→ COMPLETED" in out
    assert "Debate:" in out and "Thesis:" in out and "Risk:" in out
    assert "fundamental  stance +0.00  confidence 0.15 (abstained)" in out


def test_an_unexpected_error_fails_the_run_instead_of_leaving_it_running(run, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr(roles, "judge", broken)
    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert finished.failure_reason == "debate: internal error: KeyError: 'bug'"
    assert StageRun.objects.get(run=run, stage="debate").status == "failed"
