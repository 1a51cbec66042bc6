"""Starting runs from pages, the API and commands: create, commit, then queue."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from trading.models import DailyBar, Instrument, PipelineRun
from trading.pipeline import pipeline_run_create


class RunRequestInvalid(ValueError):
    pass


def pipeline_runs_start(
    *, instruments: Sequence[Instrument], as_of: dt.date | None, provider: str, user=None
) -> list[PipelineRun]:
    """Queue one run per instrument, as of ``as_of`` or the latest bar of those instruments. The
    task is sent only after the rows are committed, so a worker never looks for a missing run."""
    from trading.tasks import run_pipeline

    if not instruments:
        raise RunRequestInvalid("choose at least one instrument")
    as_of = as_of or DailyBar.objects.filter(instrument__in=instruments).aggregate(last=Max("date"))["last"]
    if as_of is None:
        raise RunRequestInvalid("these instruments have no bars yet")
    with transaction.atomic():
        runs = [
            pipeline_run_create(instrument=instrument, as_of=as_of, provider=provider, user=user)
            for instrument in instruments
        ]
        for run in runs:
            transaction.on_commit(lambda run_id=run.pk: run_pipeline.delay(run_id))
    return runs
