"""The risk engine: size a trade from its stop distance and run the seven checks. No model involved.

Money is Decimal throughout. Every check is always evaluated and reported, so the approval screen
shows the whole picture rather than the first failure. The price forecast is deliberately not an
input here: sizing and risk depend only on the levels, the limits and the portfolio.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

from agents.domain.schemas import Direction

__all__ = [
    "CHECK_NAMES",
    "PortfolioReader",
    "PortfolioState",
    "RiskCheck",
    "RiskDecision",
    "RiskLimits",
    "evaluate_risk",
    "format_rupees",
]

CHECK_NAMES: tuple[str, ...] = (
    "degenerate_thesis",
    "size_nonzero",
    "daily_loss_cap",
    "margin_sufficient",
    "max_notional_pct",
    "max_positions",
    "exposure_cap",
)

PAISE = Decimal("0.01")
HUNDRED = Decimal(100)


@dataclass(frozen=True)
class RiskLimits:
    """The desk's limits. Percentages are of capital; ``daily_loss_cap`` is an absolute rupee amount."""

    daily_loss_cap: Decimal
    risk_per_trade_pct: Decimal = Decimal("1.0")
    max_notional_pct: Decimal = Decimal(20)
    max_positions: int = 5
    exposure_cap_pct: Decimal = Decimal(100)

    def __post_init__(self) -> None:
        if self.risk_per_trade_pct <= 0:
            raise ValueError(f"risk_per_trade_pct must be positive, got {self.risk_per_trade_pct}")
        if self.daily_loss_cap < 0 or self.max_notional_pct < 0 or self.exposure_cap_pct < 0:
            raise ValueError("daily_loss_cap, max_notional_pct and exposure_cap_pct must not be negative")
        if self.max_positions < 0:
            raise ValueError(f"max_positions must not be negative, got {self.max_positions}")


@dataclass(frozen=True)
class PortfolioState:
    """What the account looks like now. ``realised_loss_today`` is positive when the day is down."""

    capital: Decimal
    available_cash: Decimal
    open_positions: int
    gross_exposure: Decimal
    realised_loss_today: Decimal


class PortfolioReader(Protocol):
    """Where the glue gets a ``PortfolioState``: an account row today, live positions later."""

    def state(self) -> PortfolioState: ...


@dataclass(frozen=True)
class RiskCheck:
    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class RiskDecision:
    """The size and the seven checks. Approved only when every check passed."""

    checks: tuple[RiskCheck, ...]
    quantity: int
    risk_amount: Decimal
    notional: Decimal
    stop_distance: Decimal

    @property
    def approved(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def rejections(self) -> list[str]:
        return [check.name for check in self.checks if not check.passed]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: Decimals become plain (non-scientific) strings."""
        return {
            "approved": self.approved,
            "quantity": self.quantity,
            "risk_amount": _plain(self.risk_amount),
            "notional": _plain(self.notional),
            "stop_distance": _plain(self.stop_distance),
            "rejections": self.rejections,
            "checks": [check.to_dict() for check in self.checks],
        }


def _plain(value: Decimal) -> str:
    return f"{value:f}"


def _percent(value: Decimal) -> str:
    return f"{value.normalize():f}%"


def _indian_grouping(digits: str) -> str:
    """'12345678' -> '1,23,45,678': the last three digits, then pairs (lakh, crore)."""
    if len(digits) <= 3:
        return digits
    head, last_three = digits[:-3], digits[-3:]
    pairs = []
    while len(head) > 2:
        pairs.insert(0, head[-2:])
        head = head[:-2]
    return ",".join([head, *pairs, last_three])


def format_rupees(amount: Decimal) -> str:
    """'₹1,20,000.00': rupees to the paisa, grouped the Indian way."""
    rounded = amount.quantize(PAISE, rounding=ROUND_HALF_UP)
    sign = "-" if rounded < 0 else ""
    whole, paise = f"{abs(rounded):f}".split(".")
    return f"{sign}₹{_indian_grouping(whole)}.{paise}"


def _geometry_is_sound(direction: Direction, entry: Decimal, stop: Decimal, target: Decimal) -> bool:
    if min(entry, stop, target) <= 0:
        return False
    if direction == "LONG":
        return stop < entry < target
    return target < entry < stop


def _size(*, risk_budget: Decimal, stop_distance: Decimal, lot_size: int) -> int:
    """floor(risk budget / stop distance), then down to whole lots; never negative."""
    # Both operands are positive here, so Decimal's truncating // is an exact floor.
    shares = int(risk_budget // stop_distance)
    return max(0, shares - shares % lot_size)


def _check_degenerate(direction: Direction, entry: Decimal, stop: Decimal, target: Decimal, sound: bool) -> RiskCheck:
    expected = "stop < entry < target" if direction == "LONG" else "target < entry < stop"
    levels = f"entry {format_rupees(entry)}, stop {format_rupees(stop)}, target {format_rupees(target)}"
    verdict = "holds" if sound else "violated"
    return RiskCheck(
        "degenerate_thesis", sound, f"{direction} needs positive prices and {expected}: {verdict} ({levels})"
    )


def _check_size(
    quantity: int, *, sound: bool, risk_budget: Decimal, stop_distance: Decimal, lot_size: int
) -> RiskCheck:
    if not sound:
        return RiskCheck("size_nonzero", False, "quantity 0: no size for a degenerate thesis")
    detail = (
        f"quantity {quantity}: risk budget {format_rupees(risk_budget)} / stop distance "
        f"{format_rupees(stop_distance)}, in lots of {lot_size}"
    )
    return RiskCheck("size_nonzero", quantity >= 1, detail)


def _check_daily_loss(realised_loss_today: Decimal, risk_amount: Decimal, cap: Decimal) -> RiskCheck:
    # A profitable morning is not licence to lose more than the cap: profits count as zero loss.
    loss_so_far = max(realised_loss_today, Decimal(0))
    worst_case = loss_so_far + risk_amount
    passed = worst_case <= cap
    detail = (
        f"loss today {format_rupees(loss_so_far)} + trade risk {format_rupees(risk_amount)} = "
        f"{format_rupees(worst_case)} {'≤' if passed else '>'} daily cap {format_rupees(cap)}"
    )
    return RiskCheck("daily_loss_cap", passed, detail)


def _check_margin(notional: Decimal, available_cash: Decimal) -> RiskCheck:
    passed = notional <= available_cash
    sign = "≤" if passed else ">"
    detail = f"notional {format_rupees(notional)} {sign} available cash {format_rupees(available_cash)}"
    return RiskCheck("margin_sufficient", passed, detail)


def _check_max_notional(notional: Decimal, capital: Decimal, max_notional_pct: Decimal) -> RiskCheck:
    limit = capital * max_notional_pct / HUNDRED
    passed = notional <= limit
    detail = (
        f"notional {format_rupees(notional)} {'≤' if passed else '>'} {format_rupees(limit)} "
        f"({_percent(max_notional_pct)} of capital {format_rupees(capital)})"
    )
    return RiskCheck("max_notional_pct", passed, detail)


def _check_positions(open_positions: int, max_positions: int) -> RiskCheck:
    passed = open_positions < max_positions
    detail = f"{open_positions} open position(s) {'<' if passed else '≥'} limit {max_positions}"
    return RiskCheck("max_positions", passed, detail)


def _check_exposure(
    gross_exposure: Decimal, notional: Decimal, capital: Decimal, exposure_cap_pct: Decimal
) -> RiskCheck:
    after = gross_exposure + notional
    limit = capital * exposure_cap_pct / HUNDRED
    passed = after <= limit
    detail = (
        f"gross exposure {format_rupees(gross_exposure)} + notional {format_rupees(notional)} = "
        f"{format_rupees(after)} {'≤' if passed else '>'} {format_rupees(limit)} "
        f"({_percent(exposure_cap_pct)} of capital {format_rupees(capital)})"
    )
    return RiskCheck("exposure_cap", passed, detail)


def evaluate_risk(
    *,
    direction: Direction,
    entry: Decimal,
    stop: Decimal,
    target: Decimal,
    lot_size: int,
    limits: RiskLimits,
    portfolio: PortfolioState,
) -> RiskDecision:
    """Size the trade so a stop-out loses ``risk_per_trade_pct`` of capital at most, then run all seven checks.

    quantity = floor(capital x risk_per_trade_pct / 100 / |entry - stop|), rounded down to a
    multiple of ``lot_size``; 0 when the thesis geometry is degenerate. No check short-circuits.
    """
    if lot_size < 1:
        raise ValueError(f"lot_size must be at least 1, got {lot_size}")
    sound = _geometry_is_sound(direction, entry, stop, target)
    stop_distance = abs(entry - stop)
    risk_budget = portfolio.capital * limits.risk_per_trade_pct / HUNDRED
    quantity = _size(risk_budget=risk_budget, stop_distance=stop_distance, lot_size=lot_size) if sound else 0
    risk_amount = quantity * stop_distance
    notional = quantity * entry

    checks = (
        _check_degenerate(direction, entry, stop, target, sound),
        _check_size(quantity, sound=sound, risk_budget=risk_budget, stop_distance=stop_distance, lot_size=lot_size),
        _check_daily_loss(portfolio.realised_loss_today, risk_amount, limits.daily_loss_cap),
        _check_margin(notional, portfolio.available_cash),
        _check_max_notional(notional, portfolio.capital, limits.max_notional_pct),
        _check_positions(portfolio.open_positions, limits.max_positions),
        _check_exposure(portfolio.gross_exposure, notional, portfolio.capital, limits.exposure_cap_pct),
    )
    return RiskDecision(
        checks=checks, quantity=quantity, risk_amount=risk_amount, notional=notional, stop_distance=stop_distance
    )
