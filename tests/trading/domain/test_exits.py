from __future__ import annotations

from decimal import Decimal

import pytest

from vocabulary.exits import ExitSignal, check_exit, mark, realised_pnl
from vocabulary.trade import Direction

# A LONG from ₹100 with its stop at ₹96 and target at ₹108; a SHORT from ₹100 mirrored.
LEVELS: dict[Direction, tuple[Decimal, Decimal]] = {
    "LONG": (Decimal(96), Decimal(108)),
    "SHORT": (Decimal(104), Decimal(92)),
}


def exit_on(
    direction: Direction,
    bar: tuple[str, str, str, str],
    *,
    sessions_held: int = 3,
    horizon_sessions: int = 10,
) -> ExitSignal | None:
    stop, target = LEVELS[direction]
    bar_open, bar_high, bar_low, bar_close = (Decimal(value) for value in bar)
    return check_exit(
        direction=direction,
        stop=stop,
        target=target,
        bar_open=bar_open,
        bar_high=bar_high,
        bar_low=bar_low,
        bar_close=bar_close,
        sessions_held=sessions_held,
        horizon_sessions=horizon_sessions,
    )


# Bars are (open, high, low, close).


def test_a_long_is_stopped_at_its_stop_when_the_low_reaches_it() -> None:
    assert exit_on("LONG", ("99", "100", "95", "97")) == ExitSignal("stop", Decimal(96))


def test_a_long_takes_profit_at_its_target_when_the_high_reaches_it() -> None:
    assert exit_on("LONG", ("101", "109", "100", "107")) == ExitSignal("target", Decimal(108))


def test_a_long_that_gaps_through_its_stop_fills_at_the_open() -> None:
    assert exit_on("LONG", ("94", "95", "93", "94.5")) == ExitSignal("stop", Decimal(94))


def test_a_long_that_opens_exactly_at_its_stop_is_stopped_at_the_open() -> None:
    assert exit_on("LONG", ("96", "99", "95", "98")) == ExitSignal("stop", Decimal(96))


def test_a_long_that_gaps_through_its_target_fills_at_the_better_open() -> None:
    assert exit_on("LONG", ("110", "112", "109", "111")) == ExitSignal("target", Decimal(110))


def test_a_long_with_stop_and_target_in_one_range_assumes_the_stop_came_first() -> None:
    assert exit_on("LONG", ("100", "109", "95", "107")) == ExitSignal("stop", Decimal(96))


def test_a_long_past_its_horizon_closes_at_the_close() -> None:
    signal = exit_on("LONG", ("100", "102", "98", "101"), sessions_held=10, horizon_sessions=10)
    assert signal == ExitSignal("horizon", Decimal(101))


def test_a_long_within_its_range_and_horizon_holds() -> None:
    assert exit_on("LONG", ("100", "102", "98", "101"), sessions_held=9, horizon_sessions=10) is None


def test_a_short_is_stopped_at_its_stop_when_the_high_reaches_it() -> None:
    assert exit_on("SHORT", ("101", "105", "100", "103")) == ExitSignal("stop", Decimal(104))


def test_a_short_takes_profit_at_its_target_when_the_low_reaches_it() -> None:
    assert exit_on("SHORT", ("99", "100", "91", "93")) == ExitSignal("target", Decimal(92))


def test_a_short_that_gaps_through_its_stop_fills_at_the_open() -> None:
    assert exit_on("SHORT", ("106", "107", "105", "106")) == ExitSignal("stop", Decimal(106))


def test_a_short_that_gaps_through_its_target_fills_at_the_better_open() -> None:
    assert exit_on("SHORT", ("90", "91", "89", "90")) == ExitSignal("target", Decimal(90))


def test_a_short_with_stop_and_target_in_one_range_assumes_the_stop_came_first() -> None:
    assert exit_on("SHORT", ("100", "105", "91", "93")) == ExitSignal("stop", Decimal(104))


def test_a_short_past_its_horizon_closes_at_the_close() -> None:
    signal = exit_on("SHORT", ("100", "102", "98", "99"), sessions_held=12, horizon_sessions=10)
    assert signal == ExitSignal("horizon", Decimal(99))


def test_a_short_within_its_range_and_horizon_holds() -> None:
    assert exit_on("SHORT", ("100", "102", "98", "99")) is None


@pytest.mark.parametrize("direction", ["LONG", "SHORT"])
def test_a_stop_on_the_horizon_day_is_a_stop_not_a_horizon_exit(direction: Direction) -> None:
    signal = exit_on(direction, ("100", "105", "95", "100"), sessions_held=10, horizon_sessions=10)
    assert signal is not None
    assert signal.reason == "stop"


def test_a_bar_whose_open_lies_outside_its_range_is_refused() -> None:
    with pytest.raises(ValueError, match="inconsistent bar"):
        exit_on("LONG", ("103", "102", "98", "101"))


def test_levels_on_the_wrong_sides_are_refused() -> None:
    with pytest.raises(ValueError, match="out of order"):
        check_exit(
            direction="LONG",
            stop=Decimal(108),
            target=Decimal(96),
            bar_open=Decimal(100),
            bar_high=Decimal(101),
            bar_low=Decimal(99),
            bar_close=Decimal(100),
            sessions_held=1,
            horizon_sessions=10,
        )


def test_a_long_marked_above_entry_shows_a_profit() -> None:
    # 10 x (105.05 - 100.00) = 50.50.
    assert mark(direction="LONG", quantity=10, entry_price=Decimal("100.00"), mark_price=Decimal("105.05")) == Decimal(
        "50.50"
    )


def test_a_short_marked_above_entry_shows_a_loss() -> None:
    assert mark(direction="SHORT", quantity=10, entry_price=Decimal("100.00"), mark_price=Decimal("105.05")) == Decimal(
        "-50.50"
    )


def test_a_long_realised_pnl_is_the_move_less_both_legs_costs() -> None:
    # 100 x (1050 - 1000) = 5,000.00, less the NSE delivery costs of each leg:
    #   buy  ₹1,00,000: 100.00 STT + 2.97 + 0.10 + 15.00 stamp + 0.55 GST = 118.62
    #   sell ₹1,05,000: 105.00 STT + 3.12 (3.1185) + 0.11 (0.105) + 0.58 GST (18% x 3.23) = 108.81
    # 5,000.00 - 118.62 - 108.81 = 4,772.57.
    pnl = realised_pnl(
        direction="LONG",
        quantity=100,
        entry_price=Decimal("1000.00"),
        exit_price=Decimal("1050.00"),
        entry_costs=Decimal("118.62"),
        exit_costs=Decimal("108.81"),
    )
    assert pnl == Decimal("4772.57")


def test_a_short_realised_pnl_is_the_move_less_both_legs_costs() -> None:
    # 100 x (1000 - 950) = 5,000.00, less the NSE delivery costs of each leg:
    #   sell ₹1,00,000: 100.00 STT + 2.97 + 0.10 + 0.55 GST = 103.62
    #   buy  ₹95,000: 95.00 STT + 2.82 (2.8215) + 0.10 (0.095) + 14.25 stamp + 0.53 GST (18% x 2.92) = 112.70
    # 5,000.00 - 103.62 - 112.70 = 4,783.68.
    pnl = realised_pnl(
        direction="SHORT",
        quantity=100,
        entry_price=Decimal("1000.00"),
        exit_price=Decimal("950.00"),
        entry_costs=Decimal("103.62"),
        exit_costs=Decimal("112.70"),
    )
    assert pnl == Decimal("4783.68")


def test_a_flat_round_trip_loses_exactly_its_costs() -> None:
    pnl = realised_pnl(
        direction="LONG",
        quantity=100,
        entry_price=Decimal("1000.00"),
        exit_price=Decimal("1000.00"),
        entry_costs=Decimal("118.62"),
        exit_costs=Decimal("103.62"),
    )
    assert pnl == Decimal("-222.24")


def test_negative_costs_or_quantity_are_refused() -> None:
    with pytest.raises(ValueError, match="costs"):
        realised_pnl(
            direction="LONG",
            quantity=1,
            entry_price=Decimal(100),
            exit_price=Decimal(101),
            entry_costs=Decimal(-1),
            exit_costs=Decimal(0),
        )
    with pytest.raises(ValueError, match="quantity"):
        mark(direction="LONG", quantity=0, entry_price=Decimal(100), mark_price=Decimal(101))
