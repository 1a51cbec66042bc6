"""A position retrospective's hindsight, written into the memory record of the trade's review.

``apply_hindsight`` runs at the end of every READY position retrospective (``reviews.triggers``).
It finds the memory record the stage-12 review wrote for the position (none for a manual exit or a
position never reviewed: then there is nothing to update), adds the hindsight figures from the
retrospective's hard part, reverses the record's valence when hindsight contradicts it (the rule is
``reviews.domain.hindsight``'s), and raises its retrieval weight to
``RETROSPECTIVE["HINDSIGHT_MEMORY_WEIGHT"]``. Running it again changes nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import transaction

from agents.models import MemoryEntry
from reviews.domain.hindsight import Hindsight, hindsight_tags
from reviews.models import RetrospectiveReport, TradeReview
from trading.audit import audit_record

__all__ = ["apply_hindsight", "hindsight_figures", "hindsight_weight"]

logger = logging.getLogger(__name__)


def hindsight_weight() -> float:
    """The retrieval weight of a record that carries hindsight (1.5 by default)."""
    weight = float(str(settings.RETROSPECTIVE["HINDSIGHT_MEMORY_WEIGHT"]))
    if not weight > 0:
        raise ValueError(f'RETROSPECTIVE["HINDSIGHT_MEMORY_WEIGHT"] must be positive, got {weight}')
    return weight


def hindsight_figures(report: RetrospectiveReport) -> Hindsight | None:
    """The position's final PnL, vs-inaction and regret from the report's hard part: its
    ``lifecycle`` block, or else the position's row in ``positions``. None when neither holds them."""
    hard: Mapping[str, Any] = report.hard or {}
    lifecycle = hard.get("lifecycle")
    if isinstance(lifecycle, Mapping):
        try:
            return Hindsight.from_figures(lifecycle)
        except ValueError:
            logger.warning("report %s: its lifecycle block lacks a hindsight figure", report.pk)
    for row in hard.get("positions") or []:
        if isinstance(row, Mapping) and row.get("id") == report.position_id:
            try:
                return Hindsight.from_figures(row)
            except ValueError:
                return None
    return None


def apply_hindsight(report: RetrospectiveReport) -> None:
    """Write the retrospective's hindsight into the reviewed trade's memory record (see the module)."""
    if report.horizon != RetrospectiveReport.Horizon.POSITION or report.status != RetrospectiveReport.Status.READY:
        return
    if report.position_id is None:
        return
    memory_id = (
        TradeReview.objects.filter(position_id=report.position_id).values_list("memory_entry_id", flat=True).first()
    )
    if memory_id is None:
        return  # no review yet, or a manual exit that wrote no lesson
    figures = hindsight_figures(report)
    if figures is None:
        logger.warning("report %s holds no hindsight figures for position %s", report.pk, report.position_id)
        return
    weight = hindsight_weight()
    with transaction.atomic():
        entry = MemoryEntry.objects.select_for_update().filter(pk=memory_id).first()
        if entry is None:
            return
        result = hindsight_tags({str(k): str(v) for k, v in (entry.tags or {}).items()}, figures)
        if result.tags == entry.tags and entry.weight == weight:
            return  # already applied: nothing more to change
        entry.tags = result.tags
        entry.weight = weight
        entry.save(update_fields=["tags", "weight"])
        audit_record(
            action="memory_hindsight",
            target=f"memory {entry.pk}",
            reason=f"position retrospective {report.pk} of position {report.position_id}",
            details={
                "report": report.pk,
                "position": report.position_id,
                "final_pnl": result.tags["final_pnl"],
                "vs_inaction": result.tags["vs_inaction"],
                "regret": result.tags["regret"],
                "reversed": result.reversed,
                "weight": weight,
            },
        )
