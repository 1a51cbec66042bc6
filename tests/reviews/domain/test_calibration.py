"""Calibration arithmetic: ECE and reliability bins, conformal bands, isotonic recalibration, the alarm.

scikit-learn is not installed here, so its binning is checked by hand: its own documented example
(the ``calibration_curve`` docstring) and the edge cases its maintainers wrote down when they chose
``np.searchsorted(bins[1:-1], y_prob)`` (scikit-learn PR #14875 / #22526).
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.calibration import (
    CALIBRATION_MIN_SAMPLES,
    CALIBRATION_REFIT_EVERY,
    CONFORMAL_ALPHA,
    ECE_ALARM,
    RESIDUAL_BUFFER_SIZE,
    RESIDUAL_MIN_SAMPLES,
    IsotonicBlock,
    IsotonicMap,
    ResidualBuffer,
    bin_index,
    conformal_band,
    conformal_quantile,
    conformal_rank,
    ece_alarm,
    expected_calibration_error,
    fit_isotonic,
    reliability_bins,
    should_refit,
)

PROPERTY = settings(max_examples=200, deadline=None, database=None)

# Confidences drawn from anywhere in [0, 1], often from a few round values so ties and bin edges occur.
confidence = st.one_of(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 0.9, 1.0]),
)


@st.composite
def samples(draw: st.DrawFn, max_size: int = 40) -> tuple[list[float], list[int]]:
    size = draw(st.integers(min_value=1, max_value=max_size))
    confidences = draw(st.lists(confidence, min_size=size, max_size=size))
    outcomes = draw(st.lists(st.integers(min_value=0, max_value=1), min_size=size, max_size=size))
    return confidences, outcomes


# ---------------------------------------------------------------------------------------------
# Expected calibration error and the reliability bins
# ---------------------------------------------------------------------------------------------


def test_ece_of_a_small_hand_checked_sample() -> None:
    # Ten bins. 0.05 → bin 0: mean 0.05, hit rate 0/1, gap 0.05, weight 1/4 → 0.0125
    #           0.15, 0.15 → bin 1: mean 0.15, hit rate 1/2, gap 0.35, weight 2/4 → 0.175
    #           0.95 → bin 9: mean 0.95, hit rate 1/1, gap 0.05, weight 1/4 → 0.0125
    # ECE = 0.0125 + 0.175 + 0.0125 = 0.2
    assert expected_calibration_error([0.05, 0.15, 0.15, 0.95], [0, 1, 0, 1]) == pytest.approx(0.2, abs=1e-12)


def test_the_bins_reproduce_scikit_learns_documented_calibration_curve() -> None:
    # sklearn's calibration_curve docstring: these inputs with n_bins=3 give
    # prob_true [0, 0.5, 1] and prob_pred [0.2, 0.525, 0.85].
    # Edges 0, 1/3, 2/3, 1: {0.1, 0.2, 0.3} | {0.4, 0.65} | {0.7, 0.8, 0.9, 1.0}.
    confidences = [0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0]
    outcomes = [0, 0, 0, 0, 1, 1, 1, 1, 1]
    rows = reliability_bins(confidences, outcomes, n_bins=3)
    assert [row.count for row in rows] == [3, 2, 4]
    assert [row.positives for row in rows] == [0, 1, 4]
    assert [row.observed_rate for row in rows] == [0.0, 0.5, 1.0]
    assert [row.mean_confidence for row in rows] == pytest.approx([0.2, 0.525, 0.85], abs=1e-12)
    assert [row.low for row in rows] == pytest.approx([0, 1 / 3, 2 / 3])
    assert [row.high for row in rows] == pytest.approx([1 / 3, 2 / 3, 1])
    # ECE = (3·|0.2 − 0| + 2·|0.525 − 0.5| + 4·|0.85 − 1|) / 9 = (0.6 + 0.05 + 0.6) / 9 = 1.25 / 9 = 5/36
    assert expected_calibration_error(confidences, outcomes, n_bins=3) == pytest.approx(5 / 36, abs=1e-12)


@pytest.mark.parametrize(
    ("value", "n_bins", "expected_bin"),
    [
        (0.0, 10, 0),  # the lower end is in the first bin
        (0.1, 10, 0),  # an interior edge belongs to the bin below it: (0, 0.1] … [0, 0.1]
        (0.1000001, 10, 1),  # just above the edge goes up
        (0.5, 10, 4),
        (1.0, 10, 9),  # the upper end is in the last bin, never an eleventh
        (0.3, 10, 2),  # numpy's edge is 0.30000000000000004; 0.3 sits below it, as in sklearn
        (0.7, 10, 6),
        (0.95, 10, 9),
        (0.5, 2, 0),  # the case written out in scikit-learn PR #14875: [0, 0.5, 1] → bins [0, 0, 1]
        (0.0, 2, 0),
        (1.0, 2, 1),
        (5 / 7, 7, 5),  # numpy's 6th edge is 0.7142857142857142, one step below 5/7: it goes up, as in sklearn
        (0.0, 1, 0),
        (1.0, 1, 0),
    ],
)
def test_a_confidence_on_a_bin_edge_lands_where_calibration_curve_puts_it(
    value: float, n_bins: int, expected_bin: int
) -> None:
    assert bin_index(value, n_bins) == expected_bin
    rows = reliability_bins([value], [1], n_bins=n_bins)
    assert [row.index for row in rows if row.count] == [expected_bin]


def test_perfect_calibration_scores_zero() -> None:
    # 0.25 stated four times, right once (1/4); 0.75 stated four times, right three times (3/4).
    confidences = [0.25] * 4 + [0.75] * 4
    outcomes = [1, 0, 0, 0, 1, 1, 1, 0]
    assert expected_calibration_error(confidences, outcomes) == 0.0


def test_certain_and_always_wrong_scores_one() -> None:
    # Bin 9: mean 1.0, hit rate 0 → gap 1; bin 0: mean 0.0, hit rate 1 → gap 1. ECE = 1/2 + 1/2.
    assert expected_calibration_error([1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1]) == 1.0


def test_one_bin_compares_the_mean_confidence_with_the_hit_rate() -> None:
    # Mean confidence (0.2 + 0.4 + 0.9) / 3 = 0.5; hit rate 2/3; ECE = 1/6.
    assert expected_calibration_error([0.2, 0.4, 0.9], [1, 0, 1], n_bins=1) == pytest.approx(1 / 6, abs=1e-12)


def test_empty_bins_are_rows_without_means_and_do_not_count() -> None:
    rows = reliability_bins([0.55, 0.58], [True, False])
    assert len(rows) == 10
    assert [row.index for row in rows] == list(range(10))
    assert rows[5].count == 2 and rows[5].positives == 1
    assert rows[5].mean_confidence == pytest.approx(0.565)
    assert rows[5].observed_rate == 0.5
    assert rows[5].gap == pytest.approx(0.065)
    empty = [row for row in rows if row.index != 5]
    assert all(row.count == 0 and row.mean_confidence is None and row.observed_rate is None for row in empty)
    assert all(row.gap is None for row in empty)
    # ECE is the one non-empty bin's gap at full weight.
    assert expected_calibration_error([0.55, 0.58], [True, False]) == pytest.approx(0.065, abs=1e-12)


def test_decimal_confidences_and_boolean_outcomes_are_read_as_numbers() -> None:
    # As the note rows store them: Decimal("0.7500") stated four times, right three times → 0.
    confidences = [Decimal("0.7500")] * 4
    assert expected_calibration_error(confidences, [True, True, True, False]) == 0.0
    assert expected_calibration_error(confidences, [1, 1, 1, 1]) == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("confidences", "outcomes", "n_bins", "message"),
    [
        ([], [], 10, "no confidences"),
        ([0.5, 0.6], [1], 10, "2 confidences but 1 outcomes"),
        ([-0.01], [1], 10, r"confidence #0 must be within \[0, 1\]"),
        ([0.5, 1.01], [1, 0], 10, r"confidence #1 must be within \[0, 1\]"),
        ([math.nan], [1], 10, "confidence #0"),
        ([math.inf], [1], 10, "confidence #0"),
        ([True], [1], 10, "confidence #0 must be a number"),
        (["0.5"], [1], 10, "confidence #0 must be a number"),
        ([0.5], [2], 10, "outcome #0 must be 0/1"),
        ([0.5], [-1], 10, "outcome #0 must be 0/1"),
        ([0.5], [0.5], 10, "outcome #0 must be 0/1"),
        ([0.5], [1.0], 10, "outcome #0 must be 0/1"),
        ([0.5], ["1"], 10, "outcome #0 must be 0/1"),
        ([0.5], [None], 10, "outcome #0 must be 0/1"),
        ([0.5], [1], 0, "n_bins must be a whole number >= 1"),
        ([0.5], [1], -3, "n_bins"),
        ([0.5], [1], 2.5, "n_bins"),
        ([0.5], [1], True, "n_bins"),
    ],
)
def test_it_refuses_input_that_is_not_a_set_of_resolved_calls(
    confidences: list[object], outcomes: list[object], n_bins: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        expected_calibration_error(confidences, outcomes, n_bins)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        reliability_bins(confidences, outcomes, n_bins)  # type: ignore[arg-type]


@PROPERTY
@given(samples(), st.integers(min_value=1, max_value=25))
def test_ece_lies_in_zero_to_one_and_is_never_below_the_one_bin_gap(
    drawn: tuple[list[float], list[int]], n_bins: int
) -> None:
    confidences, outcomes = drawn
    ece = expected_calibration_error(confidences, outcomes, n_bins)
    assert 0.0 <= ece <= 1.0
    # Splitting one bin into many can only reveal more miscalibration (triangle inequality).
    overall = abs(math.fsum(confidences) / len(confidences) - sum(outcomes) / len(outcomes))
    assert ece >= overall - 1e-12


@PROPERTY
@given(samples(), st.integers(min_value=1, max_value=25))
def test_every_sample_sits_in_exactly_one_bin_within_its_edges(
    drawn: tuple[list[float], list[int]], n_bins: int
) -> None:
    confidences, outcomes = drawn
    rows = reliability_bins(confidences, outcomes, n_bins)
    assert len(rows) == n_bins
    assert sum(row.count for row in rows) == len(confidences)
    assert sum(row.positives for row in rows) == sum(outcomes)
    assert rows[0].low == 0.0 and rows[-1].high == 1.0
    assert all(left.high == right.low for left, right in itertools.pairwise(rows))
    for row in rows:
        if row.mean_confidence is not None:
            assert row.low - 1e-12 <= row.mean_confidence <= row.high + 1e-12
    # The assignment is scikit-learn's, sample by sample.
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    for value in confidences:
        assert bin_index(value, n_bins) == int(np.searchsorted(edges[1:-1], value))
        index = bin_index(value, n_bins)
        assert (edges[index] < value or index == 0) and value <= edges[index + 1]


@PROPERTY
@given(samples(), st.integers(min_value=1, max_value=25), st.randoms(use_true_random=False))
def test_ece_does_not_depend_on_the_order_of_the_calls(
    drawn: tuple[list[float], list[int]], n_bins: int, random: object
) -> None:
    confidences, outcomes = drawn
    pairs = list(zip(confidences, outcomes, strict=True))
    random.shuffle(pairs)  # type: ignore[attr-defined]
    shuffled_confidences = [c for c, _ in pairs]
    shuffled_outcomes = [o for _, o in pairs]
    assert expected_calibration_error(shuffled_confidences, shuffled_outcomes, n_bins) == pytest.approx(
        expected_calibration_error(confidences, outcomes, n_bins), abs=1e-12
    )


# ---------------------------------------------------------------------------------------------
# The alarm
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ece", "rings"),
    [(0.0, False), (0.2499999, False), (0.25, False), (0.2500001, True), (0.4, True), (1.0, True)],
)
def test_the_alarm_rings_only_above_the_threshold(ece: float, rings: bool) -> None:
    assert ECE_ALARM == 0.25
    assert ece_alarm(ece) is rings


@pytest.mark.parametrize("ece", [-0.01, 1.01, math.nan, math.inf, True, "0.3", None])
def test_the_alarm_refuses_a_value_that_is_not_an_ece(ece: object) -> None:
    with pytest.raises(ValueError, match="ECE"):
        ece_alarm(ece)  # type: ignore[arg-type]


def test_an_overconfident_desk_rings_and_recalibration_quiets_it() -> None:
    # Stated 0.9 ten times, right five times: ECE = |0.9 − 0.5| = 0.4 > 0.25.
    confidences = [0.9] * 10
    outcomes = [1, 0] * 5
    assert ece_alarm(expected_calibration_error(confidences, outcomes))
    # The isotonic map learns that 0.9 means 0.5; recalibrated, the same calls score 0.
    calibrated = fit_isotonic(confidences, outcomes)
    recalibrated = [calibrated.apply(c) for c in confidences]
    assert recalibrated == [0.5] * 10
    assert expected_calibration_error(recalibrated, outcomes) == 0.0


# ---------------------------------------------------------------------------------------------
# Conformal bands
# ---------------------------------------------------------------------------------------------

# Absolute values sorted: 0.1, 0.2, 0.5, 1, 2, 3, 4, 6, 7.
NINE = [0.5, -3.0, 1.0, -2.0, 4.0, 0.1, -0.2, 7.0, -6.0]


def test_nine_residuals_at_alpha_one_tenth_use_the_ninth_smallest() -> None:
    # ⌈(9 + 1)(1 − 0.1)⌉ = ⌈9⌉ = 9 → the 9th smallest |residual| = 7 (the largest).
    assert conformal_rank(9, 0.1) == 9
    assert conformal_quantile(NINE, 0.1) == 7.0


def test_eight_residuals_at_alpha_one_tenth_cannot_bound_the_band() -> None:
    # ⌈(8 + 1)(1 − 0.1)⌉ = ⌈8.1⌉ = 9 > 8 → no finite quantile.
    assert conformal_rank(8, 0.1) == 9
    assert conformal_quantile(NINE[:8], 0.1) == math.inf
    assert conformal_band(1.5, NINE[:8], 0.1) == (-math.inf, math.inf)


@pytest.mark.parametrize(
    ("n", "alpha", "rank"),
    [
        (9, 0.1, 9),  # (10)(0.9) = 9 exactly, not 9.000…02 or 8.999…: α is read as the decimal 1/10
        (9, 0.3, 7),  # (10)(0.7) = 7; binary 0.3 would have made it 7.000…01 → 8
        (19, 0.05, 19),  # (20)(0.95) = 19
        (19, 0.1, 18),  # (20)(0.9) = 18
        (10, 0.5, 6),  # (11)(0.5) = 5.5 → 6
        (199, 0.1, 180),  # the default buffer: (200)(0.9) = 180
        (0, 0.1, 1),  # (1)(0.9) = 0.9 → 1
        (9, 1e-9, 10),  # (10)(1 − 1e-9) = 9.99999999 → 10
        (9, 0.999999, 1),  # (10)(0.000001) = 0.00001 → 1
    ],
)
def test_the_conformal_rank_is_exact(n: int, alpha: float, rank: int) -> None:
    assert conformal_rank(n, alpha) == rank


def test_a_decimal_or_fraction_alpha_means_the_same() -> None:
    assert conformal_rank(9, Decimal("0.1")) == conformal_rank(9, Fraction(1, 10)) == 9  # type: ignore[arg-type]


def test_alpha_near_the_edges() -> None:
    # A tiny α asks for the 10th of 9: unbounded. An α near 1 takes the smallest |residual|.
    assert conformal_quantile(NINE, 1e-9) == math.inf
    assert conformal_quantile(NINE, 0.999999) == 0.1
    # (10)(0.5) = 5 → the 5th smallest = 2.
    assert conformal_quantile(NINE, 0.5) == 2.0


def test_no_residuals_give_an_unbounded_band() -> None:
    assert conformal_quantile([], 0.1) == math.inf
    assert conformal_band(0.0, [], 0.1) == (-math.inf, math.inf)


@pytest.mark.parametrize("alpha", [0, 0.0, 1, 1.0, -0.1, 1.1, math.nan, math.inf, -math.inf, True, False, "0.1", None])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha: object) -> None:
    with pytest.raises(ValueError, match="alpha"):
        conformal_quantile(NINE, alpha)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, True, "1", None])
def test_a_residual_that_is_not_a_finite_number_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="residual #2"):
        conformal_quantile([1.0, 2.0, bad], 0.1)  # type: ignore[list-item]


def test_the_band_is_centred_on_the_forecast() -> None:
    # q = 7 (nine residuals, α = 0.1): 1.5 ± 7.
    assert conformal_band(1.5, NINE, 0.1) == (-5.5, 8.5)
    # At α = 0.5, q = 2: the band narrows to 1.5 ± 2.
    assert conformal_band(1.5, NINE, 0.5) == (-0.5, 3.5)


@pytest.mark.parametrize("center", [math.nan, math.inf, True, "1.5", None])
def test_the_band_refuses_a_centre_that_is_not_a_finite_number(center: object) -> None:
    with pytest.raises(ValueError, match="center"):
        conformal_band(center, NINE, 0.1)  # type: ignore[arg-type]


@PROPERTY
@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), max_size=60),
    st.floats(min_value=0.01, max_value=0.99),
)
def test_the_quantile_covers_at_least_its_rank_and_shrinks_as_alpha_grows(residuals: list[float], alpha: float) -> None:
    q = conformal_quantile(residuals, alpha)
    rank = conformal_rank(len(residuals), alpha)
    if rank > len(residuals):
        assert q == math.inf
    else:
        assert sum(abs(r) <= q for r in residuals) >= rank
        assert sum(abs(r) < q for r in residuals) < rank
        # At least (1 − α) of the residuals are inside the band.
        assert sum(abs(r) <= q for r in residuals) >= (1 - alpha) * len(residuals)
    assert conformal_quantile(residuals, min(alpha + 0.005, 0.999)) <= q


# ---------------------------------------------------------------------------------------------
# The residual buffer
# ---------------------------------------------------------------------------------------------


def test_the_buffer_keeps_the_latest_residuals_oldest_first() -> None:
    buffer = ResidualBuffer(3)
    for value in (1.0, -2.0, 3.0, 4.0):
        buffer.append(value)
    assert buffer.values() == (-2.0, 3.0, 4.0)
    assert len(buffer) == 3
    assert buffer.maxlen == 3
    assert conformal_quantile(buffer.values(), 0.5) == 3.0  # ⌈4 · 0.5⌉ = 2 → |3|


def test_the_buffer_defaults_to_the_retrospectives_size() -> None:
    assert ResidualBuffer().maxlen == RESIDUAL_BUFFER_SIZE == 200
    assert len(ResidualBuffer()) == 0 and ResidualBuffer().values() == ()


@pytest.mark.parametrize("maxlen", [0, -1, 2.5, True, None])
def test_the_buffer_refuses_a_size_below_one(maxlen: object) -> None:
    with pytest.raises(ValueError, match="maxlen"):
        ResidualBuffer(maxlen)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [math.nan, math.inf, True, "1", None])
def test_the_buffer_refuses_a_residual_that_is_not_a_finite_number(bad: object) -> None:
    buffer = ResidualBuffer(3)
    with pytest.raises(ValueError, match="residual"):
        buffer.append(bad)  # type: ignore[arg-type]
    assert len(buffer) == 0


@PROPERTY
@given(st.integers(min_value=1, max_value=20), st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=60))
def test_the_buffer_holds_exactly_the_last_maxlen_appended(maxlen: int, appended: list[float]) -> None:
    buffer = ResidualBuffer(maxlen)
    for value in appended:
        buffer.append(value)
    assert buffer.values() == tuple(appended[-maxlen:])
    assert len(buffer) == min(maxlen, len(appended))


# ---------------------------------------------------------------------------------------------
# Isotonic recalibration
# ---------------------------------------------------------------------------------------------


def test_pav_pools_the_violators_of_a_hand_example() -> None:
    # Points (0.1, 0) (0.2, 1) (0.3, 0) (0.4, 0) (0.5, 1).
    # (0.2, 1) then (0.3, 0) violate → pool to 1/2 over 0.2–0.3; then (0.4, 0) is below 1/2 → pool
    # to 1/3 over 0.2–0.4; 0 < 1/3 < 1, so the blocks are [0.1]: 0, [0.2–0.4]: 1/3, [0.5]: 1.
    fitted = fit_isotonic([0.1, 0.2, 0.3, 0.4, 0.5], [0, 1, 0, 0, 1])
    assert fitted.blocks == (
        IsotonicBlock(0.1, 0.1, count=1, positives=0),
        IsotonicBlock(0.2, 0.4, count=3, positives=1),
        IsotonicBlock(0.5, 0.5, count=1, positives=1),
    )
    assert fitted.points == ((0.1, 0.0), (0.2, 1 / 3), (0.4, 1 / 3), (0.5, 1.0))


@pytest.mark.parametrize(
    ("stated", "calibrated"),
    [
        (0.0, 0.0),  # below the first point: clipped to its value
        (0.1, 0.0),
        (0.15, 1 / 6),  # halfway from (0.1, 0) to (0.2, 1/3)
        (0.2, 1 / 3),
        (0.3, 1 / 3),  # inside a block: flat
        (0.4, 1 / 3),
        (0.45, 2 / 3),  # halfway from (0.4, 1/3) to (0.5, 1)
        (0.5, 1.0),
        (1.0, 1.0),  # above the last point: clipped
    ],
)
def test_the_map_interpolates_between_block_corners_and_clips_at_the_ends(stated: float, calibrated: float) -> None:
    fitted = fit_isotonic([0.1, 0.2, 0.3, 0.4, 0.5], [0, 1, 0, 0, 1])
    assert fitted.apply(stated) == pytest.approx(calibrated, abs=1e-12)


def test_ties_in_confidence_are_pooled_before_fitting() -> None:
    # 0.2 twice, right twice (1); 0.6 three times, right once (1/3): a violation → one block 3/5.
    fitted = fit_isotonic([0.2, 0.6, 0.2, 0.6, 0.6], [1, 0, 1, 0, 1])
    assert fitted.blocks == (IsotonicBlock(0.2, 0.6, count=5, positives=3),)
    assert [fitted.apply(x) for x in (0.0, 0.2, 0.4, 0.6, 1.0)] == [0.6] * 5
    # No violation: 0.3 twice, right once (1/2); 0.7 once, right (1). Midway 0.5 → 3/4.
    fitted = fit_isotonic([0.3, 0.3, 0.7], [True, False, True])
    assert [block.value for block in fitted.blocks] == [0.5, 1.0]
    assert fitted.apply(0.5) == pytest.approx(0.75)


def test_equal_neighbours_are_one_block_and_a_monotone_input_is_left_alone() -> None:
    assert fit_isotonic([0.2, 0.4], [1, 1]).blocks == (IsotonicBlock(0.2, 0.4, count=2, positives=2),)
    fitted = fit_isotonic([0.1, 0.5, 0.9], [0, 0, 1])
    assert fitted.blocks == (
        IsotonicBlock(0.1, 0.5, count=2, positives=0),
        IsotonicBlock(0.9, 0.9, count=1, positives=1),
    )
    fitted = fit_isotonic([0.1, 0.1, 0.5, 0.9], [0, 1, 1, 1])
    assert [block.value for block in fitted.blocks] == [0.5, 1.0]


def test_one_sample_gives_a_flat_map() -> None:
    fitted = fit_isotonic([Decimal("0.8")], [0])
    assert fitted.points == ((0.8, 0.0),)
    assert fitted.apply(0.0) == fitted.apply(0.8) == fitted.apply(1.0) == 0.0


def test_the_map_refuses_a_confidence_outside_the_unit_interval_and_needs_a_block() -> None:
    fitted = fit_isotonic([0.2, 0.8], [0, 1])
    for bad in (-0.1, 1.1, math.nan, True, "0.5"):
        with pytest.raises(ValueError, match="confidence"):
            fitted.apply(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one block"):
        IsotonicMap(())
    with pytest.raises(ValueError, match="no confidences"):
        fit_isotonic([], [])
    with pytest.raises(ValueError, match="outcome #1"):
        fit_isotonic([0.2, 0.8], [0, 3])


def _exact_squared_error(points: list[tuple[float, int, int]], values: list[Fraction]) -> Fraction:
    """Σ over distinct confidences of count·(v − outcome)², with ``positives`` of them 1."""
    return sum(
        (p * (1 - v) ** 2 + (c - p) * v**2 for (_, c, p), v in zip(points, values, strict=True)),
        Fraction(0),
    )


def _best_monotone_error(points: list[tuple[float, int, int]]) -> Fraction:
    """Brute force: the optimum is constant on contiguous groups at each group's mean, so try every
    split into contiguous groups whose means do not decrease."""
    best: Fraction | None = None
    gaps = range(1, len(points))
    for cuts in itertools.chain.from_iterable(itertools.combinations(gaps, k) for k in range(len(points))):
        bounds = [0, *cuts, len(points)]
        groups = [points[a:b] for a, b in itertools.pairwise(bounds)]
        means = [Fraction(sum(p for _, _, p in g), sum(c for _, c, _ in g)) for g in groups]
        if any(a > b for a, b in itertools.pairwise(means)):
            continue
        values = [mean for mean, group in zip(means, groups, strict=True) for _ in group]
        error = _exact_squared_error(points, values)
        best = error if best is None else min(best, error)
    assert best is not None
    return best


def _distinct(confidences: list[float], outcomes: list[int]) -> list[tuple[float, int, int]]:
    return [
        (x, sum(1 for c in confidences if c == x), sum(o for c, o in zip(confidences, outcomes, strict=True) if c == x))
        for x in sorted(set(confidences))
    ]


@PROPERTY
@given(samples(), st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=2, max_size=30))
def test_the_fitted_map_is_non_decreasing_and_stays_in_the_unit_interval(
    drawn: tuple[list[float], list[int]], probes: list[float]
) -> None:
    fitted = fit_isotonic(*drawn)
    values = [fitted.apply(x) for x in sorted(probes)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a <= b for a, b in itertools.pairwise(values))
    assert all(a.value < b.value for a, b in itertools.pairwise(fitted.blocks))
    assert all(a.high < b.low for a, b in itertools.pairwise(fitted.blocks))
    assert sum(block.count for block in fitted.blocks) == len(drawn[0])


@PROPERTY
@given(samples())
def test_at_a_training_confidence_the_map_gives_its_blocks_hit_rate(drawn: tuple[list[float], list[int]]) -> None:
    confidences, outcomes = drawn
    fitted = fit_isotonic(confidences, outcomes)
    for value in confidences:
        (block,) = [b for b in fitted.blocks if b.low <= value <= b.high]
        assert fitted.apply(value) == block.value
        members = [o for c, o in zip(confidences, outcomes, strict=True) if block.low <= c <= block.high]
        assert block.count == len(members) and block.positives == sum(members)


@PROPERTY
@given(samples())
def test_recalibrating_the_training_calls_never_increases_their_squared_error(
    drawn: tuple[list[float], list[int]],
) -> None:
    # The raw confidence is itself a non-decreasing map, and PAV is the least-squares one.
    confidences, outcomes = drawn
    fitted = fit_isotonic(confidences, outcomes)
    raw = math.fsum((c - o) ** 2 for c, o in zip(confidences, outcomes, strict=True))
    recalibrated = math.fsum((fitted.apply(c) - o) ** 2 for c, o in zip(confidences, outcomes, strict=True))
    assert recalibrated <= raw + 1e-9


@PROPERTY
@given(samples(max_size=12).filter(lambda drawn: len(set(drawn[0])) <= 7))
def test_pav_matches_a_brute_force_least_squares_monotone_fit(drawn: tuple[list[float], list[int]]) -> None:
    confidences, outcomes = drawn
    points = _distinct(confidences, outcomes)
    fitted = fit_isotonic(confidences, outcomes)
    values = [next(Fraction(b.positives, b.count) for b in fitted.blocks if b.low <= x <= b.high) for x, _, _ in points]
    assert _exact_squared_error(points, values) == _best_monotone_error(points)


# ---------------------------------------------------------------------------------------------
# When to refit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("since", "total", "refit"),
    [
        (None, 0, False),  # never fitted, nothing resolved
        (None, 29, False),  # one short of the minimum
        (None, 30, True),  # the first fit as soon as the minimum is reached
        (None, 500, True),
        (0, 30, False),  # just fitted
        (49, 79, False),  # one short of the interval
        (50, 80, True),  # the interval itself
        (51, 200, True),
        (50, 50, True),
    ],
)
def test_refit_at_the_minimum_then_every_interval(since: int | None, total: int, refit: bool) -> None:
    assert (
        should_refit(
            samples_since_fit=since,
            refit_every=CALIBRATION_REFIT_EVERY,
            total_samples=total,
            min_samples=CALIBRATION_MIN_SAMPLES,
        )
        is refit
    )


def test_never_refit_below_the_minimum_even_after_the_interval() -> None:
    # A smaller history than the minimum (e.g. the minimum was raised after a fit).
    assert not should_refit(samples_since_fit=60, refit_every=50, total_samples=60, min_samples=100)
    assert should_refit(samples_since_fit=1, refit_every=1, total_samples=1, min_samples=1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"samples_since_fit": -1}, "samples_since_fit"),
        ({"samples_since_fit": 81}, "cannot exceed total_samples"),
        ({"samples_since_fit": True}, "samples_since_fit"),
        ({"refit_every": 0}, "refit_every"),
        ({"refit_every": 2.5}, "refit_every"),
        ({"total_samples": -1}, "total_samples"),
        ({"min_samples": 0}, "min_samples"),
        ({"min_samples": None}, "min_samples"),
    ],
)
def test_should_refit_refuses_counts_that_cannot_be(arguments: dict[str, object], message: str) -> None:
    call: dict[str, object] = {"samples_since_fit": 10, "refit_every": 50, "total_samples": 80, "min_samples": 30}
    call.update(arguments)
    with pytest.raises(ValueError, match=message):
        should_refit(**call)  # type: ignore[arg-type]


def test_the_retrospectives_defaults() -> None:
    assert (CALIBRATION_MIN_SAMPLES, CALIBRATION_REFIT_EVERY) == (30, 50)
    assert (RESIDUAL_BUFFER_SIZE, RESIDUAL_MIN_SAMPLES, CONFORMAL_ALPHA) == (200, 30, 0.10)
    assert ECE_ALARM == 0.25
