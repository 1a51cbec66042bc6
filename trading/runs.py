"""Starting runs from pages, the API and commands: create, commit, then queue."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.db import transaction

from trading.models import Instrument, PipelineRun
from trading.pipeline import pipeline_run_create


class RunRequestInvalid(ValueError):
    pass


def pipeline_runs_start(
    *, instruments: Sequence[Instrument], as_of: dt.date, provider: str, user=None
) -> list[PipelineRun]:
    """Queue one run per instrument. The task is sent only after the rows are committed, so a
    worker can never look for a run that does not exist yet."""
    from trading.tasks import run_pipeline

    if not instruments:
        raise RunRequestInvalid("choose at least one instrument")
    with transaction.atomic():
        runs = [
            pipeline_run_create(instrument=instrument, as_of=as_of, provider=provider, user=user)
            for instrument in instruments
        ]
        for run in runs:
            transaction.on_commit(lambda run_id=run.pk: run_pipeline.delay(run_id))
    return runs
