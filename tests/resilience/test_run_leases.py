"""One run, one executor: a run is claimed with a lease, renewed while it works, taken over only
once expired; an executor that lost its lease stops without writing, and the stale sweep leaves a
run with a live lease alone however slow its stage.

Transactional: the executions run in threads, each with its own database connection, as two
worker processes would.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter

import pytest
from django.db import connections
from django.utils import timezone

from agents.models import ModelCall
from trading.models import AuditEvent, PipelineRun, StageRun, Thesis
from trading.pipeline import orchestrator
from trading.pipeline.leases import RunLease
from trading.pipeline.orchestrator import STAGES, pipeline_run_create, pipeline_run_execute, stale_runs_requeue

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE_S = 120  # generous: a busy machine must not fail these


def _wait_for(condition, *, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _run(instrument) -> PipelineRun:
    return pipeline_run_create(instrument=instrument, as_of=instrument.bars.latest("date").date, provider="offline")


def _in_thread(target, *args) -> threading.Thread:
    def body():
        try:
            target(*args)
        finally:
            connections.close_all()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    sent: list[int] = []
    monkeypatch.setattr("trading.pipeline.dispatch._publish", lambda run_id, **kwargs: sent.append(run_id))
    return sent


@pytest.fixture
def calls_of_one_run(instrument_with_bars, roomy_account) -> int:
    """How many model calls one run of this instrument makes, measured on a run of its own."""
    reference = _run(instrument_with_bars)
    assert pipeline_run_execute(reference.pk).status == PipelineRun.Status.COMPLETED
    Thesis.objects.filter(run=reference).delete()  # one live idea per instrument: make room again
    return ModelCall.objects.filter(run=reference).count()


def test_two_executions_of_one_run_at_once_run_its_stages_once(instrument_with_bars, calls_of_one_run, monkeypatch):
    run = _run(instrument_with_bars)
    executed: Counter[str] = Counter()
    both_tried = threading.Event()
    for stage, real in list(orchestrator.STAGE_FUNCTIONS.items()):

        def counted(ctx, real=real, stage=stage):
            executed[stage] += 1
            if stage == "context":
                both_tried.wait(DEADLINE_S)  # slow: the other execution arrives while this one works
            return real(ctx)

        monkeypatch.setitem(orchestrator.STAGE_FUNCTIONS, stage, counted)
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def execute():
        start.wait(DEADLINE_S)
        outcome = pipeline_run_execute(run.pk)
        outcomes.append(outcome.status)
        if outcome.status == PipelineRun.Status.RUNNING:
            both_tried.set()  # the one that was refused is back: let the other go on

    threads = [_in_thread(execute), _in_thread(execute)]
    for thread in threads:
        thread.join(DEADLINE_S)

    run.refresh_from_db()
    assert sorted(outcomes) == ["completed", "running"]
    assert run.status == PipelineRun.Status.COMPLETED and run.attempts == 1
    assert executed == Counter(dict.fromkeys(STAGES, 1))
    assert ModelCall.objects.filter(run=run).count() == calls_of_one_run
    assert Thesis.objects.filter(run=run).count() == 1


def test_an_execution_whose_lease_was_taken_over_stops_without_writing(
    instrument_with_bars, roomy_account, monkeypatch
):
    run = _run(instrument_with_bars)
    in_debate, resume = threading.Event(), threading.Event()
    real_debate = orchestrator.STAGE_FUNCTIONS["debate"]

    def slow_debate(ctx):
        in_debate.set()
        resume.wait(DEADLINE_S)
        return real_debate(ctx)

    monkeypatch.setitem(orchestrator.STAGE_FUNCTIONS, "debate", slow_debate)
    outcome: list[PipelineRun] = []
    first = _in_thread(lambda: outcome.append(pipeline_run_execute(run.pk)))
    _wait_for(in_debate.is_set, what="the first execution to reach the debate")
    original = PipelineRun.objects.get(pk=run.pk).lease_owner

    # Its lease runs out (its heartbeat stalled) and another worker takes the run over.
    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
    other = RunLease(run_id=run.pk, owner="other-host:4242:feedbeef", seconds=600)
    assert other.take_over() is True
    resume.set()
    first.join(DEADLINE_S)

    run.refresh_from_db()
    assert not first.is_alive()
    assert outcome and outcome[0].status == PipelineRun.Status.RUNNING  # it stopped quietly, no failure written
    assert run.status == PipelineRun.Status.RUNNING and run.lease_owner == "other-host:4242:feedbeef"
    assert not StageRun.objects.filter(run=run, stage="debate", status="done").exists()
    assert not StageRun.objects.filter(run=run, stage__in=["trader", "risk"]).exists()
    assert not Thesis.objects.filter(run=run).exists()
    assert run.failure_reason == ""
    assert AuditEvent.objects.filter(action="run_lease_lost", target=f"run {run.pk}", details__owner=original).exists()


def test_a_running_run_keeps_its_lease_fresh_while_a_stage_is_slow(
    instrument_with_bars, roomy_account, settings, monkeypatch, sent
):
    settings.RUN_LEASE_SECONDS = 5  # renewed every 5/3 seconds
    run = _run(instrument_with_bars)
    in_debate, resume = threading.Event(), threading.Event()
    real_debate = orchestrator.STAGE_FUNCTIONS["debate"]

    def slow_debate(ctx):
        in_debate.set()
        resume.wait(DEADLINE_S)
        return real_debate(ctx)

    monkeypatch.setitem(orchestrator.STAGE_FUNCTIONS, "debate", slow_debate)
    worker = _in_thread(pipeline_run_execute, run.pk)
    _wait_for(in_debate.is_set, what="the debate")
    first_expiry = PipelineRun.objects.get(pk=run.pk).lease_expires_at

    # Longer than the lease itself, with the stage still working: the heartbeat renews it.
    _wait_for(
        lambda: PipelineRun.objects.get(pk=run.pk).lease_expires_at > first_expiry + dt.timedelta(seconds=5),
        what="the lease to be renewed past its first expiry",
    )
    requeued = stale_runs_requeue(older_than=dt.timedelta(0))
    resume.set()
    worker.join(DEADLINE_S)

    assert requeued == [] and sent == []
    assert PipelineRun.objects.get(pk=run.pk).status == PipelineRun.Status.COMPLETED


def test_the_stale_sweep_requeues_a_run_only_once_its_lease_has_expired(instrument_with_bars, sent):
    run = _run(instrument_with_bars)
    now = timezone.now()
    PipelineRun.objects.filter(pk=run.pk).update(
        status="running",
        attempts=1,
        lease_owner="far-host:7:abc",
        lease_expires_at=now + dt.timedelta(minutes=1),
        enqueued_at=now - dt.timedelta(hours=1),
    )
    assert stale_runs_requeue(older_than=dt.timedelta(0)) == []

    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=now - dt.timedelta(seconds=1))
    assert stale_runs_requeue(older_than=dt.timedelta(minutes=15)) == [run.pk]
    assert stale_runs_requeue(older_than=dt.timedelta(minutes=15)) == []  # sent once, not every sweep

    run.refresh_from_db()
    assert sent == [run.pk]
    assert run.failure_reason.startswith("attempt 1 stopped without finishing")
    assert AuditEvent.objects.filter(action="run_requeued", target=f"run {run.pk}").count() == 1
