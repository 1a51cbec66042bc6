"""Corporate actions on the book: splits and bonuses adjust an open position, dividends pay cash.

Run by the daily book pass before it marks (``broker.positions_mark``), for the positions held
into an ex-date (opened before it, open on it). Each (position, action) is applied exactly once:
the position's row is locked and its ``adjustments`` list (the position's corporate-action
history, oldest first) is checked for the action's id before anything changes, so a retried or
repeated pass changes nothing. On one ex-date a split or bonus is applied before a dividend, so
the dividend is paid on the shares held after the change.

- Split or bonus: quantity × factor (a fraction of a share is returned in cash at the adjusted
  entry price, so the trade's result is unchanged), entry, stop, target and mark ÷ factor; audited
  ``position_adjusted``. No exit is triggered by the change itself: the levels move with the price.
- Dividend: ``amount × quantity`` to a long position's account cash (a short pays it), rounded
  against the trader to the paisa; it accumulates on ``Position.dividends`` and is part of the
  position's realised PnL when it closes; audited ``dividend_received`` / ``dividend_paid``.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from trading.audit import audit_record
from trading.market.domain.adjust import ShareChange, adjusted_levels
from trading.models import Account, CorporateAction, Position

__all__ = ["corporate_actions_apply", "dividend_cash", "share_change_between"]

PAISE = Decimal("0.01")
_ORDER: dict[str, int] = {"split": 0, "bonus": 0, "dividend": 1}  # a share change before a dividend


def dividend_cash(*, direction: str, amount: Decimal, quantity: int) -> Decimal:
    """What a position receives (+, long) or pays (−, short) for a dividend of ``amount`` per share,
    to the paisa, rounded against the trader (a long receives it rounded down, a short pays it rounded up)."""
    gross = amount * quantity
    if direction == "LONG":
        return gross.quantize(PAISE, rounding=ROUND_FLOOR)
    return -gross.quantize(PAISE, rounding=ROUND_CEILING)


def share_change_between(instrument_id: int, after: dt.date, until: dt.date) -> CorporateAction | None:
    """The first split or bonus with an ex-date in (after, until]: an order placed before it and filled
    after it would fill in new share units against a thesis priced in old ones."""
    return (
        CorporateAction.objects.filter(
            instrument_id=instrument_id,
            kind__in=[CorporateAction.Kind.SPLIT, CorporateAction.Kind.BONUS],
            ex_date__gt=after,
            ex_date__lte=until,
        )
        .order_by("ex_date")
        .first()
    )


def _applied(position: Position, action_id: int) -> bool:
    return any(isinstance(entry, dict) and entry.get("action") == action_id for entry in position.adjustments)


def _apply_share_change(position: Position, action: CorporateAction) -> dict[str, Any]:
    change = ShareChange(ex_date=action.ex_date, ratio_old=action.ratio_old or 1, ratio_new=action.ratio_new or 1)
    levels = adjusted_levels(
        direction=position.direction,
        quantity=position.quantity,
        entry_price=position.entry_price,
        stop=position.stop,
        target=position.target,
        last_mark=position.last_mark,
        change=change,
    )
    entry = {
        "action": action.pk,
        "kind": action.kind,
        "ex_date": action.ex_date.isoformat(),
        "ratio": f"{action.ratio_old}:{action.ratio_new}",
        "quantity": [position.quantity, levels.quantity],
        "entry_price": [str(position.entry_price), str(levels.entry_price)],
        "stop": [str(position.stop), str(levels.stop)],
        "target": [str(position.target), str(levels.target)],
        "cash_in_lieu": str(levels.cash_in_lieu),
    }
    Position.objects.filter(pk=position.pk).update(
        quantity=levels.quantity,
        entry_price=levels.entry_price,
        stop=levels.stop,
        target=levels.target,
        last_mark=levels.last_mark,
        adjustments=[*position.adjustments, entry],
    )
    if levels.cash_in_lieu:
        Account.objects.filter(pk=position.account_id).update(cash=F("cash") + levels.cash_in_lieu)
    audit_record(
        action="position_adjusted",
        target=f"position {position.pk}",
        reason=f"{action.kind} {action.ratio_old}:{action.ratio_new} ex {action.ex_date}",
        details=entry,
    )
    return entry


def _apply_dividend(position: Position, action: CorporateAction) -> dict[str, Any]:
    cash = dividend_cash(direction=position.direction, amount=action.amount or Decimal(0), quantity=position.quantity)
    entry = {
        "action": action.pk,
        "kind": action.kind,
        "ex_date": action.ex_date.isoformat(),
        "amount": str(action.amount),
        "quantity": position.quantity,
        "cash": str(cash),
    }
    Position.objects.filter(pk=position.pk).update(
        dividends=F("dividends") + cash, adjustments=[*position.adjustments, entry]
    )
    Account.objects.filter(pk=position.account_id).update(cash=F("cash") + cash)
    audit_record(
        action="dividend_received" if cash >= 0 else "dividend_paid",
        target=f"position {position.pk}",
        reason=f"dividend {action.amount} per share ex {action.ex_date}",
        details=entry,
    )
    return entry


def _applied_ids(adjustments: object) -> set[int]:
    if not isinstance(adjustments, list):
        return set()
    return {entry["action"] for entry in adjustments if isinstance(entry, dict) and "action" in entry}


def corporate_actions_apply(*, as_of: dt.date, account: Account | None = None) -> int:
    """Apply every corporate action with an ex-date on or before ``as_of`` to the open positions
    held into it (opened before the ex-date) that have not had it yet. Returns how many
    (position, action) pairs were applied now. Two queries on a day with nothing to do."""
    positions = Position.objects.filter(status=Position.Status.OPEN, opened_on__lt=as_of)
    if account is not None:
        positions = positions.filter(account=account)
    held = list(positions.order_by("id").values_list("pk", "instrument_id", "opened_on", "adjustments"))
    if not held:
        return 0
    actions = list(
        CorporateAction.objects.filter(
            ex_date__lte=as_of,
            ex_date__gt=min(opened_on for _, _, opened_on, _ in held),
            instrument_id__in={instrument_id for _, instrument_id, _, _ in held},
        )
    )
    actions.sort(key=lambda action: (action.ex_date, _ORDER.get(action.kind, 2), action.pk))
    applied = 0
    for position_id, instrument_id, opened_on, adjustments in held:
        done = _applied_ids(adjustments)
        due = [
            action
            for action in actions
            if action.instrument_id == instrument_id and opened_on < action.ex_date and action.pk not in done
        ]
        for action in due:
            with transaction.atomic():
                # Locked and checked again: a concurrent or retried pass applies nothing twice.
                position = Position.objects.select_for_update().get(pk=position_id)
                if position.status != Position.Status.OPEN or _applied(position, action.pk):
                    continue
                if action.kind == CorporateAction.Kind.DIVIDEND:
                    _apply_dividend(position, action)
                else:
                    _apply_share_change(position, action)
                CorporateAction.objects.filter(pk=action.pk, applied_at__isnull=True).update(applied_at=timezone.now())
                applied += 1
    return applied
