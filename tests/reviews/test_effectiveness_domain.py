"""Strategic effectiveness: rolling figures, the composite score and the 70%-for-two-weeks flag.
Pure: no database."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from reviews.domain.effectiveness import (
    WeekFigures,
    composite_score,
    effectiveness,
    inaction_superiority,
    rolling_effectiveness,
    score_label,
    should_flag,
)


def test_exactly_seventy_percent_twice_does_not_flag() -> None:
    assert not should_flag(["0.7000", "0.7000"])
    assert not should_flag([0.7, 0.7])
    assert not should_flag([Decimal("0.7"), Decimal("0.7")])


def test_just_above_seventy_percent_for_two_weeks_flags() -> None:
    assert should_flag(["0.7001", "0.7001"])
    assert should_flag(["0.2500", "0.8000", "0.7500"])  # the last two weeks count


def test_one_week_above_is_not_two_consecutive_weeks() -> None:
    assert not should_flag(["0.9000"])
    assert not should_flag(["0.9000", "0.7000"])
    assert not should_flag(["0.9000", "0.5000", "0.9000"])


def test_a_week_without_positions_breaks_the_run() -> None:
    assert not should_flag(["0.9000", None])
    assert not should_flag([None, "0.9000"])


def test_the_share_and_the_weeks_are_settings() -> None:
    assert should_flag(["0.6", "0.6", "0.6"], share=0.5, weeks=3)
    assert not should_flag(["0.6", "0.6"], share=0.5, weeks=3)
    assert should_flag(["0.8"], share=0.7, weeks=1)


@pytest.mark.parametrize("bad", [["1.2", "0.9"], ["high", "0.9"], [True, "0.9"]])
def test_a_rate_outside_zero_to_one_is_refused(bad: list[object]) -> None:
    with pytest.raises(ValueError):
        should_flag(bad)  # type: ignore[arg-type]


def test_weeks_must_be_at_least_one() -> None:
    with pytest.raises(ValueError):
        should_flag(["0.9"], weeks=0)


def test_inaction_superiority_is_beaten_over_positions() -> None:
    assert inaction_superiority(positions=3, beaten_by_inaction=2) == Decimal("0.6667")
    assert inaction_superiority(positions=0, beaten_by_inaction=0) is None
    with pytest.raises(ValueError):
        inaction_superiority(positions=2, beaten_by_inaction=3)


def test_the_composite_score_by_hand() -> None:
    # actions 1 - 0.25 = 0.75 (0.4); risk (tanh(0) + 1)/2 = 0.5 (0.4); net > 0 → 1 (0.2)
    assert composite_score(net=Decimal("10"), risk_adjusted=0.0, superiority=Decimal("0.25")) == Decimal("0.7000")
    # risk 1.0: (tanh(1) + 1) / 2 = 0.880797…
    expected = 0.4 * 0.75 + 0.4 * (math.tanh(1.0) + 1) / 2 + 0.2 * 0
    assert composite_score(net=Decimal("-1"), risk_adjusted=1.0, superiority=Decimal("0.25")) == Decimal(
        f"{expected:.4f}"
    )


def test_missing_parts_are_left_out_and_the_weights_rescaled() -> None:
    # only actions and net: (0.4 * 0.5 + 0.2 * 0.5) / 0.6 = 0.5
    assert composite_score(net=Decimal("0"), risk_adjusted=None, superiority=Decimal("0.5")) == Decimal("0.5000")
    assert composite_score(net=None, risk_adjusted=None, superiority=None) is None


def test_the_score_stays_within_zero_and_one() -> None:
    best = composite_score(net=Decimal("1e9"), risk_adjusted=1e9, superiority=Decimal("0"))
    worst = composite_score(net=Decimal("-1e9"), risk_adjusted=-1e9, superiority=Decimal("1"))
    assert best == Decimal("1.0000") and worst == Decimal("0.0000")


def test_labels() -> None:
    assert score_label(Decimal("0.6")) == "good"
    assert score_label(Decimal("0.5999")) == "mixed"
    assert score_label(Decimal("0.4")) == "mixed"
    assert score_label(Decimal("0.3999")) == "poor"
    assert score_label(None) == "no data"


def test_one_period_as_the_hard_part_holds_it() -> None:
    figures = effectiveness(net="-1234.505", risk_adjusted="-0.5", positions=4, beaten_by_inaction=3)

    assert figures.to_dict() == {
        "net": "-1234.51",
        "risk_adjusted": "-0.5000",
        "inaction_superiority": "0.7500",
        "score": f"{(0.4 * 0.25 + 0.4 * (math.tanh(-0.5) + 1) / 2) / 1.0:.4f}",
    }


def test_rolling_figures_pool_positions_sum_nets_and_average_risk() -> None:
    weeks = [
        WeekFigures(net=Decimal("100.00"), risk_adjusted=Decimal("0.2"), positions=1, beaten_by_inaction=0),
        WeekFigures(net=Decimal("-40.00"), risk_adjusted=None, positions=3, beaten_by_inaction=3),
        WeekFigures(net=Decimal("10.00"), risk_adjusted=Decimal("0.4"), positions=0, beaten_by_inaction=0),
    ]

    rolling = rolling_effectiveness(weeks)

    assert rolling.net == Decimal("70.00")
    assert rolling.risk_adjusted == Decimal("0.3")
    assert rolling.inaction_superiority == Decimal("0.7500")  # 3 of 4, not the mean of 0, 1 and none
    with pytest.raises(ValueError):
        rolling_effectiveness([])
