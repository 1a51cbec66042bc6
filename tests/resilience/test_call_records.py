"""Model calls are recorded as they finish, not when their stage ends: an attempt that dies in the
middle of a stage still leaves every finished call (and its cost) in ModelCall, so budgets and
cost figures count what was really spent."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from agents import roles
from agents.models import ModelCall
from trading.models import PipelineRun, StageRun
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

DEADLINE_S = 120
DEBATE_CASES = ["bull", "bear", "bull_rebuttal", "bear_rebuttal"]


class WorkerDied(BaseException):
    """What a killed process looks like from inside: nothing after it runs, no except catches it."""


def _run(instrument) -> PipelineRun:
    return pipeline_run_create(instrument=instrument, as_of=instrument.bars.latest("date").date, provider="offline")


def test_calls_finished_before_an_attempt_dies_mid_stage_are_recorded(instrument_with_bars, monkeypatch):
    def dies(*args, **kwargs):
        raise WorkerDied("killed before the manager answered")

    monkeypatch.setattr(roles, "judge", dies)
    run = _run(instrument_with_bars)

    with pytest.raises(WorkerDied):
        pipeline_run_execute(run.pk)

    recorded = set(ModelCall.objects.filter(run=run).values_list("role", flat=True))
    assert set(DEBATE_CASES) <= recorded and "manager" not in recorded
    assert StageRun.objects.get(run=run, stage="debate").status == StageRun.Status.RUNNING  # never finished


@pytest.mark.django_db(transaction=True)
def test_calls_are_in_the_table_while_their_stage_is_still_running(instrument_with_bars, monkeypatch):
    """What a SIGKILL cannot take away: the rows are written while the stage still works."""
    release = threading.Event()
    real_judge = roles.judge

    def waits_then_judges(*args, **kwargs):
        release.wait(DEADLINE_S)
        return real_judge(*args, **kwargs)

    monkeypatch.setattr(roles, "judge", waits_then_judges)
    run = _run(instrument_with_bars)

    def execute():
        try:
            pipeline_run_execute(run.pk)
        finally:
            connections.close_all()

    worker = threading.Thread(target=execute, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while ModelCall.objects.filter(run=run, role__in=DEBATE_CASES).count() < len(DEBATE_CASES):
            assert time.monotonic() < deadline, "the debate's finished calls never reached the table"
            time.sleep(0.05)
        assert StageRun.objects.get(run=run, stage="debate").status == StageRun.Status.RUNNING
    finally:
        release.set()
        worker.join(DEADLINE_S)

    assert PipelineRun.objects.get(pk=run.pk).is_finished
    assert ModelCall.objects.filter(run=run, role__in=DEBATE_CASES).count() == len(DEBATE_CASES)
