"""Resolving calls: the realised move over a thesis's horizon, which level came first by the
broker's exit rule, the forecast band's coverage, and the tallies."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.accuracy import Bar, Tally, call_right, forecast_covers, rate, resolve_thesis, sign, tally
from vocabulary.exits import check_exit

D = Decimal
DAY = dt.date(2026, 11, 2)


def bar(index: int, open_: str, high: str, low: str, close: str) -> Bar:
    return Bar(DAY + dt.timedelta(days=index), D(open_), D(high), D(low), D(close))


def drifting(*closes: str) -> list[Bar]:
    """Bars opening at the previous close, with a range of one rupee around open and close."""
    bars, previous = [], D("100")
    for index, close in enumerate(closes, start=1):
        value = D(close)
        bars.append(
            Bar(DAY + dt.timedelta(days=index), previous, max(previous, value) + 1, min(previous, value) - 1, value)
        )
        previous = value
    return bars


def resolve(bars: list[Bar], *, direction: str = "LONG", horizon: int = 3, stop: str = "95", target: str = "110"):
    return resolve_thesis(
        direction=direction,  # type: ignore[arg-type]
        stop=D(stop),
        target=D(target),
        horizon_sessions=horizon,
        decision_close=D("100"),
        bars=bars,
    )


def test_a_thesis_resolves_only_once_its_horizon_has_passed() -> None:
    assert resolve(drifting("101", "102")) is None
    resolution = resolve(drifting("101", "102", "103", "90"))
    assert resolution is not None
    assert resolution.move == 1 and resolution.levels == "neither"
    assert resolution.resolved_on == DAY + dt.timedelta(days=3)  # the third session, not the fourth


def test_the_move_is_the_sign_of_the_close_at_the_horizon_against_the_decision_close() -> None:
    assert resolve(drifting("99", "98", "97")).move == -1  # type: ignore[union-attr]
    assert resolve(drifting("103", "101", "100")).move == 0  # type: ignore[union-attr]


def test_the_levels_follow_the_brokers_exit_rule() -> None:
    assert resolve(drifting("104", "109.5", "105")).levels == "target"  # type: ignore[union-attr]  # high 110.5
    assert resolve(drifting("99", "96", "103")).levels == "stop"  # type: ignore[union-attr]  # low 95
    # Both touched on one bar: the stop comes first, as the broker rules.
    both = [bar(1, "100", "111", "94", "100")]
    assert resolve(both, horizon=1).levels == "stop"  # type: ignore[union-attr]
    # A SHORT mirrors it: its stop sits above.
    assert resolve(drifting("104", "106", "101"), direction="SHORT", stop="105", target="90").levels == "stop"  # type: ignore[union-attr]


def test_levels_out_of_order_are_judged_nowhere() -> None:
    assert resolve(drifting("101", "102", "103"), stop="110", target="95") is None


@given(
    steps=st.lists(st.integers(min_value=-8, max_value=8), min_size=1, max_size=12),
    horizon=st.integers(min_value=1, max_value=12),
)
def test_the_levels_are_the_first_exit_check_exit_gives(steps: list[int], horizon: int) -> None:
    closes, price = [], D("100")
    for step in steps:
        price += D(step)
        closes.append(str(price))
    bars = drifting(*closes)
    resolution = resolve(bars, horizon=horizon)
    if len(bars) < horizon:
        assert resolution is None
        return
    expected = "neither"
    for held, one in enumerate(bars[:horizon], start=1):
        signal = check_exit(
            direction="LONG",
            stop=D("95"),
            target=D("110"),
            bar_open=one.open,
            bar_high=one.high,
            bar_low=one.low,
            bar_close=one.close,
            sessions_held=held,
            horizon_sessions=horizon,
        )
        if signal is not None:
            expected = signal.reason if signal.reason in ("stop", "target") else "neither"
            break
    assert resolution is not None and resolution.levels == expected


def test_a_call_resolves_only_with_a_side_and_a_move() -> None:
    assert call_right(1, 1) is True
    assert call_right(-1, 1) is False
    assert call_right(0, 1) is None
    assert call_right(1, 0) is None
    assert sign(D("-0.01")) == -1 and sign(0) == 0


def test_a_tally_counts_resolved_calls_and_rates_them_to_four_places() -> None:
    counted = tally([True, False, None, True])
    assert counted == Tally(calls=3, right=2)
    assert counted.to_dict() == {"calls": 3, "right": 2, "rate": "0.6667"}
    assert tally([]).to_dict() == {"calls": 0, "right": 0, "rate": None}
    assert rate(1, 8) == D("0.1250") and rate(0, 0) is None


@pytest.mark.parametrize(("close", "inside"), [("95", True), ("105", True), ("94.99", False), ("105.01", False)])
def test_the_forecast_band_covers_its_ends(close: str, inside: bool) -> None:
    assert forecast_covers(low_price=D("95"), high_price=D("105"), close=D(close)) is inside
