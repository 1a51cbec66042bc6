"""Reads for the runs pages: a fixed number of queries per page."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import F, Sum

from agents.models import ModelCall
from trading.models import PipelineRun


def run_rows(*, with_replays: bool, limit: int = 100) -> list[PipelineRun]:
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
    for run in page:
        row = totals.get(run.pk, {})
        run.tokens = row.get("tokens") or 0
        run.cost = row.get("cost") or Decimal(0)
    return page
