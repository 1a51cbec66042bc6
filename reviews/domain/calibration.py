"""Calibration: does the confidence the desk states match how often it turns out right?

Pure arithmetic for the retrospective (no Django), in four parts:

- **Expected calibration error** (ECE) over equal-width confidence bins, and the per-bin rows of a
  reliability chart. Bins follow scikit-learn's ``calibration_curve(strategy="uniform")`` exactly:
  edges ``numpy.linspace(0, 1, n_bins + 1)`` and ``numpy.searchsorted(edges[1:-1], confidence)``
  (numpy's default ``side="left"``), so an interior edge belongs to the bin *below* it: the bins are
  ``[0, e1], (e1, e2], …, (e_{n-1}, 1]``. 0.0 and 0.1 both land in bin 0 of ten, 0.5 in bin 4, 1.0
  in bin 9.
- **Split-conformal bands** for a forecast: the ⌈(n+1)(1−α)⌉-th smallest absolute residual, and a
  bounded buffer of residuals so an evaluator's memory stays fixed (``vocabulary.conformal``,
  re-exported here).
- **Isotonic recalibration** by pool-adjacent-violators, applied the way scikit-learn's
  ``IsotonicRegression(out_of_bounds="clip")`` predicts: linear between the fitted points, flat
  beyond the ends.
- **The alarm**: ECE above ``ECE_ALARM``.

Confidences and forecast residuals are unit-free ratios or percentages, not money, so they are
floats here (a Decimal confidence, as the note rows store it, is accepted and read as a float).
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

# The split-conformal arithmetic lives in the shared vocabulary (trading's forecast uses it too);
# it is re-exported here unchanged, as part of the retrospective's calibration.
from vocabulary.conformal import (
    CONFORMAL_ALPHA,
    RESIDUAL_BUFFER_SIZE,
    RESIDUAL_MIN_SAMPLES,
    ResidualBuffer,
    conformal_band,
    conformal_quantile,
    conformal_rank,
)

__all__ = [
    "CALIBRATION_MIN_SAMPLES",
    "CALIBRATION_REFIT_EVERY",
    "CONFORMAL_ALPHA",
    "ECE_ALARM",
    "RESIDUAL_BUFFER_SIZE",
    "RESIDUAL_MIN_SAMPLES",
    "IsotonicBlock",
    "IsotonicMap",
    "ReliabilityBin",
    "ResidualBuffer",
    "bin_index",
    "conformal_band",
    "conformal_quantile",
    "conformal_rank",
    "ece_alarm",
    "ece_of_bins",
    "expected_calibration_error",
    "fit_isotonic",
    "reliability_bins",
    "should_refit",
]

# The retrospective's defaults (the wiring step reads them from here or from settings).
ECE_ALARM = 0.25  # tell the owner when the ECE exceeds this
CALIBRATION_MIN_SAMPLES = 30  # resolved confidences before an isotonic map is fitted at all
CALIBRATION_REFIT_EVERY = 50  # new resolved confidences between refits

Confidence = float | Decimal


# ---------------------------------------------------------------------------------------------
# Checking the inputs
# ---------------------------------------------------------------------------------------------


def _confidence(value: object, label: str = "confidence") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        raise ValueError(f"{label} must be a number in [0, 1], got {value!r}")
    number = float(value)
    if not 0.0 <= number <= 1.0:  # also refuses NaN
        raise ValueError(f"{label} must be within [0, 1], got {value!r}")
    return number


def _outcome(value: object, label: str) -> int:
    if not isinstance(value, numbers.Integral) or int(value) not in (0, 1):
        raise ValueError(f"{label} must be 0/1 or False/True, got {value!r}")
    return int(value)


def _samples(confidences: Sequence[Confidence], outcomes: Sequence[int]) -> tuple[list[float], list[int]]:
    """The inputs as floats and 0/1 ints, or a ValueError naming the first bad one."""
    if len(confidences) != len(outcomes):
        raise ValueError(f"{len(confidences)} confidences but {len(outcomes)} outcomes: they must pair up")
    if not confidences:
        raise ValueError("no confidences: calibration needs at least one resolved call")
    # The common case, plain floats in [0, 1] and 0/1 ints, is checked in bulk; anything else is
    # checked value by value, so a bad one is named.
    if {*map(type, confidences)} == {float} and {*map(type, outcomes)} == {int}:  # type() in C, not a generator
        stated = np.asarray(confidences, dtype=float)
        if bool(np.all((stated >= 0.0) & (stated <= 1.0))) and set(outcomes) <= {0, 1}:  # NaN fails the range
            return list(confidences), list(outcomes)  # type: ignore[arg-type]  # all floats, just checked
    checked = [_confidence(value, f"confidence #{i}") for i, value in enumerate(confidences)]
    results = [_outcome(value, f"outcome #{i}") for i, value in enumerate(outcomes)]
    return checked, results


def _bin_count(n_bins: object) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or int(n_bins) < 1:
        raise ValueError(f"n_bins must be a whole number >= 1, got {n_bins!r}")
    return int(n_bins)


# ---------------------------------------------------------------------------------------------
# Reliability bins and the expected calibration error
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One bar of the reliability chart.

    Bin 0 covers ``[low, high]``; every later bin ``(low, high]``. An empty bin has ``count`` 0 and
    no means (None), so a chart can leave a gap rather than draw a made-up point.
    """

    index: int
    low: float
    high: float
    count: int
    positives: int
    mean_confidence: float | None
    observed_rate: float | None

    @property
    def gap(self) -> float | None:
        """|mean confidence − observed rate|, or None for an empty bin."""
        if self.mean_confidence is None or self.observed_rate is None:
            return None
        return abs(self.mean_confidence - self.observed_rate)


def bin_index(confidence: float, n_bins: int) -> int:
    """The bin of ``confidence`` among ``n_bins`` equal-width bins, as scikit-learn assigns it."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return int(np.searchsorted(edges[1:-1], confidence))


def _bin_rows(
    grouped: list[float], bounds: list[int], positives: list[int], edges: list[float]
) -> tuple[ReliabilityBin, ...]:
    """The bins from the confidences grouped by bin (bin ``i`` is ``grouped[bounds[i]:bounds[i + 1]]``)
    and each bin's count of calls that came true."""
    rows = []
    for index, hits in enumerate(positives):
        first, last = bounds[index], bounds[index + 1]
        count = last - first
        rows.append(
            ReliabilityBin(
                index=index,
                low=edges[index],
                high=edges[index + 1],
                count=count,
                positives=hits,
                # fsum is exactly rounded, so a bin's mean does not depend on the order of its members.
                mean_confidence=math.fsum(grouped[first:last]) / count if count else None,
                observed_rate=hits / count if count else None,
            )
        )
    return tuple(rows)


def reliability_bins(
    confidences: Sequence[Confidence], outcomes: Sequence[int], n_bins: int = 10
) -> tuple[ReliabilityBin, ...]:
    """Every one of the ``n_bins`` bins, empty ones included, in order from 0 to 1.

    ``outcomes[i]`` is 1 (or True) when the call made with ``confidences[i]`` came true.
    Refuses (ValueError) empty or unpaired inputs, a confidence outside [0, 1], an outcome other
    than 0/1, and fewer than one bin.
    """
    bins = _bin_count(n_bins)
    checked, results = _samples(confidences, outcomes)
    edges = np.linspace(0.0, 1.0, bins + 1)
    stated = np.asarray(checked, dtype=float)
    indices = np.searchsorted(edges[1:-1], stated)
    # Group by bin in one sort, in bulk: the counts, hits and sums need no per-call Python objects.
    order = np.argsort(indices, kind="stable")
    bounds = np.searchsorted(indices[order], np.arange(bins + 1)).tolist()
    came_true = np.asarray(results, dtype=np.int64) == 1
    positives = np.bincount(indices[came_true], minlength=bins).tolist()
    return _bin_rows(stated[order].tolist(), bounds, positives, [float(edge) for edge in edges])


def expected_calibration_error(confidences: Sequence[Confidence], outcomes: Sequence[int], n_bins: int = 10) -> float:
    """Σ over non-empty bins of (bin count / n) · |mean confidence − observed rate|, in [0, 1].

    0 when every bin's stated confidence matches its hit rate; 1 when every call was stated with
    certainty (1.0 or 0.0) and went the other way. Refuses bad input as ``reliability_bins`` does.
    """
    return ece_of_bins(reliability_bins(confidences, outcomes, n_bins))


def ece_of_bins(rows: Sequence[ReliabilityBin]) -> float:
    """The expected calibration error of bins already made (``reliability_bins``): the same figure
    as ``expected_calibration_error`` on their samples, without binning them again."""
    total = sum(row.count for row in rows)
    if not total:
        raise ValueError("no samples in the bins: calibration needs at least one resolved call")
    return math.fsum(row.count / total * row.gap for row in rows if row.gap is not None)


def ece_alarm(ece: float) -> bool:
    """True when ``ece`` exceeds ``ECE_ALARM`` (0.25 itself does not ring)."""
    if isinstance(ece, bool) or not isinstance(ece, numbers.Real) or not 0.0 <= float(ece) <= 1.0:
        raise ValueError(f"an ECE is a number within [0, 1], got {ece!r}")
    return float(ece) > ECE_ALARM


# ---------------------------------------------------------------------------------------------
# Isotonic recalibration (pool-adjacent-violators)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IsotonicBlock:
    """A run of adjacent distinct confidences, ``low`` to ``high``, pooled to one value."""

    low: float
    high: float
    count: int
    positives: int

    @property
    def value(self) -> float:
        """The block's hit rate: its fitted calibrated confidence."""
        return self.positives / self.count

    def merged(self, later: IsotonicBlock) -> IsotonicBlock:
        return IsotonicBlock(self.low, later.high, self.count + later.count, self.positives + later.positives)

    def not_below(self, later: IsotonicBlock) -> bool:
        """self.value >= later.value, compared exactly in whole numbers."""
        return self.positives * later.count >= later.positives * self.count


@dataclass(frozen=True, slots=True)
class IsotonicMap:
    """A non-decreasing map from stated to calibrated confidence.

    Its points are each block's lowest and highest confidence at the block's value (scikit-learn's
    trimmed ``X_thresholds_``/``y_thresholds_``); between points it is linear, beyond the first and
    last it stays flat (``out_of_bounds="clip"``). Block values strictly increase.
    """

    blocks: tuple[IsotonicBlock, ...]

    def __post_init__(self) -> None:
        if not self.blocks:
            raise ValueError("an isotonic map needs at least one block")

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        """The (confidence, calibrated) corners the map interpolates between, in order."""
        corners: list[tuple[float, float]] = []
        for block in self.blocks:
            corners.append((block.low, block.value))
            if block.high > block.low:
                corners.append((block.high, block.value))
        return tuple(corners)

    def apply(self, confidence: Confidence) -> float:
        """The calibrated confidence for ``confidence`` (a number in [0, 1])."""
        x = _confidence(confidence)
        corners = self.points
        xs = [point[0] for point in corners]
        if x <= xs[0]:
            return corners[0][1]
        if x >= xs[-1]:
            return corners[-1][1]
        right = bisect.bisect_right(xs, x)
        (x0, y0), (x1, y1) = corners[right - 1], corners[right]
        if x == x0:
            return y0
        interpolated = y0 + (y1 - y0) * ((x - x0) / (x1 - x0))
        return min(max(interpolated, y0), y1)  # rounding never steps outside the segment


def _distinct_points(confidences: list[float], outcomes: list[int]) -> list[IsotonicBlock]:
    """One block per distinct confidence, in increasing order: ties are pooled before PAV."""
    tallies: dict[float, tuple[int, int]] = {}
    for confidence, outcome in zip(confidences, outcomes, strict=True):
        count, positives = tallies.get(confidence, (0, 0))
        tallies[confidence] = (count + 1, positives + outcome)
    return [IsotonicBlock(x, x, count, positives) for x, (count, positives) in sorted(tallies.items())]


def _pool_adjacent_violators(points: list[IsotonicBlock]) -> tuple[IsotonicBlock, ...]:
    """Merge neighbours until block values strictly increase (equal neighbours merge too)."""
    stack: list[IsotonicBlock] = []
    for block in points:
        current = block
        while stack and stack[-1].not_below(current):
            current = stack.pop().merged(current)
        stack.append(current)
    return tuple(stack)


def fit_isotonic(confidences: Sequence[Confidence], outcomes: Sequence[int]) -> IsotonicMap:
    """The non-decreasing map that best fits the outcomes, by pool-adjacent-violators.

    Each sample weighs one (a distinct confidence weighs its count). Among all non-decreasing
    functions of the confidence, the fit has the least squared error against the 0/1 outcomes;
    its values are hit rates, so they lie in [0, 1]. Refuses bad input as ``reliability_bins`` does.
    """
    checked, results = _samples(confidences, outcomes)
    return IsotonicMap(_pool_adjacent_violators(_distinct_points(checked, results)))


def _count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def should_refit(*, samples_since_fit: int | None, refit_every: int, total_samples: int, min_samples: int) -> bool:
    """Whether to fit the isotonic map again now.

    ``samples_since_fit`` is None when no map has been fitted yet: then fit as soon as
    ``total_samples`` reaches ``min_samples``. After that, refit once ``refit_every`` new samples
    have resolved since the last fit (never while the total is below ``min_samples``).
    """
    total = _count("total_samples", total_samples, 0)
    every = _count("refit_every", refit_every, 1)
    floor = _count("min_samples", min_samples, 1)
    since = None if samples_since_fit is None else _count("samples_since_fit", samples_since_fit, 0)
    if since is not None and since > total:
        raise ValueError(f"samples_since_fit ({since}) cannot exceed total_samples ({total})")
    if total < floor:
        return False
    return since is None or since >= every
