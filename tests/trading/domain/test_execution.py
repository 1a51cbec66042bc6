from __future__ import annotations

from decimal import Decimal

import pytest

from vocabulary.fills import entry_side, exit_side, fill_price, reference_price

TICK = Decimal("0.05")


def test_a_buy_pays_the_slippage_and_rounds_up_to_the_tick() -> None:
    # 1234.55 x 1.001 = 1235.78455 -> up to 1235.80.
    price = fill_price(side="BUY", reference=Decimal("1234.55"), slippage_bps=Decimal(10), tick=TICK)
    assert price == Decimal("1235.80")


def test_a_sell_gives_up_the_slippage_and_rounds_down_to_the_tick() -> None:
    # 1234.55 x 0.999 = 1233.31545 -> down to 1233.30.
    price = fill_price(side="SELL", reference=Decimal("1234.55"), slippage_bps=Decimal(10), tick=TICK)
    assert price == Decimal("1233.30")


def test_without_slippage_a_price_on_the_tick_fills_unchanged() -> None:
    for side in ("BUY", "SELL"):
        assert fill_price(side=side, reference=Decimal("500.05"), slippage_bps=Decimal(0), tick=TICK) == Decimal(
            "500.05"
        )


def test_without_slippage_an_off_tick_price_still_rounds_against_the_trader() -> None:
    reference = Decimal("500.01")
    assert fill_price(side="BUY", reference=reference, slippage_bps=Decimal(0), tick=TICK) == Decimal("500.05")
    assert fill_price(side="SELL", reference=reference, slippage_bps=Decimal(0), tick=TICK) == Decimal("500.00")


def test_fractional_basis_points_are_honoured() -> None:
    # 1000 x (1 + 2.5/10,000) = 1000.25 -> up to 1000.25 (already on the grid).
    assert fill_price(side="BUY", reference=Decimal(1000), slippage_bps=Decimal("2.5"), tick=TICK) == Decimal("1000.25")


@pytest.mark.parametrize(
    ("reference", "slippage_bps"),
    [(Decimal(0), Decimal(5)), (Decimal(-10), Decimal(5)), (Decimal(100), Decimal(-1))],
)
def test_it_rejects_a_nonpositive_reference_or_negative_slippage(reference: Decimal, slippage_bps: Decimal) -> None:
    with pytest.raises(ValueError):
        fill_price(side="BUY", reference=reference, slippage_bps=slippage_bps, tick=TICK)


def test_a_sell_slipped_to_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="no price"):
        fill_price(side="SELL", reference=Decimal("0.05"), slippage_bps=Decimal(10_000), tick=TICK)


def test_next_open_policy_uses_the_next_open() -> None:
    price = reference_price("next_open", last_close=Decimal("100.00"), next_open=Decimal("101.50"))
    assert price == Decimal("101.50")


def test_next_open_policy_waits_while_the_next_open_is_unknown() -> None:
    assert reference_price("next_open", last_close=Decimal("100.00"), next_open=None) is None


def test_last_price_policy_uses_the_last_close_even_when_the_next_open_is_known() -> None:
    assert reference_price("last_price", last_close=Decimal("100.00"), next_open=Decimal("101.50")) == Decimal("100.00")
    assert reference_price("last_price", last_close=Decimal("100.00"), next_open=None) == Decimal("100.00")


def test_an_unknown_fill_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="fill policy"):
        reference_price("vwap", last_close=Decimal(100), next_open=None)  # type: ignore[arg-type]


def test_a_long_buys_to_enter_and_sells_to_exit() -> None:
    assert (entry_side("LONG"), exit_side("LONG")) == ("BUY", "SELL")


def test_a_short_sells_to_enter_and_buys_to_exit() -> None:
    assert (entry_side("SHORT"), exit_side("SHORT")) == ("SELL", "BUY")


def test_an_unknown_direction_has_no_side() -> None:
    with pytest.raises(ValueError):
        entry_side("FLAT")  # type: ignore[arg-type]
