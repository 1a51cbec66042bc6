"""The risk engine: size a trade to fit the limits and run every check. No model involved.

Money is Decimal throughout. Every check is always evaluated and reported, so the approval screen
shows the whole picture rather than the first failure. The price forecast is deliberately not an
input here: sizing and risk depend only on the levels, the limits and the portfolio.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

from vocabulary.money import format_money
from vocabulary.trade import Direction

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
    "short_allowed",
    "size_nonzero",
    "daily_loss_cap",
    "margin_sufficient",
    "max_notional_pct",
    "max_positions",
    "exposure_cap",
    "instrument_concentration",
)

PAISE = Decimal("0.01")
HUNDRED = Decimal(100)


@dataclass(frozen=True)
class RiskLimits:
    """The desk's limits. Percentages are of capital; ``daily_loss_cap`` is an absolute amount in
    the account's currency. ``max_instrument_pct`` caps one instrument's live exposure (held and
    working); None means the same share as ``max_notional_pct``. ``allow_short`` is the account's:
    a cash delivery account (NSE's default) cannot carry a short overnight."""

    daily_loss_cap: Decimal
    risk_per_trade_pct: Decimal = Decimal("1.0")
    max_notional_pct: Decimal = Decimal(20)
    max_positions: int = 5
    exposure_cap_pct: Decimal = Decimal(100)
    max_instrument_pct: Decimal | None = None
    allow_short: bool = False
    currency: str = "INR"

    def __post_init__(self) -> None:
        if self.risk_per_trade_pct <= 0:
            raise ValueError(f"risk_per_trade_pct must be positive, got {self.risk_per_trade_pct}")
        if self.daily_loss_cap < 0 or self.max_notional_pct < 0 or self.exposure_cap_pct < 0:
            raise ValueError("daily_loss_cap, max_notional_pct and exposure_cap_pct must not be negative")
        if self.max_instrument_pct is not None and self.max_instrument_pct < 0:
            raise ValueError(f"max_instrument_pct must not be negative, got {self.max_instrument_pct}")
        if self.max_positions < 0:
            raise ValueError(f"max_positions must not be negative, got {self.max_positions}")

    @property
    def instrument_pct(self) -> Decimal:
        return self.max_notional_pct if self.max_instrument_pct is None else self.max_instrument_pct


@dataclass(frozen=True)
class PortfolioState:
    """The live book the checks run against.

    ``open_positions`` and ``working_orders`` both take a slot (an approved order is a position
    the moment it fills). ``gross_exposure`` is the held positions at their last mark plus the
    working orders at their entry; ``available_cash`` is cash less what working orders will
    spend; ``instrument_exposure`` is the part of the gross exposure in the thesis's own
    instrument. ``realised_loss_today`` is positive when the day is down."""

    capital: Decimal
    available_cash: Decimal
    open_positions: int
    gross_exposure: Decimal
    realised_loss_today: Decimal
    working_orders: int = 0
    instrument_exposure: Decimal = Decimal(0)

    @property
    def slots_taken(self) -> int:
        return self.open_positions + self.working_orders


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
    """The size and the checks. Approved only when every check passed."""

    checks: tuple[RiskCheck, ...]
    quantity: int
    risk_amount: Decimal
    notional: Decimal
    stop_distance: Decimal
    sizing: str = ""  # how the size was fitted to the limits, when the risk budget alone did not set it

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
            "sizing": self.sizing,
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
    pairs: list[str] = []
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


def _money(amount: Decimal, currency: str) -> str:
    return format_money(amount, currency)


def _geometry_is_sound(direction: Direction, entry: Decimal, stop: Decimal, target: Decimal) -> bool:
    if min(entry, stop, target) <= 0:
        return False
    if direction == "LONG":
        return stop < entry < target
    return target < entry < stop


def _whole_lots(shares: Decimal, lot_size: int) -> int:
    """Down to whole lots; never negative. Decimal's // truncates, which is a floor for positives."""
    whole = int(max(shares, Decimal(0)) // 1)
    return whole - whole % lot_size


@dataclass(frozen=True)
class _Room:
    """How many shares one limit leaves room for, and the words that say why."""

    check: str
    shares: Decimal
    why: str


def _rooms(*, entry: Decimal, stop_distance: Decimal, limits: RiskLimits, portfolio: PortfolioState) -> list[_Room]:
    money = limits.currency
    capital = portfolio.capital
    loss_room = limits.daily_loss_cap - max(portfolio.realised_loss_today, Decimal(0))
    notional_cap = capital * limits.max_notional_pct / HUNDRED
    exposure_room = capital * limits.exposure_cap_pct / HUNDRED - portfolio.gross_exposure
    instrument_room = capital * limits.instrument_pct / HUNDRED - portfolio.instrument_exposure
    return [
        _Room("daily_loss_cap", loss_room / stop_distance, f"the daily loss cap leaves {_money(loss_room, money)}"),
        _Room(
            "margin_sufficient",
            portfolio.available_cash / entry,
            f"available cash is {_money(portfolio.available_cash, money)}",
        ),
        _Room(
            "max_notional_pct",
            notional_cap / entry,
            f"max notional is {_money(notional_cap, money)} ({_percent(limits.max_notional_pct)} of capital)",
        ),
        _Room("exposure_cap", exposure_room / entry, f"the exposure cap leaves {_money(exposure_room, money)}"),
        _Room(
            "instrument_concentration",
            instrument_room / entry,
            f"the instrument cap leaves {_money(instrument_room, money)}",
        ),
    ]


@dataclass(frozen=True)
class _Sizing:
    quantity: int
    note: str
    no_room: _Room | None  # the limit that leaves not even one lot, when one does


def _fit_size(
    *,
    risk_budget: Decimal,
    entry: Decimal,
    stop_distance: Decimal,
    lot_size: int,
    limits: RiskLimits,
    portfolio: PortfolioState,
) -> _Sizing:
    """The risk budget's size, cut down to the tightest limit. A trade that fits no whole lot gets 0
    and the limit that left no room is named, so the refusal says what to change."""
    wanted = _whole_lots(risk_budget / stop_distance, lot_size)
    tightest = min(
        _rooms(entry=entry, stop_distance=stop_distance, limits=limits, portfolio=portfolio),
        key=lambda room: room.shares,
    )
    fitted = min(wanted, _whole_lots(tightest.shares, lot_size))
    if fitted == wanted:
        return _Sizing(wanted, "", None)
    if fitted == 0:
        return _Sizing(0, f"no room for one lot of {lot_size}: {tightest.why}", tightest if wanted else None)
    note = f"sized down from {wanted} to {fitted} to fit {tightest.check}: {tightest.why}"
    return _Sizing(fitted, note, None)


def _check_degenerate(
    direction: Direction, entry: Decimal, stop: Decimal, target: Decimal, sound: bool, currency: str
) -> RiskCheck:
    expected = "stop < entry < target" if direction == "LONG" else "target < entry < stop"
    levels = f"entry {_money(entry, currency)}, stop {_money(stop, currency)}, target {_money(target, currency)}"
    verdict = "holds" if sound else "violated"
    return RiskCheck(
        "degenerate_thesis", sound, f"{direction} needs positive prices and {expected}: {verdict} ({levels})"
    )


def _check_short(direction: Direction, allow_short: bool) -> RiskCheck:
    if direction == "LONG":
        return RiskCheck("short_allowed", True, "LONG: no short sale needed")
    if allow_short:
        return RiskCheck(
            "short_allowed", True, "SHORT: this account may carry a short (F&O, SLB or a market that allows it)"
        )
    return RiskCheck(
        "short_allowed",
        False,
        "SHORT refused: this is a cash delivery account, which cannot carry a short overnight "
        "(an account set to allow shorting, e.g. F&O or SLB, can)",
    )


def _check_size(
    quantity: int,
    *,
    sound: bool,
    risk_budget: Decimal,
    stop_distance: Decimal,
    lot_size: int,
    sizing: str,
    currency: str,
) -> RiskCheck:
    if not sound:
        return RiskCheck("size_nonzero", False, "quantity 0: no size for a degenerate thesis")
    detail = (
        f"quantity {quantity}: risk budget {_money(risk_budget, currency)} / stop distance "
        f"{_money(stop_distance, currency)}, in lots of {lot_size}"
    )
    if sizing:
        detail = f"{detail}; {sizing}"
    return RiskCheck("size_nonzero", quantity >= 1, detail)


def _check_daily_loss(realised_loss_today: Decimal, risk_amount: Decimal, cap: Decimal, currency: str) -> RiskCheck:
    # A profitable morning is not licence to lose more than the cap: profits count as zero loss.
    loss_so_far = max(realised_loss_today, Decimal(0))
    worst_case = loss_so_far + risk_amount
    passed = worst_case <= cap
    detail = (
        f"loss today {_money(loss_so_far, currency)} + trade risk {_money(risk_amount, currency)} = "
        f"{_money(worst_case, currency)} {'≤' if passed else '>'} daily cap {_money(cap, currency)}"
    )
    return RiskCheck("daily_loss_cap", passed, detail)


def _check_margin(notional: Decimal, portfolio: PortfolioState, currency: str) -> RiskCheck:
    passed = notional <= portfolio.available_cash
    sign = "≤" if passed else ">"
    committed = " after working orders" if portfolio.working_orders else ""
    detail = (
        f"notional {_money(notional, currency)} {sign} available cash{committed} "
        f"{_money(portfolio.available_cash, currency)}"
    )
    return RiskCheck("margin_sufficient", passed, detail)


def _check_max_notional(notional: Decimal, capital: Decimal, max_notional_pct: Decimal, currency: str) -> RiskCheck:
    limit = capital * max_notional_pct / HUNDRED
    passed = notional <= limit
    detail = (
        f"notional {_money(notional, currency)} {'≤' if passed else '>'} {_money(limit, currency)} "
        f"({_percent(max_notional_pct)} of capital {_money(capital, currency)})"
    )
    return RiskCheck("max_notional_pct", passed, detail)


def _check_positions(portfolio: PortfolioState, max_positions: int) -> RiskCheck:
    taken = portfolio.slots_taken
    passed = taken < max_positions
    counted = f"{portfolio.open_positions} open position(s)"
    if portfolio.working_orders:
        counted = f"{counted} + {portfolio.working_orders} working order(s) = {taken}"
    return RiskCheck("max_positions", passed, f"{counted} {'<' if passed else '≥'} limit {max_positions}")


def _check_cap(
    name: str, what: str, held: Decimal, notional: Decimal, capital: Decimal, pct: Decimal, currency: str
) -> RiskCheck:
    """``held`` + this trade's notional against ``pct`` of capital (the exposure cap, one instrument's cap)."""
    after = held + notional
    limit = capital * pct / HUNDRED
    passed = after <= limit
    detail = (
        f"{what} {_money(held, currency)} + notional {_money(notional, currency)} = "
        f"{_money(after, currency)} {'≤' if passed else '>'} {_money(limit, currency)} "
        f"({_percent(pct)} of capital {_money(capital, currency)})"
    )
    return RiskCheck(name, passed, detail)


def _no_room(check: RiskCheck, room: _Room | None) -> RiskCheck:
    """Fail the limit that left no room for a single lot, with its own figures."""
    if room is None or room.check != check.name or not check.passed:
        return check
    return RiskCheck(check.name, False, f"no room for one lot: {room.why}")


def evaluate_risk(
    *,
    direction: Direction,
    entry: Decimal,
    stop: Decimal,
    target: Decimal,
    lot_size: int,
    limits: RiskLimits,
    portfolio: PortfolioState,
    quantity: int | None = None,
) -> RiskDecision:
    """Size the trade and run every check; no check short-circuits.

    Sizing (``quantity`` None): floor(capital x risk_per_trade_pct / 100 / |entry - stop|) in
    whole lots, then cut down to the tightest of the daily loss room, available cash, max
    notional, exposure headroom and the instrument cap, and the decision says which limit cut
    it. A trade that cannot fit one lot is sized 0 and the limit that left no room fails.

    Re-checking (``quantity`` given: at approval, at fill): the size is fixed and every check
    runs against it, so a book that moved since the proposal refuses the trade instead.
    """
    if lot_size < 1:
        raise ValueError(f"lot_size must be at least 1, got {lot_size}")
    currency = limits.currency
    sound = _geometry_is_sound(direction, entry, stop, target)
    stop_distance = abs(entry - stop)
    risk_budget = portfolio.capital * limits.risk_per_trade_pct / HUNDRED
    if not sound:
        sizing = _Sizing(0, "", None)
    elif quantity is not None:
        sizing = _Sizing(quantity, "", None)
    else:
        sizing = _fit_size(
            risk_budget=risk_budget,
            entry=entry,
            stop_distance=stop_distance,
            lot_size=lot_size,
            limits=limits,
            portfolio=portfolio,
        )
    size = sizing.quantity
    risk_amount = size * stop_distance
    notional = size * entry
    checks: tuple[RiskCheck, ...] = (
        _check_degenerate(direction, entry, stop, target, sound, currency),
        _check_short(direction, limits.allow_short),
        _check_size(
            size,
            sound=sound,
            risk_budget=risk_budget,
            stop_distance=stop_distance,
            lot_size=lot_size,
            sizing=sizing.note,
            currency=currency,
        ),
        _check_daily_loss(portfolio.realised_loss_today, risk_amount, limits.daily_loss_cap, currency),
        _check_margin(notional, portfolio, currency),
        _check_max_notional(notional, portfolio.capital, limits.max_notional_pct, currency),
        _check_positions(portfolio, limits.max_positions),
        _check_cap(
            "exposure_cap",
            "gross exposure",
            portfolio.gross_exposure,
            notional,
            portfolio.capital,
            limits.exposure_cap_pct,
            currency,
        ),
        _check_cap(
            "instrument_concentration",
            "this instrument",
            portfolio.instrument_exposure,
            notional,
            portfolio.capital,
            limits.instrument_pct,
            currency,
        ),
    )
    checks = tuple(_no_room(check, sizing.no_room) for check in checks)
    return RiskDecision(
        checks=checks,
        quantity=size,
        risk_amount=risk_amount,
        notional=notional,
        stop_distance=stop_distance,
        sizing=sizing.note,
    )
