"""The hindsight rule on a memory record's tags: figures added, valence reversed only when hindsight
contradicts the review's sign, idempotent. Pure: no database."""

from __future__ import annotations

from decimal import Decimal

import pytest

from reviews.domain.hindsight import (
    REVERSAL_TAG,
    VALENCE_TAG,
    Hindsight,
    hindsight_tags,
    hindsight_valence,
    stated_valence,
)

REVIEW_TAGS = {"direction": "LONG", "symbol": "TCS", "outcome": "win", "signal": "realized", "exit": "target"}


def figures(final: str, regret: str, vs_inaction: str | None = None) -> Hindsight:
    return Hindsight.from_figures({"final_pnl": final, "vs_inaction": vs_inaction or final, "regret": regret})


def test_it_adds_the_hindsight_figures_as_two_decimal_tags_and_keeps_the_review_tags() -> None:
    result = hindsight_tags(REVIEW_TAGS, figures("1200", "300.5"))

    assert result.tags == {**REVIEW_TAGS, "final_pnl": "1200.00", "vs_inaction": "1200.00", "regret": "300.50"}
    assert not result.reversed


def test_a_win_that_kept_exactly_half_its_peak_is_not_reversed() -> None:
    # peak 2000, final 1000: regret 1000 == final, the edge of "gave back more than it kept"
    result = hindsight_tags(REVIEW_TAGS, figures("1000", "1000"))

    assert not result.reversed
    assert REVERSAL_TAG not in result.tags
    assert result.valence == 1


def test_a_win_that_gave_back_more_than_it_kept_is_reversed() -> None:
    # peak 2000.02, final 1000: one paisa past the edge
    result = hindsight_tags(REVIEW_TAGS, figures("1000", "1000.02"))

    assert result.reversed
    assert result.tags[REVERSAL_TAG] == "win to negative: exit gave back the peak"
    assert result.tags[VALENCE_TAG] == "negative"
    assert result.tags["outcome"] == "win"  # the fact stays the fact


def test_a_win_that_inaction_beat_is_reversed() -> None:
    result = hindsight_tags(REVIEW_TAGS, figures("-0.01", "50"))

    assert result.reversed
    assert result.tags[REVERSAL_TAG] == "win to negative: inaction was better"


def test_a_loss_stays_a_loss_and_a_loss_that_hindsight_sees_as_positive_is_reversed() -> None:
    loss = {**REVIEW_TAGS, "outcome": "loss"}

    assert not hindsight_tags(loss, figures("-500", "700")).reversed
    reversed_loss = hindsight_tags(loss, figures("500", "0"))
    assert reversed_loss.reversed and reversed_loss.tags[VALENCE_TAG] == "positive"


@pytest.mark.parametrize(("final", "regret"), [("-800", "900"), ("0", "300"), ("650", "0")])
def test_a_scratch_has_no_sign_to_reverse(final: str, regret: str) -> None:
    result = hindsight_tags({**REVIEW_TAGS, "outcome": "scratch"}, figures(final, regret))

    assert not result.reversed
    assert REVERSAL_TAG not in result.tags


def test_a_trade_that_ended_exactly_flat_has_neutral_hindsight() -> None:
    assert hindsight_valence(figures("0", "250"))[0] == 0
    assert not hindsight_tags(REVIEW_TAGS, figures("0", "250")).reversed


def test_applying_the_rule_twice_gives_the_same_tags() -> None:
    once = hindsight_tags(REVIEW_TAGS, figures("100", "900"))
    twice = hindsight_tags(once.tags, figures("100", "900"))

    assert twice.tags == once.tags
    assert twice.reversed == once.reversed


def test_the_stated_valence_reads_the_outcome_tag_only() -> None:
    assert stated_valence({"outcome": "win"}) == 1
    assert stated_valence({"outcome": "LOSS"}) == -1
    assert stated_valence({"outcome": "scratch"}) == 0
    assert stated_valence({"valence": "negative"}) == 0  # a record without an outcome has no sign


def test_figures_come_from_a_lifecycle_block_or_a_position_row() -> None:
    lifecycle = Hindsight.from_figures({"final_pnl": "-12.345", "vs_inaction": "-12.345", "regret": "40"})
    row = Hindsight.from_figures({"realised_pnl": "10.00", "vs_inaction": "10.00", "regret": "0.00"})

    assert lifecycle == Hindsight(Decimal("-12.35"), Decimal("-12.35"), Decimal("40.00"))
    assert row.final_pnl == Decimal("10.00")


@pytest.mark.parametrize(
    "bad",
    [
        {"vs_inaction": "1", "regret": "0"},
        {"final_pnl": "one", "vs_inaction": "1", "regret": "0"},
        {"final_pnl": "NaN", "vs_inaction": "1", "regret": "0"},
        {"final_pnl": "1", "vs_inaction": "1", "regret": "-5"},
        {"final_pnl": True, "vs_inaction": "1", "regret": "0"},
    ],
)
def test_it_refuses_missing_or_impossible_figures(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Hindsight.from_figures(bad)
