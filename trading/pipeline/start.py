"""Starting runs from pages, the API and commands: create, commit, then queue."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from trading.models import DailyBar, Instrument, PipelineRun
from trading.pipeline.dispatch import QueueUnavailable, run_send
from trading.pipeline.orchestrator import pipeline_run_create


class RunRequestInvalid(ValueError):
    pass


class RunsNotQueued(Exception):
    """The runs were created but the broker refused (some of) their messages: those are kept,
    unsent, and the outbox sweep sends them when it is back. Starting them again would duplicate them."""

    def __init__(self, runs: list[PipelineRun], reason: str, unsent: list[int]) -> None:
        super().__init__(reason)
        self.runs = runs
        self.reason = reason
        self.unsent = unsent


@dataclass
class _Sends:
    refused: str = ""
    unsent: list[int] = field(default_factory=list)


def pipeline_runs_start(
    *, instruments: Sequence[Instrument], as_of: dt.date | None, provider: str, user=None
) -> list[PipelineRun]:
    """Queue one run per instrument, as of ``as_of`` or the latest bar of those instruments. The
    task is sent only after the rows are committed, so a worker never looks for a missing run.
    Raises ``RunsNotQueued`` (after commit: the rows stay) when the broker refused."""
    if not instruments:
        raise RunRequestInvalid("choose at least one instrument")
    # The latest session up to today: one bad future bar must not set the date of a whole batch.
    latest = DailyBar.objects.filter(instrument__in=instruments, date__lte=timezone.localdate())
    as_of = as_of or latest.aggregate(last=Max("date"))["last"]
    if as_of is None:
        raise RunRequestInvalid("these instruments have no bars yet")
    with transaction.atomic():
        runs = [
            pipeline_run_create(instrument=instrument, as_of=as_of, provider=provider, user=user)
            for instrument in instruments
        ]
        sends = _Sends()
        for run in runs:
            transaction.on_commit(lambda run_id=run.pk: _send_after_commit(run_id, sends))
    if sends.unsent:
        raise RunsNotQueued(runs, sends.refused, sends.unsent)
    return runs


def _send_after_commit(run_id: int, sends: _Sends) -> None:
    if sends.refused:
        # The broker just refused this request: the rest wait for the outbox, not for a timeout each.
        sends.unsent.append(run_id)
        return
    try:
        run_send(run_id, fail_fast=True)
    except QueueUnavailable as refused:
        sends.refused = str(refused)
        sends.unsent.append(run_id)
