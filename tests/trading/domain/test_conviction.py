from __future__ import annotations

import pytest

from agents.roles import AnalystNote, AnalystRole
from trading.pipeline.domain.conviction import ConvictionHaircut, haircut_conviction


def note(stance: float, *, role: AnalystRole = "technical", abstained: bool = False) -> AnalystNote:
    return AnalystNote(role=role, symbol="INFY", stance=stance, confidence=0.7, summary="a view", abstained=abstained)


def abstaining(role: AnalystRole) -> AnalystNote:
    return note(0.0, role=role, abstained=True)


def test_conviction_is_unchanged_when_no_analyst_opposes_the_winner() -> None:
    result = haircut_conviction(0.8, "LONG", [note(0.6), note(0.3, role="news")])
    assert result == ConvictionHaircut(conviction=0.8, proposed=0.8, opposing=0, side_taking=2, haircut=0.0)


def test_one_dissenter_among_abstainers_is_full_opposition_and_takes_the_whole_haircut() -> None:
    notes = [note(-0.5), abstaining("news"), abstaining("sentiment"), abstaining("fundamental")]
    result = haircut_conviction(0.8, "LONG", notes)
    assert (result.opposing, result.side_taking, result.haircut) == (1, 1, 0.6)
    assert result.conviction == 0.32


def test_one_dissenter_of_three_side_takers_takes_a_fifth_off() -> None:
    notes = [note(0.6), note(0.4, role="news"), note(-0.3, role="sentiment")]
    result = haircut_conviction(0.8, "LONG", notes)
    assert (result.opposing, result.side_taking, result.haircut) == (1, 3, 0.2)
    assert result.conviction == 0.64


def test_bullish_analysts_oppose_a_short_winner() -> None:
    notes = [note(-0.6), note(0.4, role="news")]
    result = haircut_conviction(0.5, "SHORT", notes)
    assert (result.opposing, result.side_taking, result.haircut) == (1, 2, 0.3)
    assert result.conviction == 0.35


def test_neutral_notes_inside_the_band_do_not_count_as_taking_a_side() -> None:
    # 0.05 sits on the band's edge: only a stance strictly beyond it takes a side.
    notes = [note(0.6), note(-0.4, role="news"), note(0.04, role="sentiment"), note(-0.05, role="fundamental")]
    result = haircut_conviction(0.8, "LONG", notes)
    assert (result.opposing, result.side_taking) == (1, 2)
    assert result.conviction == 0.56


def test_an_abstaining_note_is_ignored_even_with_a_strong_stance() -> None:
    result = haircut_conviction(0.8, "LONG", [note(0.6), note(-0.9, role="news", abstained=True)])
    assert (result.opposing, result.side_taking, result.conviction) == (0, 1, 0.8)


def test_the_calibrated_conviction_is_rounded_to_four_decimals() -> None:
    notes = [note(0.6), note(0.4, role="news"), note(-0.3, role="sentiment")]
    assert haircut_conviction(0.77777, "LONG", notes).conviction == 0.6222


@pytest.mark.parametrize(("proposed", "expected"), [(1.3, 1.0), (-0.2, 0.0)])
def test_the_calibrated_conviction_is_clamped_to_the_unit_interval(proposed: float, expected: float) -> None:
    notes = [note(0.6), note(0.4, role="news"), note(-0.3, role="sentiment")]
    result = haircut_conviction(proposed, "LONG", notes)
    assert result.conviction == expected
    assert result.proposed == proposed


def test_an_out_of_range_haircut_is_refused() -> None:
    with pytest.raises(ValueError, match="max_haircut"):
        haircut_conviction(0.8, "LONG", [note(-0.5)], max_haircut=1.5)
