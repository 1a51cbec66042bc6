"""A replay run made and executed in one transaction (``ReplayRuns(exclusive=True)``) keeps its
stage rows and model calls in memory and writes them when it ends, and stores its citations
without looking for earlier ones: the rows it leaves are the rows a live run leaves."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.models import ModelCall
from trading.models import HeuristicCitation, PipelineRun, StageRun, Thesis
from trading.models.pipeline import STAGES
from trading.pipeline.orchestrator import ReplayRuns, pipeline_run_create, pipeline_run_execute, replay_runs


@pytest.fixture
def offline_now(settings):
    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": 0.0}


def _executed(instrument, *, exclusive: bool) -> tuple[PipelineRun, int]:
    """One run of ``instrument`` on its last bar, and the queries its execution took. Any thesis
    an earlier run left is expired first, so neither run is held by the other's idea."""
    Thesis.objects.update(status=Thesis.Status.EXPIRED)
    as_of = instrument.bars.latest("date").date
    with transaction.atomic():  # a replay day's transaction
        run = pipeline_run_create(instrument=instrument, as_of=as_of, provider="offline", is_replay=True)
        with CaptureQueriesContext(connection) as queries:
            if exclusive:
                with replay_runs(ReplayRuns(quiet=True, exclusive=True)):
                    pipeline_run_execute(run.pk)
            else:
                pipeline_run_execute(run.pk)
    run.refresh_from_db()
    return run, len(queries.captured_queries)


def _rows(run: PipelineRun) -> dict[str, Any]:
    stages = StageRun.objects.filter(run=run).order_by("position")
    return {
        "run": (run.status, run.failure_reason, run.attempts, run.lease_owner),
        "stages": list(stages.values_list("stage", "position", "status", "output", "error")),
        # Bull and bear are called at once, and each call is recorded as it finishes: which of
        # the two gets the lower id is the machine's timing, not the run's content.
        "calls": sorted(
            ModelCall.objects.filter(run=run).values_list(
                "role", "tier", "model", "prompt_key", "prompt", "reply", "input_tokens", "ok", "error"
            ),
            key=repr,
        ),
        "citations": sorted(
            HeuristicCitation.objects.filter(run=run).values_list(
                "role", "code", "accepted", "note__role", "thesis__direction", "heuristic__code"
            ),
            key=repr,
        ),
        "thesis": list(
            Thesis.objects.filter(run=run).values_list("direction", "conviction", "entry", "stop", "target", "quantity")
        ),
    }


def test_an_exclusive_run_leaves_the_rows_of_a_live_run_in_fewer_queries(instrument_with_bars, offline_now):
    live, live_queries = _executed(instrument_with_bars, exclusive=False)
    fast, fast_queries = _executed(instrument_with_bars, exclusive=True)

    assert live.status == PipelineRun.Status.COMPLETED
    assert _rows(fast) == _rows(live)
    assert _rows(live)["calls"] and _rows(live)["thesis"], "a run that calls models and makes a thesis"
    # Each stage keeps its own times: started before it finished, in the stages' order.
    times = list(StageRun.objects.filter(run=fast).order_by("position").values_list("started_at", "finished_at"))
    assert len(times) == len(STAGES)
    assert all(started <= finished for started, finished in times)
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(times))
    assert fast_queries < live_queries - 2 * len(STAGES)


def test_an_exclusive_run_that_dies_keeps_the_stages_it_started(instrument_with_bars, offline_now, monkeypatch):
    from trading.pipeline import orchestrator

    def broken(ctx):
        raise KeyboardInterrupt("the process is stopping")

    monkeypatch.setitem(orchestrator.STAGE_FUNCTIONS, "debate", broken)
    as_of = instrument_with_bars.bars.latest("date").date
    run = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline", is_replay=True)
    with replay_runs(ReplayRuns(quiet=True, exclusive=True)), pytest.raises(KeyboardInterrupt):
        pipeline_run_execute(run.pk)

    stages = list(StageRun.objects.filter(run=run).order_by("position").values_list("stage", "status"))
    assert stages == [("features", "done"), ("context", "done"), ("analysts", "done"), ("debate", "running")]
    assert ModelCall.objects.filter(run=run, role__in=["news", "sentiment", "technical", "fundamental"]).exists()
    run.refresh_from_db()
    assert "attempt 1 died in debate: KeyboardInterrupt" in run.failure_reason
