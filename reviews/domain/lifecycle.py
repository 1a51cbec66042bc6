"""A closed position looked back on: how its value moved, what doing nothing would have earned, and
the best exit that was on offer. Pure; no Django. Every figure is computed by code from the daily
marks the book wrote, never by a model.

Sessions are counted the way the book counts them (``trading.book.broker``): session 0 is the
entry session (the position filled at its open and was marked at its close); session ``n`` is the
n-th session after it. ``closes[s]`` is the close the book marked at session ``s``. The book does not
mark the session it closes a position in by code (a stop, target or horizon exit), so ``closes``
then holds ``exit_session`` marks; a position closed by hand after that day's mark holds one more.

Profit at a session before the exit is the mark-to-market: ``vocabulary.exits.mark`` (the gross
price move on the shares) less the entry costs already paid. The exit costs are not taken off a
mark: they are paid only by an exit. At the exit session the profit is the realised PnL, net of
both legs' costs. All money is Decimal in the account's currency, rounded to the paisa (0.01,
halves up) as ``vocabulary`` rounds it.

What the retrospective holds (``Lifecycle``):

- the path: the profit at every session of the life, entry session to exit session;
- the trajectory: that path read at chosen checkpoints (by default 1, 3, 7, 14 and 30 sessions
  after entry); a checkpoint past the exit session is left out, never extrapolated;
- the final PnL and the comparison with inaction (not trading at all, which earns exactly zero);
- the peak profit and the first session it was reached; regret, the peak less the final PnL; the
  drawdown from the peak, the peak less the lowest profit from the peak's session to the exit;
- the hindsight exit: the mark that, sold (or bought back) at its close and charged its exit
  costs, would have left the most net profit. It is known only after the fact, so it measures
  exit timing and is no claim that the exit could have been foreseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from vocabulary.costs import CostModel, order_costs
from vocabulary.exits import mark, realised_pnl
from vocabulary.fills import exit_side, fill_price
from vocabulary.trade import Direction, as_direction

__all__ = [
    "DEFAULT_CHECKPOINTS",
    "Checkpoint",
    "ClosedPosition",
    "HindsightExit",
    "HindsightFill",
    "Lifecycle",
    "hindsight_exit",
    "pnl_path",
    "position_lifecycle",
    "trajectory",
]

DEFAULT_CHECKPOINTS: tuple[int, ...] = (1, 3, 7, 14, 30)

PAISE = Decimal("0.01")
ZERO = Decimal("0.00")


@dataclass(frozen=True)
class ClosedPosition:
    """What the retrospective reads of one closed position.

    ``closes`` are the marks from the entry session on, one per session (see the module's note on
    counting); ``exit_session`` is the session the position closed in. ``realised_pnl`` is the
    book's figure, checked against the prices and costs given, so a row read wrongly is refused
    here rather than reported as a retrospective.
    """

    direction: Direction
    quantity: int
    entry_price: Decimal
    entry_costs: Decimal
    exit_price: Decimal
    exit_costs: Decimal
    exit_session: int
    closes: tuple[Decimal, ...]
    realised_pnl: Decimal

    def __post_init__(self) -> None:
        # A list passed for ``closes`` is frozen too, so the record cannot change under its result.
        object.__setattr__(self, "closes", tuple(self.closes))
        as_direction(self.direction)
        _check_quantity(self.quantity)
        _check_prices(self)
        _check_costs(self)
        _check_sessions(self)
        _check_realised(self)


@dataclass(frozen=True)
class HindsightFill:
    """How a hindsight exit at a mark would have filled: the mark moved ``slippage_bps`` against the
    trader and onto the ``tick`` grid, as ``vocabulary.fills.fill_price`` fills every real exit.
    Pass the desk's slippage and the instrument's tick so the hindsight exit pays what the real
    one did; without it the hindsight exit fills at the mark itself."""

    slippage_bps: Decimal
    tick: Decimal


@dataclass(frozen=True)
class Checkpoint:
    """The profit ``session`` sessions after entry."""

    session: int
    pnl: Decimal


@dataclass(frozen=True)
class HindsightExit:
    """The best exit among the marks: at ``session``'s close ``mark``, filled at ``price``, paying
    ``exit_costs``, leaving ``pnl`` net of both legs' costs."""

    session: int
    mark: Decimal
    price: Decimal
    exit_costs: Decimal
    pnl: Decimal


@dataclass(frozen=True)
class Lifecycle:
    """A closed position's retrospective; see the module's docstring for each figure."""

    exit_session: int
    path: tuple[Decimal, ...]
    trajectory: tuple[Checkpoint, ...]
    final_pnl: Decimal
    vs_inaction: Decimal
    inaction_better: bool
    peak_pnl: Decimal
    peak_session: int
    regret: Decimal
    drawdown_from_peak: Decimal
    optimal_exit: HindsightExit | None

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly: money as plain Decimal strings, sessions as whole numbers."""
        optimal = self.optimal_exit
        return {
            "exit_session": self.exit_session,
            "path": [_plain(pnl) for pnl in self.path],
            "trajectory": [{"session": point.session, "pnl": _plain(point.pnl)} for point in self.trajectory],
            "final_pnl": _plain(self.final_pnl),
            "vs_inaction": _plain(self.vs_inaction),
            "inaction_better": self.inaction_better,
            "peak_pnl": _plain(self.peak_pnl),
            "peak_session": self.peak_session,
            "regret": _plain(self.regret),
            "drawdown_from_peak": _plain(self.drawdown_from_peak),
            "optimal_exit": None
            if optimal is None
            else {
                "session": optimal.session,
                "mark": _plain(optimal.mark),
                "price": _plain(optimal.price),
                "exit_costs": _plain(optimal.exit_costs),
                "pnl": _plain(optimal.pnl),
            },
        }


def position_lifecycle(
    position: ClosedPosition,
    *,
    checkpoints: Sequence[int] = DEFAULT_CHECKPOINTS,
    cost_model: CostModel | None = None,
    fill: HindsightFill | None = None,
) -> Lifecycle:
    """The retrospective of ``position``.

    ``cost_model`` prices a hindsight exit's costs (the desk's model; the defaults when None);
    ``fill`` applies the desk's exit slippage to it (see ``HindsightFill``). Inaction earns zero, so
    ``vs_inaction`` equals the final PnL and inaction was better only when the trade lost (a trade
    that made exactly zero ties with it). Regret and the drawdown are never negative.
    """
    path = pnl_path(position)
    final = path[-1]
    peak = max(path)
    peak_session = path.index(peak)  # the first session the peak was reached
    return Lifecycle(
        exit_session=position.exit_session,
        path=path,
        trajectory=trajectory(path, checkpoints),
        final_pnl=final,
        vs_inaction=final - ZERO,
        inaction_better=final < ZERO,
        peak_pnl=peak,
        peak_session=peak_session,
        regret=peak - final,
        drawdown_from_peak=peak - min(path[peak_session:]),
        optimal_exit=hindsight_exit(position, cost_model=cost_model, fill=fill),
    )


def pnl_path(position: ClosedPosition) -> tuple[Decimal, ...]:
    """The profit at each session from entry (index 0) to exit (the last item, the realised PnL):
    each earlier session's mark-to-market less the entry costs, exit costs not yet paid."""
    marked = tuple(_marked_pnl(position, close) for close in position.closes[: position.exit_session])
    return (*marked, _to_paise(position.realised_pnl))


def trajectory(path: Sequence[Decimal], checkpoints: Sequence[int] = DEFAULT_CHECKPOINTS) -> tuple[Checkpoint, ...]:
    """``path`` (profit by session, entry session first) read at each checkpoint that falls within
    it, in session order, each checkpoint once. A checkpoint past the last session is left out."""
    wanted = sorted(set(_checked_checkpoints(checkpoints)))
    return tuple(Checkpoint(session, path[session]) for session in wanted if session < len(path))


def hindsight_exit(
    position: ClosedPosition, *, cost_model: CostModel | None = None, fill: HindsightFill | None = None
) -> HindsightExit | None:
    """The mark whose exit would have left the most net profit (the earliest such session on a tie),
    or None when the position has no mark. Each candidate pays the exit leg's costs at its fill
    price, computed by ``vocabulary.costs.order_costs`` and netted by ``vocabulary.exits.realised_pnl``."""
    model = cost_model if cost_model is not None else CostModel()
    best: HindsightExit | None = None
    for session, close in enumerate(position.closes):
        candidate = _exit_at(position, session, close, model, fill)
        if best is None or candidate.pnl > best.pnl:
            best = candidate
    return best


def _exit_at(
    position: ClosedPosition, session: int, close: Decimal, model: CostModel, fill: HindsightFill | None
) -> HindsightExit:
    side = exit_side(position.direction)
    price = close
    if fill is not None:
        price = fill_price(side=side, reference=close, slippage_bps=fill.slippage_bps, tick=fill.tick)
    costs = order_costs(side, position.quantity, price, model).total
    pnl = realised_pnl(
        direction=position.direction,
        quantity=position.quantity,
        entry_price=position.entry_price,
        exit_price=price,
        entry_costs=position.entry_costs,
        exit_costs=costs,
    )
    return HindsightExit(session=session, mark=close, price=price, exit_costs=costs, pnl=pnl)


def _marked_pnl(position: ClosedPosition, close: Decimal) -> Decimal:
    gross = mark(
        direction=position.direction, quantity=position.quantity, entry_price=position.entry_price, mark_price=close
    )
    return _to_paise(gross - position.entry_costs)


def _checked_checkpoints(checkpoints: Sequence[int]) -> list[int]:
    for checkpoint in checkpoints:
        if isinstance(checkpoint, bool) or not isinstance(checkpoint, int) or checkpoint < 0:
            raise ValueError(f"a checkpoint is a whole number of sessions after entry, got {checkpoint!r}")
    return list(checkpoints)


def _check_quantity(quantity: int) -> None:
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity <= 0:
        raise ValueError(f"quantity must be a positive whole number of shares, got {quantity!r}")


def _check_prices(position: ClosedPosition) -> None:
    named = [("entry_price", position.entry_price), ("exit_price", position.exit_price)]
    named += [(f"closes[{session}]", close) for session, close in enumerate(position.closes)]
    for name, price in named:
        if not isinstance(price, Decimal) or not price.is_finite() or price <= 0:
            raise ValueError(f"{name} must be a positive finite Decimal, got {price!r}")


def _check_costs(position: ClosedPosition) -> None:
    for name, amount in (("entry_costs", position.entry_costs), ("exit_costs", position.exit_costs)):
        if not isinstance(amount, Decimal) or not amount.is_finite() or amount < 0:
            raise ValueError(f"{name} must be a finite, non-negative Decimal, got {amount!r}")


def _check_sessions(position: ClosedPosition) -> None:
    session = position.exit_session
    if isinstance(session, bool) or not isinstance(session, int) or session < 0:
        raise ValueError(f"exit_session must be a whole number of sessions after entry, got {session!r}")
    # One mark for each session before the exit, and perhaps one for the exit session itself.
    if len(position.closes) not in (session, session + 1):
        raise ValueError(
            f"a position closed in session {session} has {session} or {session + 1} marks, got {len(position.closes)}"
        )


def _check_realised(position: ClosedPosition) -> None:
    expected = realised_pnl(
        direction=position.direction,
        quantity=position.quantity,
        entry_price=position.entry_price,
        exit_price=position.exit_price,
        entry_costs=position.entry_costs,
        exit_costs=position.exit_costs,
    )
    if not isinstance(position.realised_pnl, Decimal) or position.realised_pnl != expected:
        raise ValueError(
            f"realised_pnl {position.realised_pnl!r} does not match the prices and costs given ({expected})"
        )


def _to_paise(amount: Decimal) -> Decimal:
    return amount.quantize(PAISE, rounding=ROUND_HALF_UP)


def _plain(value: Decimal) -> str:
    return f"{value:f}"
