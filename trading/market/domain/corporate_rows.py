"""One row of a corporate-actions file, checked: a split, a bonus or a cash dividend.

Columns: ``symbol, exchange, kind, ex_date, ratio_old, ratio_new, amount``. ``exchange`` may be
blank (the symbol must then be unambiguous). A split or a bonus has both ratios (a 1:5 split is
old 1, new 5; a 1:1 bonus is old 1, new 2) and no amount; a dividend has an amount per share and
no ratios. The ex-date may lie ahead (an announced action is applied only from its ex-date); the
import checks it against the instrument's exchange calendar once the symbol is resolved.

Pure: no Django.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from trading.market.domain.csv_rows import RowProblem

__all__ = ["CORPORATE_ACTION_COLUMNS", "KINDS", "CorporateActionRow", "CorporateActionValidator"]

CORPORATE_ACTION_COLUMNS = ("symbol", "kind", "ex_date")
KINDS = ("split", "bonus", "dividend")
MAX_AMOUNT_PLACES = 4


@dataclass(frozen=True)
class CorporateActionRow:
    line: int
    symbol: str  # "EXCH:SYM" when the file names the exchange
    exchange: str
    kind: str
    ex_date: dt.date
    ratio_old: int | None
    ratio_new: int | None
    amount: Decimal | None

    @property
    def key(self) -> tuple[str, str, dt.date]:
        return self.symbol, self.kind, self.ex_date


def _ratio(text: str, column: str) -> int | str:
    try:
        value = int(text)
    except ValueError:
        return f"{column} {text!r} is not a whole number"
    return value if value >= 1 else f"{column} must be at least 1, not {value}"


def _ex_date(text: str, floor: dt.date, latest: dt.date, problems: list[str]) -> dt.date | None:
    try:
        ex_date = dt.date.fromisoformat(text)
    except ValueError:
        problems.append(f"ex_date {text!r} is not a date (YYYY-MM-DD)")
        return None
    if ex_date < floor:
        problems.append(f"ex_date {ex_date} is before {floor}, the earliest date the desk accepts")
    elif ex_date > latest:
        problems.append(f"ex_date {ex_date} is after {latest}, more than a year ahead")
    return ex_date


def _ratios(kind: str, raw: dict[str, str], problems: list[str]) -> tuple[int | None, int | None]:
    old_text, new_text = raw.get("ratio_old", "").strip(), raw.get("ratio_new", "").strip()
    if amount := raw.get("amount", "").strip():
        problems.append(f"a {kind} has no amount (got {amount!r})")
    if not old_text or not new_text:
        problems.append(f"a {kind} needs ratio_old and ratio_new (a 1:5 split is 1 and 5)")
        return None, None
    old, new = _ratio(old_text, "ratio_old"), _ratio(new_text, "ratio_new")
    problems += [value for value in (old, new) if isinstance(value, str)]
    if not (isinstance(old, int) and isinstance(new, int)):
        return None, None
    if old == new:
        problems.append(f"ratio {old}:{new} changes nothing")
    elif kind == "bonus" and new < old:
        problems.append(f"a bonus adds shares: ratio_new {new} must exceed ratio_old {old}")
    return old, new


def _amount(raw: dict[str, str], problems: list[str]) -> Decimal | None:
    if raw.get("ratio_old", "").strip() or raw.get("ratio_new", "").strip():
        problems.append("a dividend has no ratios")
    text = raw.get("amount", "").strip()
    try:
        amount = Decimal(text)
    except InvalidOperation:
        problems.append(f"amount {text!r} is not a number (a dividend needs its amount per share)")
        return None
    exponent = amount.as_tuple().exponent
    if not amount.is_finite() or amount <= 0:
        problems.append(f"amount {text} must be more than 0")
    elif isinstance(exponent, int) and -exponent > MAX_AMOUNT_PLACES:
        problems.append(f"amount {text} has more than {MAX_AMOUNT_PLACES} decimal places")
    return amount


@dataclass(frozen=True)
class CorporateActionValidator:
    """Checks a row's fields and its ex-date against the dates the desk accepts."""

    floor: dt.date
    latest: dt.date  # the furthest ex-date ahead the desk accepts (an announcement, not a guess)

    def check(self, line: int, raw: dict[str, str]) -> CorporateActionRow | RowProblem:
        problems: list[str] = []
        symbol = raw.get("symbol", "").strip().upper()
        exchange = raw.get("exchange", "").strip().upper()
        kind = raw.get("kind", "").strip().lower()
        if not symbol:
            problems.append("symbol is empty")
        if kind not in KINDS:
            problems.append(f"kind {raw.get('kind', '')!r} is not one of {', '.join(KINDS)}")
        ex_date = _ex_date(raw.get("ex_date", "").strip(), self.floor, self.latest, problems)
        ratio_old = ratio_new = None
        amount = None
        if kind in ("split", "bonus"):
            ratio_old, ratio_new = _ratios(kind, raw, problems)
        elif kind == "dividend":
            amount = _amount(raw, problems)
        if problems or ex_date is None:
            return RowProblem(line, "; ".join(problems))
        return CorporateActionRow(
            line=line,
            symbol=f"{exchange}:{symbol}" if exchange else symbol,
            exchange=exchange,
            kind=kind,
            ex_date=ex_date,
            ratio_old=ratio_old,
            ratio_new=ratio_new,
            amount=amount,
        )
