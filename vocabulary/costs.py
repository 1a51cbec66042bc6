"""What an Indian equity order costs, computed by code from a configurable table of charges.

The defaults are NSE delivery (CNC) charges as published for 2024-25. Charges change by exchange
circular and broker plan, so they are defaults for the desk to override from settings
(``CostModel.from_mapping``), not facts for all time.

Every ``*_pct`` field is a percentage of the order's turnover (price x quantity): ``0.1`` means
0.1%. Rupee amounts are per order.

Rounding: each component is rounded to the paisa (ROUND_HALF_UP to 0.01); GST is computed on the
already rounded brokerage, exchange charge and SEBI fee, the way a contract note charges it; the
total is the sum of the rounded components, so the parts always add up to the whole. (Contract
notes round STT and stamp duty to the rupee; we keep paise so small paper orders are not
distorted.) Not modelled: depository (DP) charges on delivery sells and the NSE IPFT charge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal

__all__ = ["CostBreakdown", "CostModel", "Side", "as_side", "order_costs"]

Side = Literal["BUY", "SELL"]

PAISE = Decimal("0.01")
HUNDRED = Decimal(100)
ZERO_RUPEES = Decimal("0.00")


def as_side(value: str) -> Side:
    """A stored order side (a text column) as the word the pure code takes; anything else is refused."""
    if value == "BUY":
        return "BUY"
    if value == "SELL":
        return "SELL"
    raise ValueError(f"side must be BUY or SELL, got {value!r}")


@dataclass(frozen=True)
class CostModel:
    """Charges per order. ``*_pct`` are percentages of turnover; ``brokerage_flat``/``_cap`` are ₹ per order."""

    # Brokerage = brokerage_flat + min(brokerage_pct of turnover, brokerage_cap). Many discount
    # brokers charge nothing on delivery; "0.03% up to ₹20" is brokerage_pct=0.03, brokerage_cap=20.
    brokerage_flat: Decimal = Decimal(0)  # ₹ per order
    brokerage_pct: Decimal = Decimal(0)  # % of turnover
    brokerage_cap: Decimal | None = None  # ₹ per order, caps the percentage part; None = no cap
    # Securities Transaction Tax, delivery: 0.1% on both the buy and the sell turnover.
    stt_buy_pct: Decimal = Decimal("0.1")
    stt_sell_pct: Decimal = Decimal("0.1")
    # NSE exchange transaction charge: 0.00297% of turnover (since 1 Oct 2024).
    exchange_txn_pct: Decimal = Decimal("0.00297")
    # SEBI turnover fee: ₹10 per crore = 10 / 1,00,00,000 = 0.0001% of turnover.
    sebi_fee_pct: Decimal = Decimal("0.0001")
    # Stamp duty, delivery: 0.015% of turnover, buy side only.
    stamp_duty_buy_pct: Decimal = Decimal("0.015")
    # GST: 18% on brokerage + exchange charge + SEBI fee (not on STT or stamp duty).
    gst_pct: Decimal = Decimal(18)

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.name == "brokerage_cap":
                continue
            _check_charge(field.name, value)

    @classmethod
    def from_mapping(cls, values: object) -> CostModel:
        """The defaults with any field overridden, e.g. ``{"brokerage_flat": "20"}`` from settings.

        Values are Decimal strings (ints and Decimals pass too). Floats are refused because
        binary fractions are not exact money; unknown names are refused so a typo fails loudly.
        ``brokerage_cap`` may be None or blank for "no cap". Takes any object because settings
        hold whatever JSON was configured; anything but a mapping is refused.
        """
        if not isinstance(values, Mapping):
            raise ValueError(
                f'cost overrides must map field names to amounts, e.g. {{"brokerage_flat": "20"}}; got {values!r}'
            )
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown cost fields {unknown}; known fields are {sorted(known)}")
        # Any: the names were checked just above and each value is checked by __post_init__.
        overrides: dict[str, Any] = {name: _parse_charge(name, raw) for name, raw in values.items()}
        return cls(**overrides)


@dataclass(frozen=True)
class CostBreakdown:
    """The charges on one order, each in ₹ rounded to the paisa."""

    brokerage: Decimal
    stt: Decimal
    exchange_charge: Decimal
    sebi_fee: Decimal
    stamp_duty: Decimal
    gst: Decimal

    @property
    def total(self) -> Decimal:
        # The components are already rounded, so their sum is exact and the parts add up.
        return self.brokerage + self.stt + self.exchange_charge + self.sebi_fee + self.stamp_duty + self.gst

    def to_dict(self) -> dict[str, str]:
        """JSON-friendly: each component and the total as plain Decimal strings."""
        return {
            "brokerage": _plain(self.brokerage),
            "stt": _plain(self.stt),
            "exchange_charge": _plain(self.exchange_charge),
            "sebi_fee": _plain(self.sebi_fee),
            "stamp_duty": _plain(self.stamp_duty),
            "gst": _plain(self.gst),
            "total": _plain(self.total),
        }


def order_costs(side: Side, quantity: int, price: Decimal, model: CostModel) -> CostBreakdown:
    """The charges on one order of ``quantity`` shares at ``price`` under ``model``."""
    _check_order(side, quantity, price)
    turnover = price * quantity
    brokerage = _to_paise(_brokerage(turnover, model))
    exchange_charge = _to_paise(_percent_of(turnover, model.exchange_txn_pct))
    sebi_fee = _to_paise(_percent_of(turnover, model.sebi_fee_pct))
    stt_pct = model.stt_buy_pct if side == "BUY" else model.stt_sell_pct
    stamp_duty = _to_paise(_percent_of(turnover, model.stamp_duty_buy_pct)) if side == "BUY" else ZERO_RUPEES
    return CostBreakdown(
        brokerage=brokerage,
        stt=_to_paise(_percent_of(turnover, stt_pct)),
        exchange_charge=exchange_charge,
        sebi_fee=sebi_fee,
        stamp_duty=stamp_duty,
        gst=_to_paise(_percent_of(brokerage + exchange_charge + sebi_fee, model.gst_pct)),
    )


def _brokerage(turnover: Decimal, model: CostModel) -> Decimal:
    percentage_part = _percent_of(turnover, model.brokerage_pct)
    if model.brokerage_cap is not None:
        percentage_part = min(percentage_part, model.brokerage_cap)
    return model.brokerage_flat + percentage_part


def _percent_of(amount: Decimal, pct: Decimal) -> Decimal:
    return amount * pct / HUNDRED


def _to_paise(amount: Decimal) -> Decimal:
    return amount.quantize(PAISE, rounding=ROUND_HALF_UP)


def _plain(value: Decimal) -> str:
    return f"{value:f}"


def _check_order(side: str, quantity: int, price: Decimal) -> None:
    if side not in ("BUY", "SELL"):
        raise ValueError(f"side must be BUY or SELL, got {side!r}")
    # bool is an int subclass; True shares is a bug, not one share.
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity <= 0:
        raise ValueError(f"quantity must be a positive whole number of shares, got {quantity!r}")
    if not isinstance(price, Decimal) or not price.is_finite() or price <= 0:
        raise ValueError(f"price must be a positive finite Decimal, got {price!r}")


def _check_charge(name: str, value: object) -> None:
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a Decimal, got {type(value).__name__}")
    if not value.is_finite() or value < 0:
        raise ValueError(f"{name} must be a finite, non-negative amount, got {value}")


def _parse_charge(name: str, raw: object) -> Decimal | None:
    if name == "brokerage_cap" and (raw is None or (isinstance(raw, str) and not raw.strip())):
        return None
    # Floats are not exact money; bools are ints by accident of Python, never a charge.
    if isinstance(raw, bool) or not isinstance(raw, (str, int, Decimal)):
        raise ValueError(f"{name} must be a Decimal string, got {raw!r}")
    try:
        value = Decimal(str(raw).strip())
    except InvalidOperation as error:
        raise ValueError(f"{name} is not a number: {raw!r}") from error
    if not value.is_finite() or value < 0:
        raise ValueError(f"{name} must be a finite, non-negative amount, got {raw!r}")
    return value
