"""Reads for the runs pages: a fixed number of queries per page."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import F, Sum

from agents.models import ModelCall
from trading.models import PipelineRun


@dataclass(frozen=True)
class RunRow:
    """One line of the runs page: the run, and what its model calls came to (zero for none)."""

    run: PipelineRun
    tokens: int
    cost: Decimal


def run_rows(*, with_replays: bool, limit: int = 100) -> list[RunRow]:
    """The runs page: the latest ``limit`` runs, each with ``tokens`` and ``cost`` summed over its
    model calls. Two queries whatever the history: the page's runs first, then the sums for those
    runs only (summing before the limit made the page scan every model call ever recorded)."""
    runs = PipelineRun.objects.select_related("instrument", "thesis").order_by("-created_at", "-id")
    if not with_replays:
        runs = runs.filter(is_replay=False)
    page = list(runs[:limit])
    totals = {
        row["run_id"]: row
        for row in ModelCall.objects.filter(run_id__in=[run.pk for run in page])
        .values("run_id")
        .annotate(tokens=Sum(F("input_tokens") + F("output_tokens")), cost=Sum("cost"))
        .order_by()
    }
    rows = []
    for run in page:
        summed = totals.get(run.pk, {})
        rows.append(RunRow(run=run, tokens=summed.get("tokens") or 0, cost=summed.get("cost") or Decimal(0)))
    return rows
