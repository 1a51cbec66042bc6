from __future__ import annotations

from decimal import Decimal

import pytest

from agents.roles import TradeThesis
from trading.pipeline.domain.levels import ThesisInvalid, anchor_levels, validate_thesis
from vocabulary.ticks import RoundingMode, round_to_tick
from vocabulary.trade import Direction

TICK = Decimal("0.05")


def thesis(direction: Direction = "LONG", *, entry: float, stop: float, target: float) -> TradeThesis:
    return TradeThesis(
        symbol="INFY",
        direction=direction,
        conviction=0.6,
        entry=entry,
        stop=stop,
        target=target,
        horizon_sessions=10,
        rationale="momentum with earnings support",
    )


MODEL_LONG = thesis("LONG", entry=1230.0, stop=1200.0, target=1290.0)
MODEL_SHORT = thesis("SHORT", entry=1230.0, stop=1260.0, target=1170.0)


@pytest.mark.parametrize(
    ("price", "mode", "expected"),
    [
        ("1234.56", "nearest", "1234.55"),
        ("1234.58", "nearest", "1234.60"),
        ("1234.575", "nearest", "1234.60"),  # a half tick rounds up
        ("1234.59", "down", "1234.55"),
        ("1234.51", "up", "1234.55"),
        ("1234.55", "down", "1234.55"),
        ("1234.55", "up", "1234.55"),
    ],
)
def test_a_price_is_rounded_onto_the_tick_grid(price: str, mode: RoundingMode, expected: str) -> None:
    assert round_to_tick(Decimal(price), TICK, mode=mode) == Decimal(expected)


def test_a_tick_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="tick"):
        round_to_tick(Decimal("100"), Decimal("0"))


def test_a_long_is_anchored_at_two_atr_below_entry_with_a_two_r_target() -> None:
    anchored = anchor_levels(MODEL_LONG, last_price=Decimal("1234.56"), atr=Decimal("12.34"), tick=TICK)
    # entry 1234.56 -> 1234.55; stop 1234.55 - 24.68 = 1209.87, rounded down (away) -> 1209.85;
    # risk 24.70 per share, so the 2R target is 1234.55 + 49.40 = 1283.95.
    assert (anchored.entry, anchored.stop, anchored.target) == (1234.55, 1209.85, 1283.95)
    assert anchored.levels_source == "atr-anchor"
    assert (anchored.rationale, anchored.direction) == (MODEL_LONG.rationale, "LONG")


def test_a_short_is_anchored_at_two_atr_above_entry_with_a_two_r_target() -> None:
    anchored = anchor_levels(MODEL_SHORT, last_price=Decimal("1234.56"), atr=Decimal("12.34"), tick=TICK)
    # stop 1234.55 + 24.68 = 1259.23, rounded up (away) -> 1259.25; target 1234.55 - 49.40.
    assert (anchored.entry, anchored.stop, anchored.target) == (1234.55, 1259.25, 1185.15)
    assert anchored.levels_source == "atr-anchor"


def test_anchoring_leaves_the_original_thesis_untouched() -> None:
    anchor_levels(MODEL_LONG, last_price=Decimal("1234.56"), atr=Decimal("12.34"), tick=TICK)
    assert (MODEL_LONG.entry, MODEL_LONG.levels_source) == (1230.0, "model")


def test_a_sub_tick_atr_fails_closed_instead_of_keeping_the_models_levels() -> None:
    # 2 x 0.01 = 0.02 is under half a tick: the stop would round back onto entry.
    with pytest.raises(ThesisInvalid, match="under half a tick"):
        anchor_levels(MODEL_LONG, last_price=Decimal("1234.56"), atr=Decimal("0.01"), tick=TICK)


def test_an_atr_worth_half_a_tick_still_anchors_one_tick_away() -> None:
    anchored = anchor_levels(MODEL_LONG, last_price=Decimal("100"), atr=Decimal("0.0125"), tick=TICK)
    assert (anchored.entry, anchored.stop, anchored.target) == (100.0, 99.95, 100.1)


def test_an_unknown_atr_fails_closed_instead_of_keeping_the_models_levels() -> None:
    with pytest.raises(ThesisInvalid, match="ATR is unknown"):
        anchor_levels(MODEL_SHORT, last_price=Decimal("1234.56"), atr=None, tick=TICK)


def test_a_long_stop_that_would_fall_below_zero_fails_closed() -> None:
    penny = thesis("LONG", entry=10.0, stop=8.0, target=14.0)
    with pytest.raises(ThesisInvalid, match="at or below zero"):
        anchor_levels(penny, last_price=Decimal("10"), atr=Decimal("6"), tick=TICK)


def test_a_short_target_that_would_fall_below_zero_fails_closed() -> None:
    penny = thesis("SHORT", entry=10.0, stop=12.0, target=6.0)
    # stop 10 + 6 = 16, so a 2R target would be 10 - 12 = -2.
    with pytest.raises(ThesisInvalid, match="at or below zero"):
        anchor_levels(penny, last_price=Decimal("10"), atr=Decimal("3"), tick=TICK)


def test_anchored_levels_pass_the_validator() -> None:
    atr = Decimal("12.34")
    for model in (MODEL_LONG, MODEL_SHORT):
        validate_thesis(anchor_levels(model, last_price=Decimal("1234.56"), atr=atr, tick=TICK), atr=atr)


def test_a_stop_equal_to_entry_is_invalid() -> None:
    with pytest.raises(ThesisInvalid, match="stop equals entry"):
        validate_thesis(thesis("LONG", entry=100.0, stop=100.0, target=110.0), atr=Decimal("1"))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (thesis("LONG", entry=100.0, stop=95.0, target=98.0), "LONG target ₹98.0 must be above entry"),
        (thesis("LONG", entry=100.0, stop=95.0, target=100.0), "LONG target ₹100.0 must be above entry"),
        (thesis("SHORT", entry=100.0, stop=105.0, target=103.0), "SHORT target ₹103.0 must be below entry"),
        (thesis("LONG", entry=100.0, stop=102.0, target=110.0), "LONG stop ₹102.0 must be below entry"),
        (thesis("SHORT", entry=100.0, stop=97.0, target=90.0), "SHORT stop ₹97.0 must be above entry"),
    ],
)
def test_a_level_on_the_wrong_side_of_entry_is_invalid(bad: TradeThesis, message: str) -> None:
    with pytest.raises(ThesisInvalid, match=message) as caught:
        validate_thesis(bad, atr=None)
    assert isinstance(caught.value, ValueError)
    assert caught.value.reason == str(caught.value)


def test_a_stop_further_than_four_atr_from_entry_is_invalid() -> None:
    with pytest.raises(ThesisInvalid, match=r"further than 4 x ATR ₹2 = ₹8"):
        validate_thesis(thesis("LONG", entry=100.0, stop=90.0, target=120.0), atr=Decimal("2"))


def test_a_stop_exactly_four_atr_from_entry_is_valid() -> None:
    validate_thesis(thesis("SHORT", entry=100.0, stop=108.0, target=84.0), atr=Decimal("2"))


def test_a_well_formed_short_is_valid() -> None:
    validate_thesis(thesis("SHORT", entry=1234.55, stop=1259.25, target=1185.15), atr=Decimal("12.34"))


def test_without_an_atr_the_thesis_is_invalid_because_the_bound_cannot_be_checked() -> None:
    with pytest.raises(ThesisInvalid, match="ATR is unknown"):
        validate_thesis(thesis("LONG", entry=100.0, stop=50.0, target=200.0), atr=None)


def test_a_price_off_the_tick_grid_is_invalid() -> None:
    with pytest.raises(ThesisInvalid, match="off the tick grid"):
        validate_thesis(thesis("LONG", entry=100.02, stop=99.0, target=102.0), atr=Decimal("1"), tick=TICK)


def test_the_atr_bound_is_never_skipped_even_when_narrower_than_a_tick() -> None:
    with pytest.raises(ThesisInvalid, match="further than"):
        validate_thesis(MODEL_LONG, atr=Decimal("0.01"), tick=TICK)
