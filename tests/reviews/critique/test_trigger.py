"""The critique trigger, pure: the first runs are exempt, the firing share over many seeded runs is the
setting's (within a tolerance from the binomial standard deviation), the draw is reproducible, and
the adaptive probability moves with the trajectory's signs between its floor and ceiling."""

from __future__ import annotations

import math

import pytest

from reviews.domain.critique import (
    AdaptiveSettings,
    TrajectorySignals,
    adaptive_probability,
    decide,
    draw_source,
    should_run_critique,
)

RUNS = 20_000
SIGMAS = 4  # a share this far from the setting happens by chance about once in 16,000 suites


def _share(probability: float, *, seed: int = 0, strategies: int = 4) -> float:
    per_strategy = RUNS // strategies
    fired = sum(
        should_run_critique(run_count, draw_source(seed, strategy_id, run_count), probability)
        for strategy_id in range(1, strategies + 1)
        for run_count in range(11, 11 + per_strategy)
    )
    return fired / (per_strategy * strategies)


def test_the_first_ten_runs_are_exempt_even_at_certainty():
    rng = draw_source(0, 1, 1)

    assert not any(should_run_critique(run_count, rng, probability=1.0) for run_count in range(1, 11))
    assert should_run_critique(11, rng, probability=1.0)


def test_an_exempt_run_draws_nothing_so_later_draws_do_not_shift():
    rng, untouched = draw_source(0, 1, 1), draw_source(0, 1, 1)

    should_run_critique(5, rng)

    assert rng.random() == untouched.random()


@pytest.mark.parametrize("probability", [0.10, 0.30])
def test_over_many_seeded_runs_the_firing_share_is_the_setting(probability):
    tolerance = SIGMAS * math.sqrt(probability * (1 - probability) / RUNS)  # 0.0085 at 10%, 0.013 at 30%

    share = _share(probability)

    assert abs(share - probability) <= tolerance, (share, probability, tolerance)


def test_the_same_seed_strategy_and_run_draw_the_same_and_another_seed_differs():
    first = [decide(n, strategy_id=7, config=AdaptiveSettings()).draw for n in range(11, 60)]
    again = [decide(n, strategy_id=7, config=AdaptiveSettings()).draw for n in range(11, 60)]
    reseeded = [decide(n, strategy_id=7, config=AdaptiveSettings(seed=1)).draw for n in range(11, 60)]

    assert first == again
    assert first != reseeded


def test_decide_takes_the_same_draw_as_should_run_critique():
    config = AdaptiveSettings(probability=0.35)
    for run_count in range(1, 80):
        decision = decide(run_count, strategy_id=3, config=config)
        expected = should_run_critique(run_count, draw_source(0, 3, run_count), 0.35)
        assert decision.fired == expected
        assert decision.exempt == (run_count <= 10)


def test_a_decision_says_why_in_words():
    exempt = decide(4, strategy_id=1, config=AdaptiveSettings())
    drawn = decide(40, strategy_id=1, config=AdaptiveSettings(probability=1.0))

    assert exempt.exempt and exempt.draw is None and "run 4 of the first 10: exempt" in exempt.summary
    assert (
        drawn.fired
        and drawn.summary.startswith("run 40: draw 0.")
        and "fixed probability 100.0%: fired" in drawn.summary
    )
    assert drawn.as_json()["mode"] == "fixed" and drawn.as_json()["draw"] == round(drawn.draw, 6)


CALM = TrajectorySignals(volatility_ratio=1.0)


def test_the_adaptive_probability_rises_with_each_sign_of_trouble():
    base, _ = adaptive_probability(0.10, CALM, floor=0.05, ceiling=0.90)
    volatile, why_volatile = adaptive_probability(
        0.10, TrajectorySignals(volatility_ratio=2.0), floor=0.05, ceiling=0.90
    )
    unresolved, why_unresolved = adaptive_probability(0.10, TrajectorySignals(unresolved=2), floor=0.05, ceiling=0.90)
    deeper, why_deeper = adaptive_probability(
        0.10, TrajectorySignals(drawdown_now=0.06, drawdown_before=0.02), floor=0.05, ceiling=0.90
    )
    everything, _ = adaptive_probability(
        0.10,
        TrajectorySignals(volatility_ratio=2.0, unresolved=1, drawdown_now=0.06, drawdown_before=0.02),
        floor=0.05,
        ceiling=0.90,
    )

    assert base == pytest.approx(0.10)
    assert volatile == pytest.approx(0.15) and "volatile: recent volatility 2.00×" in why_volatile[-1]
    assert unresolved == pytest.approx(0.20) and "2 required action(s)" in why_unresolved[-1]
    assert deeper == pytest.approx(0.15) and "drawdown deepening: 6.0% of capital, from 2.0%" in why_deeper[-1]
    assert everything == pytest.approx(0.10 * 1.5 * 2 * 1.5)


def test_a_recovering_drawdown_does_not_raise_it():
    probability, reasons = adaptive_probability(
        0.10, TrajectorySignals(drawdown_now=0.01, drawdown_before=0.04), floor=0.05, ceiling=0.90
    )

    assert probability == pytest.approx(0.10) and reasons == ["base 10.0%"]


def test_clean_reviews_lower_it_down_to_the_floor():
    one, _ = adaptive_probability(0.20, TrajectorySignals(clean_streak=1), floor=0.05, ceiling=0.90)
    many, why = adaptive_probability(0.20, TrajectorySignals(clean_streak=9), floor=0.05, ceiling=0.90)
    floored, why_floored = adaptive_probability(0.06, TrajectorySignals(clean_streak=3), floor=0.05, ceiling=0.90)

    assert one == pytest.approx(0.15)
    assert many == pytest.approx(0.20 * 0.75**3)  # the streak counts up to three
    assert "9 clean review(s) in a row" in why[-1]
    assert floored == pytest.approx(0.05) and why_floored[-1] == "clamped to the floor 5.0%"


def test_it_never_passes_the_ceiling():
    worst = TrajectorySignals(volatility_ratio=3.0, unresolved=5, drawdown_now=0.2, drawdown_before=0.0)

    probability, reasons = adaptive_probability(0.30, worst, floor=0.05, ceiling=0.50)
    inverted, _ = adaptive_probability(0.30, worst, floor=0.40, ceiling=0.20)

    assert probability == pytest.approx(0.50) and reasons[-1] == "clamped to the ceiling 50.0%"
    assert inverted == pytest.approx(0.40)  # a ceiling under the floor: the floor holds


def test_the_adaptive_decision_uses_the_moved_probability_and_keeps_its_reasons():
    config = AdaptiveSettings(probability=0.10, adaptive=True, floor=0.05, ceiling=0.50)
    troubled = TrajectorySignals(volatility_ratio=2.0, unresolved=3)

    decision = decide(25, strategy_id=2, config=config, signals=troubled)

    assert decision.probability == pytest.approx(0.30)
    assert decision.as_json()["mode"] == "adaptive"
    assert any("volatile" in reason for reason in decision.reasons)
    assert "adaptive probability 30.0%" in decision.summary


def test_settings_read_from_the_desks_mapping():
    config = AdaptiveSettings.from_mapping(
        {"PROBABILITY": 0.2, "MIN_RUNS": 5, "ADAPTIVE": True, "PROBABILITY_FLOOR": 0.1, "PROBABILITY_CEILING": 0.6}
    )

    assert (config.probability, config.min_runs, config.adaptive, config.floor, config.ceiling) == (
        0.2,
        5,
        True,
        0.1,
        0.6,
    )
