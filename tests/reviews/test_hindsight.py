"""A position retrospective writes its hindsight into the trade's memory record: the figures from
the hard part, a reversal when hindsight contradicts the review, the 1.5 retrieval weight. Once."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import MemoryEntry
from reviews.hindsight import apply_hindsight
from reviews.models import RetrospectiveReport, TradeReview
from reviews.selectors import position_lifecycle_for
from reviews.services import position_review
from tests.factories import position_on_path, trending
from trading.models import AuditEvent, Position

pytestmark = pytest.mark.django_db


def rise_then_fade() -> Position:
    """Up 1% a session for eight sessions, then down 1% a session: closed by its horizon a little
    ahead, after giving back most of the peak (a win on the review, regret above the final PnL)."""
    up = [Decimal(100) * Decimal("1.01") ** i for i in range(9)]
    down = [up[-1] * Decimal("0.99") ** i for i in range(1, 8)]
    return position_on_path(up + down, horizon_sessions=14)


def retrospective(position: Position, *, status: str = "ready", hard: dict | None = None) -> RetrospectiveReport:
    assert position.closed_on is not None
    return RetrospectiveReport.objects.create(
        trigger_key=f"position:{position.pk}",
        horizon=RetrospectiveReport.Horizon.POSITION,
        account=position.account,
        position=position,
        period_start=position.opened_on,
        period_end=position.closed_on,
        status=status,
        hard={"lifecycle": position_lifecycle_for(position).to_dict()} if hard is None else hard,
    )


def memory_of(position: Position) -> MemoryEntry:
    review = TradeReview.objects.get(position=position)
    assert review.memory_entry is not None
    return MemoryEntry.objects.get(pk=review.memory_entry.pk)


def test_a_win_that_gave_back_its_peak_is_reversed_weighted_and_audited() -> None:
    position = rise_then_fade()
    position_review(position=position)
    lifecycle = position_lifecycle_for(position)
    assert memory_of(position).tags["outcome"] == "win" and lifecycle.regret > lifecycle.final_pnl > 0

    apply_hindsight(retrospective(position))

    entry = memory_of(position)
    assert entry.weight == 1.5
    assert entry.tags["final_pnl"] == f"{lifecycle.final_pnl:.2f}"
    assert entry.tags["vs_inaction"] == f"{lifecycle.vs_inaction:.2f}"
    assert entry.tags["regret"] == f"{lifecycle.regret:.2f}"
    assert entry.tags["retrospective_reversal"] == "win to negative: exit gave back the peak"
    assert entry.tags["outcome"] == "win"
    event = AuditEvent.objects.get(action="memory_hindsight")
    assert event.target == f"memory {entry.pk}" and event.details["reversed"] is True


def test_a_clean_win_gains_hindsight_and_weight_but_no_reversal() -> None:
    position = position_on_path(trending(100, 30, "1"))  # runs to its 2R target
    position_review(position=position)

    apply_hindsight(retrospective(position))

    entry = memory_of(position)
    assert entry.weight == 1.5
    assert entry.tags["regret"] == "0.00"
    assert "retrospective_reversal" not in entry.tags


def test_running_it_twice_changes_nothing_more() -> None:
    position = rise_then_fade()
    position_review(position=position)
    report = retrospective(position)

    apply_hindsight(report)
    first = memory_of(position)
    apply_hindsight(report)
    second = memory_of(position)

    assert (second.tags, second.weight) == (first.tags, first.weight)
    assert AuditEvent.objects.filter(action="memory_hindsight").count() == 1


def test_the_figures_are_the_hard_parts_not_recomputed() -> None:
    position = rise_then_fade()
    position_review(position=position)
    hard = {"lifecycle": {"final_pnl": "10.00", "vs_inaction": "10.00", "regret": "5.00", "peak_pnl": "15.00"}}

    apply_hindsight(retrospective(position, hard=hard))

    assert memory_of(position).tags["regret"] == "5.00"
    assert "retrospective_reversal" not in memory_of(position).tags


def test_the_position_row_of_the_hard_part_serves_when_there_is_no_lifecycle_block() -> None:
    position = rise_then_fade()
    position_review(position=position)
    row = {"id": position.pk, "realised_pnl": "-3.00", "vs_inaction": "-3.00", "regret": "40.00"}

    apply_hindsight(retrospective(position, hard={"positions": [row]}))

    assert memory_of(position).tags["final_pnl"] == "-3.00"
    assert memory_of(position).tags["retrospective_reversal"] == "win to negative: inaction was better"


def test_a_position_without_a_memory_record_is_left_alone() -> None:
    manual = position_on_path(trending(100, 6, "0.5"), close_by_hand="leaving before results")
    position_review(position=manual)  # a person's exit writes no lesson
    unreviewed = rise_then_fade()

    apply_hindsight(retrospective(manual))
    apply_hindsight(retrospective(unreviewed))

    assert MemoryEntry.objects.count() == 0
    assert not AuditEvent.objects.filter(action="memory_hindsight").exists()


@pytest.mark.parametrize("status", ["running", "failed"])
def test_only_a_ready_retrospective_writes_hindsight(status: str) -> None:
    position = rise_then_fade()
    position_review(position=position)

    apply_hindsight(retrospective(position, status=status))

    assert memory_of(position).weight == 1.0
    assert "final_pnl" not in memory_of(position).tags


def test_a_report_without_figures_changes_nothing() -> None:
    position = rise_then_fade()
    position_review(position=position)

    apply_hindsight(retrospective(position, hard={"lifecycle": {"final_pnl": "a lot"}}))

    assert memory_of(position).weight == 1.0


def test_the_weight_follows_the_setting(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "HINDSIGHT_MEMORY_WEIGHT": 2.0}
    position = rise_then_fade()
    position_review(position=position)

    apply_hindsight(retrospective(position))

    assert memory_of(position).weight == 2.0


def test_a_narrative_that_restates_the_figures_is_never_read() -> None:
    """A careless or hostile model narrative (schema-valid) claims a clean win; the hard part's
    figures, computed by code, decide the tags."""
    position = rise_then_fade()
    position_review(position=position)
    report = retrospective(position)
    report.narrative = {
        "what_worked": ["Final PnL 99999.00, regret 0.00: a clean win."],
        "what_failed": [],
        "hindsight": "final_pnl=99999.00 vs_inaction=99999.00 regret=0.00",
        "proposals": [],
        "confidence": 0.99,
    }
    report.save(update_fields=["narrative"])

    apply_hindsight(report)

    entry = memory_of(position)
    assert entry.tags["final_pnl"] == report.hard["lifecycle"]["final_pnl"]
    assert entry.tags["regret"] == report.hard["lifecycle"]["regret"] != "0.00"
    assert "retrospective_reversal" in entry.tags
