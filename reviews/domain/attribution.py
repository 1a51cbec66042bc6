"""Where a period's result came from: price moves, slippage, each charge, the person's own exits,
marks on open positions and the models' bills. Pure; no Django.

Every amount on an ``Attribution`` is a signed contribution to the period's net result in the
account's currency, to the paisa: positive adds, negative takes away. So the trading losses, the
slippage, the charges (``costs``) and ``inference`` are zero or negative, and the identity

    gains + losses + slippage + costs + dividends + manual + unrealised + inference == net

holds exactly, by construction, for any input this module accepts.

How a closed trade is split (``split_trade``), with every figure from ``vocabulary.exits.mark``:

- **move**: the price move on the trade's shares between its reference prices (the prices before
  slippage: the next open, the last close, the stop or target the exit was triggered at);
- **slippage**: the move between the fill prices less the move between the references; the desk's
  fills are never better than their references, so it is zero or negative;
- **charges**: both legs' ``CostBreakdown`` added line by line.

``move + slippage − charges`` is the book's realised figure (``vocabulary.exits.realised_pnl`` on
the fills and charges). A record whose stated realised PnL disagrees with that arithmetic, or whose
fill is better than its reference, is refused when it is built, so a careless input cannot produce
a wrong attribution.

The strategy's columns (gains, losses, slippage, costs) count only trades its own exits closed
(stop, target, horizon). A trade a person closed by hand (``manual_exit``) goes whole, slippage and
charges included, into ``manual``: that result belongs to the person's decision, and mixing it in
would credit or blame the strategy for an exit it did not make.

A trade's move is a gain when positive and a loss when negative, judged at the reference prices, so
a trade that moved the right way but paid more in slippage and charges is a gain in the first column
and a cost in the others: the waterfall shows both what the calls earned and what executing them
cost.

**dividends**: what the closed trades received (long) or paid (short) in dividends while held, as
the book credited them to cash on each ex-date. A closed position's realised PnL includes them
(``trading.book.corporate``), so they are counted in the period the trade closes, on their own
line for every trade, the ones closed by hand included (``manual`` is then the rest of their
result): a dividend is neither a call's move nor a person's exit.

``unrealised`` is the change in the book's marks over the period: each open position's mark at
the period's end less its mark at the start (zero for one opened during the period, as a position
is worth its entry at entry), less the start marks of the trades closed during the period (their
whole realised result is counted here, and the part already marked was reported by the earlier
period). So consecutive periods add up to the book's total result, never counting a move twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from vocabulary.costs import CostBreakdown, Side
from vocabulary.exits import mark, realised_pnl
from vocabulary.fills import entry_side, exit_side
from vocabulary.trade import Direction

__all__ = [
    "Attribution",
    "AttributionInputError",
    "ClosedTrade",
    "OpenPosition",
    "TradeSplit",
    "WaterfallRow",
    "attribute",
    "split_trade",
    "waterfall_rows",
]

PAISE = Decimal("0.01")
HUNDREDTH = Decimal("0.01")
ZERO = Decimal("0.00")

# The waterfall's label for each CostBreakdown line, in the order the lines are declared.
COST_LABELS: dict[str, str] = {
    "brokerage": "Brokerage",
    "stt": "STT",
    "exchange_charge": "Exchange charges",
    "sebi_fee": "SEBI fee",
    "stamp_duty": "Stamp duty",
    "gst": "GST",
}


class AttributionInputError(ValueError):
    """A record the attribution cannot trust: the message names the record and the figure at fault."""


@dataclass(frozen=True)
class ClosedTrade:
    """A position closed during the period, as the book recorded it.

    ``entry_price``/``exit_price`` are the fills; ``entry_reference``/``exit_reference`` the prices
    the fills were taken from before slippage. ``realised_pnl`` is the book's figure and must equal
    ``vocabulary.exits.realised_pnl`` on the fills and both legs' charges. ``unrealised_at_start``
    is the position's mark at the period's start when it was opened before the period (0 when it was
    opened during it). ``position_id`` only names the record in errors.
    """

    direction: Direction
    quantity: int
    entry_price: Decimal
    exit_price: Decimal
    entry_reference: Decimal
    exit_reference: Decimal
    entry_costs: CostBreakdown
    exit_costs: CostBreakdown
    realised_pnl: Decimal
    manual_exit: bool = False
    unrealised_at_start: Decimal = ZERO
    position_id: int | None = None
    dividends: Decimal = ZERO  # received (+) or paid (−) while held; part of realised_pnl

    def __post_init__(self) -> None:
        _check_closed_trade(self)

    @property
    def name(self) -> str:
        return "closed trade" if self.position_id is None else f"position {self.position_id}"


@dataclass(frozen=True)
class OpenPosition:
    """A position still open at the period's end: its mark (unrealised PnL, before costs) at the
    start of the period (0 when opened during it) and at the end, both from the daily marks."""

    unrealised_at_start: Decimal
    unrealised_at_end: Decimal
    position_id: int | None = None

    def __post_init__(self) -> None:
        name = "open position" if self.position_id is None else f"position {self.position_id}"
        _check_paise(self.unrealised_at_start, f"{name}: unrealised_at_start")
        _check_paise(self.unrealised_at_end, f"{name}: unrealised_at_end")

    @property
    def change(self) -> Decimal:
        return self.unrealised_at_end - self.unrealised_at_start


@dataclass(frozen=True)
class TradeSplit:
    """One closed trade's realised result in parts: ``move + slippage − charges.total == realised``."""

    move: Decimal
    slippage: Decimal
    charges: CostBreakdown
    realised: Decimal


@dataclass(frozen=True)
class Attribution:
    """A period's result by source; every amount a signed contribution to ``net`` (see the module)."""

    gains: Decimal  # >= 0: the strategy's winning moves at reference prices
    losses: Decimal  # <= 0: its losing moves
    slippage: Decimal  # <= 0: its fills against their references
    charges: CostBreakdown  # what its trades paid, line by line, as positive amounts
    manual: Decimal  # the realised result of trades closed by hand, all in but their dividends
    unrealised: Decimal  # the change in the book's marks over the period
    inference: Decimal  # <= 0: the period's model calls
    net: Decimal
    risk_adjusted_return: Decimal | None  # net / max drawdown of the period; None without a drawdown
    strategy_trades: int
    manual_trades: int
    dividends: Decimal = ZERO  # received (+) or paid (−) by the trades closed in the period

    @property
    def costs(self) -> Decimal:
        """The charges as a contribution to the net (<= 0)."""
        return ZERO - self.charges.total

    @property
    def strategy_realised(self) -> Decimal:
        """The realised result of the trades the strategy's own exits closed."""
        return self.gains + self.losses + self.slippage + self.costs

    @property
    def realised(self) -> Decimal:
        """The book's realised result of every trade closed in the period."""
        return self.strategy_realised + self.manual + self.dividends

    @property
    def operational_cost(self) -> Decimal:
        """Charges plus inference: what running the desk cost, as a contribution (<= 0)."""
        return self.costs + self.inference


class WaterfallRow(NamedTuple):
    label: str
    amount: Decimal


def split_trade(trade: ClosedTrade) -> TradeSplit:
    """``trade``'s realised result as its move at reference prices, slippage and charges."""
    move, filled = _moves(trade)
    charges = _add_costs([trade.entry_costs, trade.exit_costs])
    return TradeSplit(
        move=move, slippage=filled - move, charges=charges, realised=filled - charges.total + trade.dividends
    )


def _moves(trade: ClosedTrade) -> tuple[Decimal, Decimal]:
    """The trade's move between its reference prices and between its fills (``mark`` on each)."""
    move = mark(
        direction=trade.direction,
        quantity=trade.quantity,
        entry_price=trade.entry_reference,
        mark_price=trade.exit_reference,
    )
    filled = mark(
        direction=trade.direction, quantity=trade.quantity, entry_price=trade.entry_price, mark_price=trade.exit_price
    )
    return move, filled


def attribute(
    closed: Sequence[ClosedTrade],
    open_positions: Sequence[OpenPosition],
    inference_cost: Decimal,
    *,
    max_drawdown: Decimal | None = None,
) -> Attribution:
    """The attribution of a period with these closed trades, open positions and model-call bill.

    ``inference_cost`` is the sum of the period's recorded model-call costs in the account's
    currency (not negative), rounded here to the paisa. ``max_drawdown`` is the period's largest
    fall of equity from a peak, in the same currency (``reviews.domain.performance.max_drawdown``);
    the risk-adjusted return is ``net / max_drawdown`` (how many drawdowns the period earned,
    to 0.01), None when it is missing or zero.
    """
    inference = ZERO - _inference(inference_cost)
    # ``split_trade`` of each strategy trade, summed as it goes: a CostBreakdown per trade was most
    # of the attribution's time at 10,000 trades (``bench/retrospective.py``). Decimal sums of
    # paise are exact, so the order of the additions does not move a figure.
    strategy = [trade for trade in closed if not trade.manual_exit]
    moves: list[Decimal] = []
    slippage = ZERO
    charges = dict.fromkeys(_COST_LINES, ZERO)
    for trade in strategy:
        move, filled = _moves(trade)
        moves.append(move)
        slippage += filled - move
        entry_costs, exit_costs = trade.entry_costs, trade.exit_costs
        for line in _COST_LINES:
            charges[line] += getattr(entry_costs, line) + getattr(exit_costs, line)
    manual = _total(trade.realised_pnl - trade.dividends for trade in closed if trade.manual_exit)
    unrealised = _total(position.change for position in open_positions) - _total(
        trade.unrealised_at_start for trade in closed
    )
    # The net from the book's own realised figures; the parts above add up to it (the split's check).
    net = _total(trade.realised_pnl for trade in closed) + unrealised + inference
    return Attribution(
        gains=_total(move for move in moves if move > 0),
        losses=_total(move for move in moves if move < 0),
        slippage=slippage,
        charges=CostBreakdown(**charges),
        manual=manual,
        unrealised=unrealised,
        inference=inference,
        net=net,
        risk_adjusted_return=_risk_adjusted(net, max_drawdown),
        strategy_trades=len(strategy),
        manual_trades=len(closed) - len(strategy),
        dividends=_total(trade.dividends for trade in closed),
    )


def waterfall_rows(attribution: Attribution) -> list[WaterfallRow]:
    """The rows of the period's waterfall, in reading order: the strategy's gains and losses, its
    slippage, each charge (as a negative contribution), the exits by hand, the change in marks,
    inference, and last the net result, which every row before it adds up to. Rows that are zero
    stay, so the chart keeps one layout from period to period."""
    charges = [
        WaterfallRow(COST_LABELS[field.name], ZERO - getattr(attribution.charges, field.name))
        for field in fields(CostBreakdown)
    ]
    return [
        WaterfallRow("Trading gains", attribution.gains),
        WaterfallRow("Trading losses", attribution.losses),
        WaterfallRow("Slippage", attribution.slippage),
        *charges,
        WaterfallRow("Dividends", attribution.dividends),
        WaterfallRow("Closed by hand", attribution.manual),
        WaterfallRow("Unrealised change", attribution.unrealised),
        WaterfallRow("Inference", attribution.inference),
        WaterfallRow("Net result", attribution.net),
    ]


def _total(amounts: Iterable[Decimal]) -> Decimal:
    return sum(amounts, start=ZERO)


def _add_costs(breakdowns: Iterable[CostBreakdown]) -> CostBreakdown:
    totals = dict.fromkeys(_COST_LINES, ZERO)
    for breakdown in breakdowns:
        for name in _COST_LINES:
            totals[name] += getattr(breakdown, name)
    return CostBreakdown(**totals)


def _inference(amount: Decimal) -> Decimal:
    if not isinstance(amount, Decimal) or not amount.is_finite() or amount < 0:
        raise AttributionInputError(f"the inference cost must be a finite, non-negative Decimal, got {amount!r}")
    return amount.quantize(PAISE, rounding=ROUND_HALF_UP)


def _risk_adjusted(net: Decimal, max_drawdown: Decimal | None) -> Decimal | None:
    if max_drawdown is None:
        return None
    if not isinstance(max_drawdown, Decimal) or not max_drawdown.is_finite() or max_drawdown < 0:
        raise AttributionInputError(f"the max drawdown must be a finite amount, zero or more, got {max_drawdown!r}")
    if max_drawdown == 0:
        return None
    return (net / max_drawdown).quantize(HUNDREDTH, rounding=ROUND_HALF_UP)


# The checks a ClosedTrade passes when it is built.

# The cost model's lines, read once (``dataclasses.fields`` is slow enough to show per trade).
_COST_LINES: tuple[str, ...] = tuple(field.name for field in fields(CostBreakdown))


_PRICES = ("entry_price", "exit_price", "entry_reference", "exit_reference")
_PAISE_AMOUNTS = ("realised_pnl", "unrealised_at_start", "dividends")


def _check_closed_trade(trade: ClosedTrade) -> None:
    # Every check runs on every trade; a message (and the trade's name in it) is only written for
    # the check that fails, as writing them all was a good part of a 10,000-trade review.
    direction, quantity = trade.direction, trade.quantity
    if direction not in ("LONG", "SHORT"):
        raise AttributionInputError(f"{trade.name}: direction must be LONG or SHORT, got {direction!r}")
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity <= 0:
        raise AttributionInputError(f"{trade.name}: quantity must be a positive whole number, got {quantity!r}")
    for label in _PRICES:
        value = getattr(trade, label)
        if not (isinstance(value, Decimal) and value.is_finite() and value > 0):
            _check_price(value, f"{trade.name}: {label}")
    _check_costs(trade.entry_costs, trade, "entry costs")
    _check_costs(trade.exit_costs, trade, "exit costs")
    for label in _PAISE_AMOUNTS:
        value = getattr(trade, label)
        if not _on_paise(value):
            _check_paise(value, f"{trade.name}: {label}")
    _check_fill(entry_side(direction), trade.entry_price, trade.entry_reference, trade, "entry")
    _check_fill(exit_side(direction), trade.exit_price, trade.exit_reference, trade, "exit")
    _check_realised(trade)


def _check_price(value: object, label: str) -> None:
    if not isinstance(value, Decimal) or not value.is_finite() or value <= 0:
        raise AttributionInputError(f"{label} must be a positive, finite Decimal, got {value!r}")


def _on_paise(value: object) -> bool:
    """An amount the attribution adds exactly: a finite Decimal to the paisa."""
    return isinstance(value, Decimal) and value.is_finite() and value == value.quantize(PAISE)


def _check_paise(value: object, label: str) -> None:
    # Amounts off the paisa grid would let rounding break the exact identity; the book never stores them.
    if not _on_paise(value):
        raise AttributionInputError(f"{label} must be a finite Decimal amount to the paisa, got {value!r}")


def _check_costs(costs: CostBreakdown, trade: ClosedTrade, leg: str) -> None:
    if not isinstance(costs, CostBreakdown):
        raise AttributionInputError(f"{trade.name}: {leg} must be a CostBreakdown, got {type(costs).__name__}")
    for line in _COST_LINES:
        value = getattr(costs, line)
        if isinstance(value, Decimal) and value.is_finite() and value >= 0 and value == value.quantize(PAISE):
            continue
        _check_paise(value, f"{trade.name}: {leg}: {line}")
        raise AttributionInputError(f"{trade.name}: {leg}: {line} must not be negative, got {value}")


def _check_fill(side: Side, fill: Decimal, reference: Decimal, trade: ClosedTrade, leg: str) -> None:
    """The desk's fills move against the trader: a BUY never below its reference, a SELL never above.
    A fill on the better side means the references are wrong (swapped legs, the wrong bar)."""
    better = fill < reference if side == "BUY" else fill > reference
    if better:
        raise AttributionInputError(
            f"{trade.name}: {leg}: the {side} fill {fill} is better than its reference price {reference}; "
            "the desk's fills are never better than their reference, so the reference is wrong"
        )


def _check_realised(trade: ClosedTrade) -> None:
    expected = (
        realised_pnl(
            direction=trade.direction,
            quantity=trade.quantity,
            entry_price=trade.entry_price,
            exit_price=trade.exit_price,
            entry_costs=trade.entry_costs.total,
            exit_costs=trade.exit_costs.total,
        )
        + trade.dividends
    )
    if trade.realised_pnl != expected:
        raise AttributionInputError(
            f"{trade.name}: the realised PnL {trade.realised_pnl} disagrees with the book's arithmetic "
            f"{expected} ({trade.direction} {trade.quantity} from {trade.entry_price} to {trade.exit_price}, "
            f"costs {trade.entry_costs.total} + {trade.exit_costs.total}, dividends {trade.dividends})"
        )
