"""A database that drops out mid-run: the task's retry resumes the run where it stopped, with no
second note, debate or thesis, and the web answers 503 on the health probe meanwhile."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from agents.models import ModelCall
from trading.models import PipelineRun, Thesis
from trading.pipeline import orchestrator
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute


@pytest.mark.django_db(transaction=True)
def test_a_run_cut_off_by_a_database_outage_resumes_without_duplicates(
    instrument_with_bars, roomy_account, monkeypatch
):
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    real = orchestrator._complete_stage
    outage = {"left": 1}

    def drops_out(ctx, record, output):
        if record.stage == "debate" and outage["left"]:
            outage["left"] -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return real(ctx, record, output)

    monkeypatch.setattr(orchestrator, "_complete_stage", drops_out)

    with pytest.raises(OperationalError):  # the Celery task retries on exactly this error
        pipeline_run_execute(run.pk)
    analyst_calls = ModelCall.objects.filter(run=run, role__in=["news", "technical"]).count()
    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=None)  # the retry comes after the lease lapsed

    finished = pipeline_run_execute(run.pk)

    assert finished.status == PipelineRun.Status.COMPLETED, finished.failure_reason
    assert ModelCall.objects.filter(run=run, role__in=["news", "technical"]).count() == analyst_calls
    assert Thesis.objects.filter(run=run).count() == 1
