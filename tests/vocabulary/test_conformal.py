"""The split-conformal arithmetic lives in the shared vocabulary (trading's forecast uses it) and
the retrospective's calibration re-exports the very same functions."""

from __future__ import annotations

import math

import pytest

import reviews.domain.calibration as calibration
from vocabulary import conformal
from vocabulary.conformal import ResidualBuffer, conformal_band, conformal_quantile, conformal_rank

NINE = [0.1, -0.5, 1.0, 2.0, -3.0, 4.0, 5.0, -6.0, 7.0]


def test_reviews_re_exports_the_vocabularys_functions_unchanged() -> None:
    for name in conformal.__all__:
        assert getattr(calibration, name) is getattr(conformal, name)


def test_the_rank_and_the_quantile_by_hand() -> None:
    assert conformal_rank(9, 0.1) == 9  # ⌈10 · 0.9⌉
    assert conformal_rank(30, 0.1) == 28  # ⌈31 · 0.9⌉ = ⌈27.9⌉
    assert conformal_quantile(NINE, 0.1) == 7.0
    assert conformal_quantile(NINE, 0.5) == 3.0  # ⌈10 · 0.5⌉ = the 5th of 0.1, 0.5, 1, 2, 3, …


def test_too_few_residuals_give_an_unbounded_band() -> None:
    assert conformal_quantile(NINE[:8], 0.1) == math.inf
    assert conformal_band(1.5, NINE[:8], 0.1) == (-math.inf, math.inf)


def test_the_band_is_centred_on_the_forecast() -> None:
    assert conformal_band(1.5, NINE, 0.1) == (-5.5, 8.5)


def test_the_buffer_keeps_the_newest() -> None:
    buffer = ResidualBuffer(2)
    for residual in (1.0, -2.0, 3.0):
        buffer.append(residual)
    assert buffer.values() == (-2.0, 3.0)
    with pytest.raises(ValueError):
        buffer.append(math.nan)
