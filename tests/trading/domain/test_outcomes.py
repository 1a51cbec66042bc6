from __future__ import annotations

from decimal import Decimal

import pytest

from reviews.domain.outcomes import SIGNAL_STATES, classify_outcome, signal_evolution, thesis_vs_outcome

# Entry notional ₹1,00,000 with the default 0.1% band: |P&L| up to ₹100.00 is a scratch.
NOTIONAL = Decimal("100000")


@pytest.mark.parametrize(
    ("pnl", "expected"),
    [
        ("100.00", "scratch"),
        ("-100.00", "scratch"),
        ("0", "scratch"),
        ("100.01", "win"),
        ("-100.01", "loss"),
        ("4772.57", "win"),
        ("-4000", "loss"),
    ],
)
def test_the_outcome_is_a_scratch_up_to_and_including_the_band_edge(pnl: str, expected: str) -> None:
    assert classify_outcome(Decimal(pnl), notional=NOTIONAL) == expected


def test_a_wider_band_turns_a_small_win_into_a_scratch() -> None:
    # 0.5% of ₹1,00,000 = ₹500.
    assert classify_outcome(Decimal("500.00"), notional=NOTIONAL, scratch_band_pct=Decimal("0.5")) == "scratch"
    assert classify_outcome(Decimal("500.01"), notional=NOTIONAL, scratch_band_pct=Decimal("0.5")) == "win"


def test_a_zero_band_leaves_only_a_flat_trade_as_a_scratch() -> None:
    assert classify_outcome(Decimal("0"), notional=NOTIONAL, scratch_band_pct=Decimal(0)) == "scratch"
    assert classify_outcome(Decimal("0.01"), notional=NOTIONAL, scratch_band_pct=Decimal(0)) == "win"


def test_it_refuses_a_nonpositive_notional_or_a_negative_band() -> None:
    with pytest.raises(ValueError, match="notional"):
        classify_outcome(Decimal(1), notional=Decimal(0))
    with pytest.raises(ValueError, match="scratch_band_pct"):
        classify_outcome(Decimal(1), notional=NOTIONAL, scratch_band_pct=Decimal("-0.1"))


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [("win", "Realized"), ("loss", "Falsified"), ("scratch", "Weakened")],
)
def test_signal_evolution_follows_the_outcome(outcome: str, expected: str) -> None:
    assert signal_evolution(outcome) == expected  # type: ignore[arg-type]


def test_signal_evolution_refuses_an_outcome_that_is_not_a_fact() -> None:
    with pytest.raises(ValueError, match="outcome"):
        signal_evolution("great trade")  # type: ignore[arg-type]


def test_the_full_set_of_signal_states_is_the_five_named_by_the_spec() -> None:
    assert set(SIGNAL_STATES) == {"Strengthened", "Weakened", "Falsified", "Realized", "Unknown"}


def test_a_long_compares_its_predicted_moves_with_the_realised_one() -> None:
    # Entry 1000, stop 960 (-4%), target 1080 (+8%), exit 1030 (+3%): 30 / 40 risk = 0.75R.
    result = thesis_vs_outcome(
        direction="LONG",
        entry=Decimal(1000),
        stop=Decimal(960),
        target=Decimal(1080),
        exit_price=Decimal(1030),
    )
    assert result == {
        "direction": "LONG",
        "predicted_target_pct": "8.00",
        "predicted_stop_pct": "-4.00",
        "realised_pct": "3.00",
        "realised_r": "0.75",
    }


def test_a_stopped_short_shows_a_rise_in_price_and_minus_one_r() -> None:
    # Entry 1000, stop 1040 (+4%), target 920 (-8%), exit at the stop: +4% in price, -1R.
    result = thesis_vs_outcome(
        direction="SHORT",
        entry=Decimal(1000),
        stop=Decimal(1040),
        target=Decimal(920),
        exit_price=Decimal(1040),
    )
    assert result == {
        "direction": "SHORT",
        "predicted_target_pct": "-8.00",
        "predicted_stop_pct": "4.00",
        "realised_pct": "4.00",
        "realised_r": "-1.00",
    }


def test_percentages_round_to_hundredths() -> None:
    # (1300 - 1234.55) / 1234.55 x 100 = 5.3015... -> 5.30;
    # (1200 - 1234.55) / 1234.55 x 100 = -2.7986... -> -2.80;
    # (1250.10 - 1234.55) / 1234.55 x 100 = 1.2595... -> 1.26; 15.55 / 34.55 = 0.4500... -> 0.45.
    result = thesis_vs_outcome(
        direction="LONG",
        entry=Decimal("1234.55"),
        stop=Decimal("1200.00"),
        target=Decimal("1300.00"),
        exit_price=Decimal("1250.10"),
    )
    assert (
        result["predicted_target_pct"],
        result["predicted_stop_pct"],
        result["realised_pct"],
        result["realised_r"],
    ) == ("5.30", "-2.80", "1.26", "0.45")


def test_levels_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="out of order"):
        thesis_vs_outcome(
            direction="SHORT", entry=Decimal(100), stop=Decimal(90), target=Decimal(110), exit_price=Decimal(100)
        )
