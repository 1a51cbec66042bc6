"""The backtester: target positions in, the paper broker's arithmetic out, per bar.

A strategy's target on bar ``t`` is decided after ``t``'s close, so it is acted on at the next
bar's open, exactly as the desk's broker fills an order placed after the close (``next_open``).
Each change of target closes the open trade and opens the new one at that open. What a fill,
a trade's costs and its result are is not re-implemented here: the same pure functions the paper
broker calls decide them (``vocabulary.fills.fill_price`` with the desk's slippage onto the tick,
``vocabulary.costs.order_costs`` with the desk's ``CostModel``, ``vocabulary.exits.mark`` and
``realised_pnl``), so one trade backtested and the same trade on the paper book agree to the paisa.

Two paths, one arithmetic:

- ``backtest`` (exact): Decimal prices and money, whole lots, every order costed and rounded to
  the paisa, cash kept as the broker keeps it (an entry takes price x quantity + costs, long or
  short; a close gives back the entry value, the price move and less the exit costs). It sizes
  each trade to the whole lots the cash pays for, costs included; a trade it cannot afford is
  not taken. It gives the trades and the per-bar returns of equity marked at each close.
- ``grid_returns`` (vectorised): the same per-bar returns for a whole matrix of positions at once,
  in floats, with fractional quantities and costs as fractions of turnover. It differs from the
  exact path only by the lots' leftover cash and the paisa rounding (and ignores a flat per-order
  brokerage or a brokerage cap, which depend on the order's size). A test holds them together.

Returns are simple per-bar returns of equity, equity starting at ``capital`` before the first
bar; bar 0 holds nothing (nothing was decided before it). A trade still open at the last bar is
marked at its close, not closed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from decimal import ROUND_FLOOR, Decimal
from itertools import pairwise
from typing import Any

import numpy as np

from research.signals.base import Bars
from vocabulary.costs import CostModel, Side, order_costs
from vocabulary.exits import mark, realised_pnl
from vocabulary.fills import entry_side, exit_side, fill_price
from vocabulary.performance import performance_summary
from vocabulary.trade import Direction

__all__ = [
    "BacktestConfig",
    "BacktestResult",
    "Trade",
    "backtest",
    "cost_rate",
    "grid_exposure",
    "grid_returns",
    "grid_trade_counts",
    "held_positions",
]

HUNDRED = Decimal(100)
BASIS_POINTS = 10_000.0


@dataclass(frozen=True)
class BacktestConfig:
    """Starting capital (in the instrument's currency), the cost table, the slippage in basis
    points and whether a short target is taken (otherwise -1 means flat)."""

    capital: Decimal
    costs: CostModel = field(default_factory=CostModel)
    slippage_bps: Decimal = Decimal(5)
    allow_short: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.capital, Decimal) or not self.capital.is_finite() or self.capital <= 0:
            raise ValueError(f"capital must be a positive Decimal, got {self.capital!r}")
        if not isinstance(self.slippage_bps, Decimal) or not self.slippage_bps.is_finite() or self.slippage_bps < 0:
            raise ValueError(f"slippage_bps must be a non-negative Decimal, got {self.slippage_bps!r}")

    @classmethod
    def from_settings(cls, *, allow_short: bool = False, capital: Decimal | None = None) -> BacktestConfig:
        """The desk's own broker costs and slippage (``BROKER``) and research capital (``RESEARCH``)."""
        from django.conf import settings  # glue: the arithmetic above stays free of Django

        return cls(
            capital=capital if capital is not None else Decimal(str(settings.RESEARCH["CAPITAL"])),
            costs=CostModel.from_mapping(settings.BROKER["COSTS"]),
            slippage_bps=Decimal(str(settings.BROKER["SLIPPAGE_BPS"])),
            allow_short=allow_short,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "capital": str(self.capital),
            "slippage_bps": str(self.slippage_bps),
            "allow_short": self.allow_short,
            "costs": {name: (None if value is None else str(value)) for name, value in vars(self.costs).items()},
        }


@dataclass(frozen=True)
class Trade:
    """One round trip. ``closed`` is False for a trade still open at the last bar: its exit is
    that bar's close (a mark, no slippage, no exit costs)."""

    direction: Direction
    quantity: int
    entry_index: int
    entry_date: dt.date
    entry_reference: Decimal
    entry_price: Decimal
    entry_costs: Decimal
    exit_index: int
    exit_date: dt.date
    exit_reference: Decimal
    exit_price: Decimal
    exit_costs: Decimal
    pnl: Decimal
    closed: bool = True

    @property
    def bars_held(self) -> int:
        return self.exit_index - self.entry_index

    @property
    def return_on_entry(self) -> float:
        """The result as a fraction of the money the entry took (price x quantity + costs)."""
        return float(self.pnl / (self.entry_price * self.quantity + self.entry_costs))

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "quantity": self.quantity,
            "entry_date": self.entry_date.isoformat(),
            "entry_price": str(self.entry_price),
            "entry_costs": str(self.entry_costs),
            "exit_date": self.exit_date.isoformat(),
            "exit_price": str(self.exit_price),
            "exit_costs": str(self.exit_costs),
            "pnl": str(self.pnl),
            "closed": self.closed,
        }


@dataclass(frozen=True)
class BacktestResult:
    """Per-bar ``returns`` and ``equity`` (marked at each close), the ``positions`` actually held
    during each bar, and the ``trades``."""

    returns: np.ndarray
    equity: np.ndarray
    positions: np.ndarray
    trades: list[Trade]
    capital: Decimal

    @property
    def trades_pnl(self) -> list[Decimal]:
        return [trade.pnl for trade in self.trades]

    @property
    def final_equity(self) -> float:
        return float(self.equity[-1]) if self.equity.size else float(self.capital)

    def summary(self) -> dict[str, Any]:
        return performance_summary(self.returns, self.trades_pnl, self.positions)


# --- the exact path --------------------------------------------------------------------------


@dataclass
class _OpenTrade:
    direction: Direction
    quantity: int
    entry_index: int
    entry_reference: Decimal
    entry_price: Decimal
    entry_costs: Decimal

    @property
    def sign(self) -> int:
        return 1 if self.direction == "LONG" else -1


def held_positions(positions: np.ndarray, n_bars: int, *, allow_short: bool) -> np.ndarray:
    """The position in force during each bar: the previous bar's target (flat on bar 0), shorts
    turned flat where not allowed. Works on one row or a configs x bars matrix."""
    targets = np.asarray(positions)
    if targets.shape[-1] != n_bars:
        raise ValueError(f"positions cover {targets.shape[-1]} bars, the bars {n_bars}")
    if targets.size and not _are_positions(targets):
        raise ValueError("positions must be -1, 0 or 1")
    held = np.empty(targets.shape, dtype=np.int8)
    held[..., :1] = 0
    if allow_short or (targets.size and targets.min() >= 0):
        held[..., 1:] = targets[..., :-1]
    else:
        np.maximum(targets[..., :-1], 0, out=held[..., 1:], casting="unsafe")
    return held


def _are_positions(targets: np.ndarray) -> bool:
    if targets.dtype == np.int8:
        return bool(targets.min() >= -1 and targets.max() <= 1)
    if not np.issubdtype(targets.dtype, np.number) or np.issubdtype(targets.dtype, np.complexfloating):
        return False
    if not (targets.min() >= -1 and targets.max() <= 1):
        return False
    return bool(np.issubdtype(targets.dtype, np.integer) or np.array_equal(targets, np.round(targets)))


def backtest(bars: Bars, positions: np.ndarray, config: BacktestConfig) -> BacktestResult:
    """Trade ``positions`` (one target per bar, -1/0/1) on ``bars`` with the broker's arithmetic."""
    n_bars = len(bars)
    held = held_positions(np.asarray(positions).reshape(-1), n_bars, allow_short=config.allow_short)
    if not n_bars:
        return BacktestResult(np.zeros(0), np.zeros(0), held, [], config.capital)
    cash = config.capital
    trade: _OpenTrade | None = None
    trades: list[Trade] = []
    equity = np.empty(n_bars)
    changes = (np.flatnonzero(np.diff(held)) + 1).tolist()
    boundaries = [*changes, n_bars]
    equity[: boundaries[0]] = float(cash)
    for start, stop in pairwise(boundaries):
        if trade is not None:
            cash, closed = _close(bars, trade, start, cash, config)
            trades.append(closed)
            trade = None
        if held[start] != 0:
            trade, cash = _open(bars, int(held[start]), start, cash, config)
        equity[start:stop] = _marked_equity(bars, trade, cash, start, stop)
    actual = np.zeros(n_bars, dtype=np.int8)
    for closed in trades:
        actual[closed.entry_index : closed.exit_index] = 1 if closed.direction == "LONG" else -1
    if trade is not None:
        actual[trade.entry_index :] = trade.sign
        trades.append(_marked_trade(bars, trade))
    previous = np.concatenate(([float(config.capital)], equity[:-1]))
    return BacktestResult(
        returns=equity / previous - 1.0, equity=equity, positions=actual, trades=trades, capital=config.capital
    )


def _open(
    bars: Bars, target: int, index: int, cash: Decimal, config: BacktestConfig
) -> tuple[_OpenTrade | None, Decimal]:
    direction: Direction = "LONG" if target > 0 else "SHORT"
    side = entry_side(direction)
    reference = bars.price("open", index)
    price = fill_price(side=side, reference=reference, slippage_bps=config.slippage_bps, tick=bars.tick)
    quantity = affordable_quantity(side, price, cash, bars.lot_size, config.costs)
    if quantity == 0:
        return None, cash
    costs = order_costs(side, quantity, price, config.costs).total
    trade = _OpenTrade(direction, quantity, index, reference, price, costs)
    return trade, cash - price * quantity - costs


def _close(bars: Bars, trade: _OpenTrade, index: int, cash: Decimal, config: BacktestConfig) -> tuple[Decimal, Trade]:
    side = exit_side(trade.direction)
    reference = bars.price("open", index)
    price = fill_price(side=side, reference=reference, slippage_bps=config.slippage_bps, tick=bars.tick)
    costs = order_costs(side, trade.quantity, price, config.costs).total
    gross = mark(direction=trade.direction, quantity=trade.quantity, entry_price=trade.entry_price, mark_price=price)
    pnl = realised_pnl(
        direction=trade.direction,
        quantity=trade.quantity,
        entry_price=trade.entry_price,
        exit_price=price,
        entry_costs=trade.entry_costs,
        exit_costs=costs,
    )
    cash += trade.entry_price * trade.quantity + gross - costs
    return cash, _ended(bars, trade, index=index, reference=reference, price=price, costs=costs, pnl=pnl)


def _ended(
    bars: Bars, trade: _OpenTrade, *, index: int, reference: Decimal, price: Decimal, costs: Decimal, pnl: Decimal
) -> Trade:
    """The trade as it left (or, at the last bar, as it stands), with its entry as it was made."""
    return Trade(
        direction=trade.direction,
        quantity=trade.quantity,
        entry_index=trade.entry_index,
        entry_date=bars.date(trade.entry_index),
        entry_reference=trade.entry_reference,
        entry_price=trade.entry_price,
        entry_costs=trade.entry_costs,
        exit_index=index,
        exit_date=bars.date(index),
        exit_reference=reference,
        exit_price=price,
        exit_costs=costs,
        pnl=pnl,
    )


def _marked_trade(bars: Bars, trade: _OpenTrade) -> Trade:
    last = len(bars) - 1
    close = bars.price("close", last)
    pnl = realised_pnl(
        direction=trade.direction,
        quantity=trade.quantity,
        entry_price=trade.entry_price,
        exit_price=close,
        entry_costs=trade.entry_costs,
        exit_costs=Decimal(0),
    )
    return replace(
        _ended(bars, trade, index=last, reference=close, price=close, costs=Decimal(0), pnl=pnl),
        closed=False,
    )


def _marked_equity(bars: Bars, trade: _OpenTrade | None, cash: Decimal, start: int, stop: int) -> np.ndarray:
    """Equity at each close from ``start`` to ``stop``: cash, plus the entry value and the price
    move of an open trade (the broker's mark, here in floats per bar)."""
    if trade is None:
        return np.full(stop - start, float(cash))
    base = float(cash + trade.entry_price * trade.quantity)
    move = trade.sign * trade.quantity * (bars.close[start:stop] - float(trade.entry_price))
    return base + move


def cost_rate(side: Side, model: CostModel) -> Decimal:
    """The proportional part of an order's costs as a fraction of its turnover (GST included;
    the flat brokerage and the brokerage cap are size-dependent and left out)."""
    exchange = model.exchange_txn_pct + model.sebi_fee_pct + model.brokerage_pct
    stt = model.stt_buy_pct if side == "BUY" else model.stt_sell_pct
    stamp = model.stamp_duty_buy_pct if side == "BUY" else Decimal(0)
    return (exchange * (1 + model.gst_pct / HUNDRED) + stt + stamp) / HUNDRED


def affordable_quantity(side: Side, price: Decimal, cash: Decimal, lot_size: int, model: CostModel) -> int:
    """The most whole lots whose price and costs ``cash`` pays for (0 when not even one lot)."""

    def needed(lots: int) -> Decimal:
        return price * lots * lot_size + order_costs(side, lots * lot_size, price, model).total

    flat = model.brokerage_flat * (1 + model.gst_pct / HUNDRED)
    per_lot = price * lot_size * (1 + cost_rate(side, model))
    lots = max(int(((cash - flat) / per_lot).to_integral_value(rounding=ROUND_FLOOR)), 0)
    while lots > 0 and needed(lots) > cash:
        lots -= 1
    while needed(lots + 1) <= cash:
        lots += 1
    return lots * lot_size


# --- the vectorised path ---------------------------------------------------------------------


def grid_returns(bars: Bars, positions_matrix: np.ndarray, config: BacktestConfig) -> np.ndarray:
    """Per-bar returns (configs x bars) of every row of target positions, in a few array passes.

    Per bar, equity moves by a factor that depends on the position held before and during the bar:

    - a long held on moves with the close: C_t / C_{t-1};
    - a short held on is linear in the price from its entry fill F (the broker's accounting: the
      entry value stays in the account and the price move is added): (2F - C_t) / (2F - C_{t-1});
    - an entry turns cash into the position at the fill plus costs: C_t / (B_t (1 + c_buy)) for a
      long (B the buy fill), (2S_t - C_t) / (S_t (1 + c_sell)) for a short (S the sell fill);
    - an exit turns it back at the fill less costs: S_t (1 - c_sell) / C_{t-1} for a long,
      (2F - B_t (1 + c_buy)) / (2F - C_{t-1}) for a short; a reversal is an exit then an entry.

    Held positions fill the matrix in one multiplication; the bars where the position changes are
    few and get their entry and exit factors by index. A short's entry fill is carried forward
    from its entry bar, only when some row holds a short.
    """
    matrix = np.asarray(positions_matrix)
    if matrix.ndim != 2:
        raise ValueError(f"positions_matrix must be configs x bars, got shape {matrix.shape}")
    n_bars = len(bars)
    held = held_positions(matrix, n_bars, allow_short=config.allow_short)
    if not n_bars or not matrix.shape[0]:
        return np.zeros(held.shape)
    before = np.zeros_like(held)
    before[:, 1:] = held[:, :-1]
    legs = _Legs.of(bars, config)
    has_short = bool(held.min() < 0)
    # Long held on: both 1. (With shorts, -1 & -1 is -1 and -1 & 1 is 1: masked below.)
    returns = np.multiply(np.bitwise_and(held, before), legs.long_move)
    entry_at = None
    if has_short:
        entry_at = _short_entries(held, before)
        _short_moves(returns, legs, held, before, entry_at)
    changed = np.flatnonzero(held != before)  # much quicker than a 2-D nonzero on a bool matrix
    if changed.size:
        rows, columns = np.divmod(changed, n_bars)
        factors = _exit_factors(legs, before[rows, columns], rows, columns, entry_at)
        factors *= _entry_factors(legs, held[rows, columns], columns)
        returns[rows, columns] = factors - 1.0
    return returns


@dataclass(frozen=True)
class _Legs:
    """The per-bar prices and factors every configuration shares."""

    close: np.ndarray
    previous_close: np.ndarray
    buy_fill: np.ndarray
    sell_fill: np.ndarray
    buy_rate: float
    sell_rate: float
    long_move: np.ndarray  # C_t / C_{t-1} - 1

    @classmethod
    def of(cls, bars: Bars, config: BacktestConfig) -> _Legs:
        tick = float(bars.tick)
        slippage = float(config.slippage_bps) / BASIS_POINTS
        # Onto the tick against the trader, as fill_price does; the nudge keeps a product that
        # lands a hair off an exact tick (100 x 1.0005 / 0.05) on the tick Decimal would give.
        buy_fill = np.ceil(bars.open * (1.0 + slippage) / tick - 1e-9) * tick
        sell_fill = np.floor(bars.open * (1.0 - slippage) / tick + 1e-9) * tick
        close = bars.close
        previous_close = np.concatenate((close[:1], close[:-1]))
        return cls(
            close=close,
            previous_close=previous_close,
            buy_fill=buy_fill,
            sell_fill=sell_fill,
            buy_rate=float(cost_rate("BUY", config.costs)),
            sell_rate=float(cost_rate("SELL", config.costs)),
            long_move=close / previous_close - 1.0,
        )


def _short_entries(held: np.ndarray, before: np.ndarray) -> np.ndarray:
    """For each cell, the bar the latest short entered on (0 before any): carried forward."""
    entries = (held < 0) & (before >= 0)
    index = np.where(entries, np.arange(held.shape[1]), 0)
    np.maximum.accumulate(index, axis=1, out=index)
    return index


def _short_moves(returns: np.ndarray, legs: _Legs, held: np.ndarray, before: np.ndarray, entry_at: np.ndarray) -> None:
    """Cells holding a short on: (2F - C_t) / (2F - C_{t-1}) - 1; cells whose bitwise-and was
    not a long held on (a reversal, -1 & 1) are reset first (their factors are set by index)."""
    returns[(held < 0) | (before < 0)] = 0.0
    on = (held < 0) & (before < 0)
    doubled = 2.0 * legs.sell_fill[entry_at]
    moves = (legs.previous_close - legs.close) / (doubled - legs.previous_close)
    returns[on] = moves[on]


def _exit_factors(
    legs: _Legs, previous: np.ndarray, rows: np.ndarray, columns: np.ndarray, entry_at: np.ndarray | None
) -> np.ndarray:
    factors = np.ones(columns.shape)
    longs = previous > 0
    factors[longs] = legs.sell_fill[columns[longs]] * (1.0 - legs.sell_rate) / legs.previous_close[columns[longs]]
    shorts = previous < 0
    if entry_at is not None and shorts.any():
        where = columns[shorts]
        doubled = 2.0 * legs.sell_fill[entry_at[rows[shorts], where - 1]]
        exit_value = doubled - legs.buy_fill[where] * (1.0 + legs.buy_rate)
        factors[shorts] = exit_value / (doubled - legs.previous_close[where])
    return factors


def _entry_factors(legs: _Legs, current: np.ndarray, columns: np.ndarray) -> np.ndarray:
    factors = np.ones(columns.shape)
    longs = current > 0
    where = columns[longs]
    factors[longs] = legs.close[where] / (legs.buy_fill[where] * (1.0 + legs.buy_rate))
    shorts = current < 0
    where = columns[shorts]
    fill = legs.sell_fill[where]
    factors[shorts] = (2.0 * fill - legs.close[where]) / (fill * (1.0 + legs.sell_rate))
    return factors


def grid_trade_counts(positions_matrix: np.ndarray, *, allow_short: bool) -> np.ndarray:
    """Trades each row of targets opens (an entry at each change to a non-flat position)."""
    matrix = np.asarray(positions_matrix)
    held = held_positions(matrix, matrix.shape[-1], allow_short=allow_short)
    before = np.zeros_like(held)
    before[..., 1:] = held[..., :-1]
    return ((held != before) & (held != 0)).sum(axis=-1)


def grid_exposure(positions_matrix: np.ndarray, *, allow_short: bool) -> np.ndarray:
    """The share of bars each row holds a position."""
    matrix = np.asarray(positions_matrix)
    held = held_positions(matrix, matrix.shape[-1], allow_short=allow_short)
    return (held != 0).mean(axis=-1) if held.shape[-1] else np.zeros(held.shape[:-1])
