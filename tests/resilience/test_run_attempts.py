"""A run that cannot start fails at once with the reason; a run whose attempts keep dying gives up
after DESK_RUN_MAX_ATTEMPTS, with the last reason, instead of being queued again forever."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from trading.models import AuditEvent, PipelineRun, StageRun
from trading.pipeline import orchestrator
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute, stale_runs_requeue
from trading.pipeline.tasks import run_pipeline


class WorkerDied(BaseException):
    """What a killed process looks like from inside: nothing after it runs, no except catches it."""


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Requeues are recorded instead of sent to a broker."""
    sent: list[int] = []
    monkeypatch.setattr("trading.pipeline.dispatch._publish", lambda run_id, **kwargs: sent.append(run_id))
    return sent


def _run(instrument, provider: str = "offline") -> PipelineRun:
    return pipeline_run_create(instrument=instrument, as_of=instrument.bars.latest("date").date, provider=provider)


def test_a_run_whose_provider_has_no_key_fails_at_once_with_the_reason(
    instrument_with_bars, settings, monkeypatch, sent
):
    settings.LLM = {**settings.LLM, "ANTHROPIC_API_KEY": ""}
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    run = _run(instrument_with_bars, provider="anthropic")

    outcome = run_pipeline(run.pk)

    run.refresh_from_db()
    assert outcome["status"] == run.status == PipelineRun.Status.FAILED
    assert "ANTHROPIC_API_KEY" in run.failure_reason and run.failure_reason.startswith("could not start:")
    assert run.attempts == 1 and run.lease_owner == "" and run.finished_at is not None
    assert not StageRun.objects.filter(run=run, status="running").exists()
    assert stale_runs_requeue(older_than=dt.timedelta(0)) == [] and sent == []


def test_a_run_whose_provider_is_unknown_fails_at_once_with_the_reason(instrument_with_bars, sent):
    run = _run(instrument_with_bars)
    PipelineRun.objects.filter(pk=run.pk).update(provider="nonesuch")

    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert "nonesuch" in finished.failure_reason
    assert stale_runs_requeue(older_than=dt.timedelta(0)) == [] and sent == []


def test_a_run_whose_attempts_keep_dying_gives_up_after_the_maximum_with_the_last_reason(
    instrument_with_bars, settings, monkeypatch
):
    settings.RUN_MAX_ATTEMPTS = 3

    def dies(ctx):
        raise WorkerDied("killed in the debate")

    monkeypatch.setitem(orchestrator.STAGE_FUNCTIONS, "debate", dies)
    run = _run(instrument_with_bars)
    for _ in range(3):
        with pytest.raises(WorkerDied):
            pipeline_run_execute(run.pk)

    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.FAILED
    assert (
        finished.failure_reason
        == "gave up after 3 attempts: attempt 3 died in debate: WorkerDied: killed in the debate"
    )
    assert finished.attempts == 3
    assert AuditEvent.objects.filter(action="run_gave_up", target=f"run {run.pk}").count() == 1


def test_the_stale_sweep_gives_up_on_a_lost_run_at_the_maximum_instead_of_queueing_it(
    instrument_with_bars, settings, sent
):
    settings.RUN_MAX_ATTEMPTS = 3
    run = _run(instrument_with_bars)
    expired = timezone.now() - dt.timedelta(minutes=1)
    PipelineRun.objects.filter(pk=run.pk).update(
        status="running",
        attempts=3,
        lease_owner="gone-host:1:abc",
        lease_expires_at=expired,
        enqueued_at=expired - dt.timedelta(minutes=5),
    )

    assert stale_runs_requeue(older_than=dt.timedelta(minutes=15)) == []

    run.refresh_from_db()
    assert sent == []
    assert run.status == PipelineRun.Status.FAILED
    assert run.failure_reason.startswith("gave up after 3 attempts: attempt 3 stopped without finishing")
    assert "gone-host:1:abc" in run.failure_reason
