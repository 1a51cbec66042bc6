"""The backtester: next-bar execution, no look-ahead, the paper broker's arithmetic to the paisa, and
the vectorised grid path agreeing with the exact one.

The broker comparison runs the desk's real broker (``positions_mark``, the daily pass: the fill at
the next open with slippage and NSE costs, the exit on a gap through the stop at the open) on bars
written by the factories, then backtests the same bars with a target that leaves at the same open.
Everything else is pure: no database.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from research.backtest import (
    BacktestConfig,
    affordable_quantity,
    backtest,
    grid_exposure,
    grid_returns,
    grid_trade_counts,
    held_positions,
)
from research.signals import SIGNALS, Bars
from tests.research.test_signals import perturbed_after, random_bars
from vocabulary.costs import CostModel, order_costs
from vocabulary.fills import fill_price

FREE = CostModel(
    stt_buy_pct=Decimal(0),
    stt_sell_pct=Decimal(0),
    exchange_txn_pct=Decimal(0),
    sebi_fee_pct=Decimal(0),
    stamp_duty_buy_pct=Decimal(0),
    gst_pct=Decimal(0),
)


def on_tick(bars: Bars) -> Bars:
    """The bars with every price on the 0.05 grid, as stored prices are."""
    prices = {name: np.round(getattr(bars, name) / 0.05) * 0.05 for name in ("open", "high", "low", "close")}
    prices["high"] = np.maximum.reduce([prices["open"], prices["high"], prices["close"]])
    prices["low"] = np.minimum.reduce([prices["open"], prices["low"], prices["close"]])
    return Bars(bars.symbol, bars.dates, **prices, volume=bars.volume, tick=Decimal("0.05"))


def small_bars() -> Bars:
    return Bars(
        "HAND",
        np.datetime64("2025-01-06") + np.arange(6),
        open=[100.0, 101.0, 102.0, 104.0, 103.0, 105.0],
        high=[101.0, 103.0, 104.5, 105.0, 104.0, 106.0],
        low=[99.0, 100.5, 101.5, 103.0, 102.0, 104.5],
        close=[100.5, 102.0, 104.0, 103.5, 103.0, 105.5],
        volume=[1000.0] * 6,
    )


def config(**overrides) -> BacktestConfig:
    values = {"capital": Decimal(100_000), "costs": CostModel(), "slippage_bps": Decimal(5), "allow_short": False}
    return BacktestConfig(**{**values, **overrides})


def test_a_target_is_acted_on_at_the_next_bars_open():
    bars = small_bars()
    # decided long after bar 1's close, flat again after bar 3's close
    result = backtest(bars, np.array([0, 1, 1, 0, 0, 0]), config())
    (trade,) = result.trades
    assert (trade.entry_index, trade.exit_index) == (2, 4)
    assert trade.entry_reference == Decimal("102.0")  # bar 2's open, not bar 1's close
    assert trade.exit_reference == Decimal("103.0")  # bar 4's open
    assert trade.entry_price == fill_price(
        side="BUY", reference=Decimal("102"), slippage_bps=Decimal(5), tick=Decimal("0.05")
    )
    assert list(result.positions) == [0, 0, 1, 1, 0, 0]
    assert result.returns[:2].tolist() == [0.0, 0.0]  # nothing held before the entry


def test_without_costs_or_slippage_returns_are_the_price_moves():
    bars = small_bars()
    result = backtest(
        bars, np.array([1, 1, 1, 1, 1, 1]), config(costs=FREE, slippage_bps=Decimal(0), capital=Decimal(101_000))
    )
    # 1,000 shares at 101 use the capital exactly: equity moves with the price from bar 1's open
    (trade,) = result.trades
    assert trade.quantity == 1000 and not trade.closed
    expected = [0.0, 102.0 / 101.0 - 1.0] + [bars.close[t] / bars.close[t - 1] - 1.0 for t in range(2, 6)]
    np.testing.assert_allclose(result.returns, expected, rtol=0, atol=1e-12)
    assert result.equity[-1] == pytest.approx(105.5 * 1000)


def test_shorts_are_flat_unless_allowed():
    bars = small_bars()
    targets = np.array([-1, -1, -1, -1, 0, 0])
    assert not backtest(bars, targets, config(allow_short=False)).trades
    (trade,) = backtest(bars, targets, config(allow_short=True)).trades
    assert trade.direction == "SHORT" and trade.entry_index == 1 and trade.exit_index == 5


def test_a_reversal_closes_then_opens_at_the_same_open():
    result = backtest(small_bars(), np.array([1, 1, -1, -1, 1, 1]), config(allow_short=True))
    assert [(t.direction, t.entry_index, t.exit_index, t.closed) for t in result.trades] == [
        ("LONG", 1, 3, True),
        ("SHORT", 3, 5, True),
        ("LONG", 5, 5, False),
    ]


def test_no_look_ahead_in_the_backtest():
    bars = on_tick(random_bars(n=300, seed=11))
    targets = SIGNALS["donchian_breakout"]().positions(bars)
    result = backtest(bars, targets, config(allow_short=True))
    for cut in (80, 200):
        changed_bars = on_tick(perturbed_after(bars, cut, seed=cut))
        changed_targets = targets.copy()
        changed_targets[cut + 1 :] = -changed_targets[cut + 1 :]
        changed = backtest(changed_bars, changed_targets, config(allow_short=True))
        np.testing.assert_array_equal(changed.returns[: cut + 1], result.returns[: cut + 1])
        closed_by_cut = [trade for trade in result.trades if trade.closed and trade.exit_index <= cut]
        assert [trade for trade in changed.trades if trade.closed and trade.exit_index <= cut] == closed_by_cut


def test_sizing_buys_the_whole_lots_the_cash_pays_for():
    model = CostModel()
    quantity = affordable_quantity("BUY", Decimal("100.05"), Decimal(100_000), 1, model)
    needed = Decimal("100.05") * quantity + order_costs("BUY", quantity, Decimal("100.05"), model).total
    one_more = Decimal("100.05") * (quantity + 1) + order_costs("BUY", quantity + 1, Decimal("100.05"), model).total
    assert needed <= Decimal(100_000) < one_more
    assert affordable_quantity("BUY", Decimal("100.05"), Decimal(100_000), 25, model) % 25 == 0
    # a trade the cash cannot pay for is not taken
    assert not backtest(small_bars(), np.ones(6, dtype=np.int8), config(capital=Decimal(50))).trades


def test_no_bars_is_no_trade():
    empty = small_bars().window(0, 0)
    result = backtest(empty, np.zeros(0, dtype=np.int8), config())
    assert result.returns.size == 0 and not result.trades and result.final_equity == 100_000.0
    assert grid_returns(empty, np.zeros((3, 0), dtype=np.int8), config()).shape == (3, 0)


def test_positions_are_checked():
    with pytest.raises(ValueError, match="-1, 0 or 1"):
        backtest(small_bars(), np.array([0, 2, 0, 0, 0, 0]), config())
    with pytest.raises(ValueError, match="cover 3 bars"):
        backtest(small_bars(), np.array([0, 1, 0]), config())
    with pytest.raises(ValueError, match="capital"):
        BacktestConfig(capital=Decimal(0))


@pytest.mark.parametrize("allow_short", [False, True])
@pytest.mark.parametrize("key", sorted(SIGNALS))
def test_the_vectorised_grid_equals_the_exact_path(key, allow_short):
    bars = on_tick(random_bars(n=500, seed=21))
    strategy = SIGNALS[key]
    names = list(strategy.PARAM_RANGES)
    grid = [strategy().params]
    for value in strategy.PARAM_RANGES[names[-1]].values()[::3]:
        try:
            grid.append(strategy(**{**grid[0], names[-1]: value}).params)
        except ValueError:
            continue
    matrix = strategy.positions_grid(bars, grid)
    settings = config(capital=Decimal(1_000_000), allow_short=allow_short)
    vectorised = grid_returns(bars, matrix, settings)
    counts = grid_trade_counts(matrix, allow_short=allow_short)
    exposure = grid_exposure(matrix, allow_short=allow_short)
    for row, targets in enumerate(matrix):
        exact = backtest(bars, targets, settings)
        # whole shares leave up to a share's price idle in cash (a bar's return is then a hair smaller)
        # and costs are rounded to the paisa
        np.testing.assert_allclose(vectorised[row], exact.returns, rtol=1e-3, atol=1e-5)
        assert np.prod(1 + vectorised[row]) == pytest.approx(np.prod(1 + exact.returns), rel=1e-3)
        assert counts[row] == len(exact.trades)
        assert exposure[row] == pytest.approx(np.mean(exact.positions != 0))


def test_held_positions_shift_by_one_bar():
    targets = np.array([[1, 0, -1, -1], [0, 1, 1, 0]], dtype=np.int8)
    assert held_positions(targets, 4, allow_short=True).tolist() == [[0, 1, 0, -1], [0, 0, 1, 1]]
    assert held_positions(targets, 4, allow_short=False).tolist() == [[0, 1, 0, 0], [0, 0, 1, 1]]


def test_config_from_settings_uses_the_brokers_costs_and_slippage(settings):
    settings.BROKER = {**settings.BROKER, "SLIPPAGE_BPS": "7", "COSTS": {"brokerage_flat": "20"}}
    settings.RESEARCH = {**settings.RESEARCH, "CAPITAL": "250000"}
    made = BacktestConfig.from_settings(allow_short=True)
    assert made.slippage_bps == Decimal(7)
    assert made.costs.brokerage_flat == Decimal(20)
    assert made.capital == Decimal(250_000)
    assert made.allow_short


# --- one trade against the paper broker ----------------------------------------------------------


def _broker_trade(path, *, direction: str, quantity: int):
    """The path through the real broker's daily pass: a thesis decided on the first session, its
    order filled at the next open, then each session's pass until the gap takes out the stop."""
    from tests.factories import AccountFactory, InstrumentFactory, OrderFactory, ThesisFactory, bars_for
    from trading.book.broker import positions_mark
    from trading.models import Position

    account = AccountFactory(roomy=True)
    bars = bars_for(InstrumentFactory(), path)
    thesis = ThesisFactory(
        account=account,
        instrument=bars[0].instrument,
        run__as_of=bars[0].date,
        entry=bars[0].close,
        direction=direction,
        quantity=quantity,
        horizon_sessions=len(bars),
        approved=True,
    )
    OrderFactory(thesis=thesis)
    cash_before = account.cash
    for bar in bars[1:]:
        positions_mark(as_of=bar.date, account=account)
    account.refresh_from_db()
    return Position.objects.get(thesis=thesis), bars, account.cash - cash_before


@pytest.mark.django_db
@pytest.mark.parametrize(("direction", "gap_pct", "target"), [("LONG", -12, 1), ("SHORT", 12, -1)])
def test_one_trade_backtested_equals_the_paper_broker_to_the_paisa(direction, gap_pct, target):
    from tests.factories import gapped

    # Four quiet sessions at 100, then one that opens 12% away, through the 5% stop.
    path = gapped(100, before=4, gap_pct=gap_pct, after=3)
    settings = BacktestConfig.from_settings(allow_short=True, capital=Decimal(100_000))
    # The backtest's own sizing decides the quantity (the whole shares the capital pays for at the
    # entry fill, costs included); the broker's thesis trades that many.
    entry = fill_price(
        side="BUY" if direction == "LONG" else "SELL",
        reference=Decimal(100),
        slippage_bps=settings.slippage_bps,
        tick=Decimal("0.05"),
    )
    side = "BUY" if direction == "LONG" else "SELL"
    quantity = affordable_quantity(side, entry, settings.capital, 1, settings.costs)

    position, daily_bars, cash_change = _broker_trade(path, direction=direction, quantity=quantity)
    assert position.exit_reason == "stop" and position.closed_on == daily_bars[4].date

    bars = Bars.from_rows(
        position.instrument.symbol,
        daily_bars,
        tick=position.instrument.tick_size,
        lot_size=position.instrument.lot_size,
    )
    # Decided on the first session's close, as the thesis was; flat decided on session 3's close,
    # so the exit is session 4's open, where the broker's stop filled on the gap.
    targets = np.array([target, target, target, 0, 0, 0, 0], dtype=np.int8)
    result = backtest(bars, targets, settings)
    (trade,) = result.trades

    assert trade.direction == position.direction
    assert trade.quantity == position.quantity
    assert trade.entry_date == position.opened_on
    assert trade.entry_price == position.entry_price
    assert trade.entry_costs == position.entry_costs
    assert trade.exit_date == position.closed_on
    assert trade.exit_reference == position.exit_reference
    assert trade.exit_price == position.exit_price
    assert trade.exit_costs == position.exit_costs
    assert trade.pnl == position.realised_pnl
    assert cash_change == position.realised_pnl
    # equity after the round trip is the capital plus exactly that result
    assert Decimal(repr(float(result.equity[-1]))).quantize(Decimal("0.01")) == settings.capital + position.realised_pnl
