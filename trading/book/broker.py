"""Stages 9-11: the paper broker. Orders fill at a configurable reference price with slippage and
Indian equity costs; positions are marked daily and closed by stop, target, horizon or hand.

Every step claims its row with a conditional update first, so a retried task or a double click
cannot fill an order twice or close a position twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max

from trading.audit import audit_record
from trading.book.accounts import account_lock, account_portfolio, thesis_book_check
from trading.book.corporate import corporate_actions_apply, share_change_between
from trading.market.calendar import sessions_between
from trading.models import Account, BookPass, DailyBar, Order, Position, PositionMark, Thesis
from vocabulary.costs import CostModel, as_side, order_costs
from vocabulary.exits import check_exit, mark, realised_pnl
from vocabulary.fills import as_fill_policy, entry_side, exit_side, fill_price, reference_price
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict
from vocabulary.trade import as_direction

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class BrokerError(StateConflict):
    """The book cannot do it now (already closed, a replay's position, a price behind the last
    session): a state conflict, 409."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CloseNotAllowed(BrokerError, NotAllowed):
    """Only an approver closes a position by hand (403). The edges check the role first; this is
    the last guard."""


class CloseReasonMissing(BrokerError, InputRefused):
    """A close by hand needs a reason (400)."""


def cost_model() -> CostModel:
    return CostModel.from_mapping(settings.BROKER["COSTS"])


def _latest_bar(instrument_id: int, *, on_or_before: dt.date | None = None) -> DailyBar | None:
    bars = DailyBar.objects.filter(instrument_id=instrument_id)
    if on_or_before is not None:
        bars = bars.filter(date__lte=on_or_before)
    return bars.order_by("-date").first()


def order_place(*, thesis: Thesis, account: Account, placed_on: dt.date | None = None) -> Order:
    """The order for an approved thesis (one per thesis: the OneToOne refuses a second)."""
    placed_on = placed_on or thesis.run.as_of
    order = Order.objects.create(
        thesis=thesis,
        account=account,
        instrument=thesis.instrument,
        side=entry_side(as_direction(thesis.direction)),
        quantity=thesis.quantity,
        fill_policy=str(settings.BROKER["FILL_POLICY"]),
        slippage_bps=Decimal(str(settings.BROKER["SLIPPAGE_BPS"])),
        placed_on=placed_on,
    )
    if order.fill_policy == "last_price":
        order_try_fill(order=order)
    elif not thesis.run.is_replay:  # a replay fills its orders in its own daily pass
        transaction.on_commit(lambda: _queue_fill(order.pk))
    return order


def _queue_fill(order_id: int) -> None:
    # Sent by name: the broker stays importable without the task module (and what it imports).
    current_app.send_task("trading.fill_order", args=[order_id])


def order_try_fill(*, order: Order, as_of: dt.date | None = None) -> Position | None:
    """Fill a working order if its reference price is known by ``as_of``; otherwise leave it working."""
    if order.status != Order.Status.WORKING:
        return getattr(order, "position", None)
    last_bar = _latest_bar(order.instrument_id, on_or_before=order.placed_on)
    next_bar = (
        DailyBar.objects.filter(instrument_id=order.instrument_id, date__gt=order.placed_on)
        .filter(date__lte=as_of if as_of else dt.date.max)
        .order_by("date")
        .first()
    )
    reference = reference_price(
        as_fill_policy(order.fill_policy),
        last_close=last_bar.close if last_bar else None,
        next_open=next_bar.open if next_bar else None,
    )
    if reference is None:
        return None
    filled_on = next_bar.date if next_bar is not None and order.fill_policy == "next_open" else order.placed_on
    change = share_change_between(order.instrument_id, order.placed_on, filled_on)
    if change is not None:
        _cancel(
            order,
            f"a {change.kind} {change.ratio_old}:{change.ratio_new} went ex on {change.ex_date} between the order "
            f"({order.placed_on}) and its fill ({filled_on}): the thesis's quantity and levels are in the old share "
            "units, so the order is cancelled rather than filled against them",
        )
        return None
    tick = order.instrument.tick_size
    price = fill_price(side=as_side(order.side), reference=reference, slippage_bps=order.slippage_bps, tick=tick)
    thesis = order.thesis
    if not _inside_levels(thesis.direction, price, stop=thesis.stop, target=thesis.target):
        _cancel(
            order,
            f"the fill price {price} on {filled_on} is already beyond the stop {thesis.stop} or the "
            f"target {thesis.target}: the thesis was settled before entry",
        )
        return None
    costs = order_costs(as_side(order.side), order.quantity, price, cost_model())
    with transaction.atomic():
        account = account_lock(order.account_id)
        refusal = _fill_refusal(order, account, price=price, costs=costs.total, on=filled_on)
        if refusal:
            _cancel(order, refusal)
            return None
        claimed = Order.objects.filter(pk=order.pk, status=Order.Status.WORKING).update(
            status=Order.Status.FILLED,
            fill_price=price,
            reference_price=reference,
            filled_on=filled_on,
            costs=costs.to_dict(),
            costs_total=costs.total,
        )
        if not claimed:
            return Position.objects.filter(order=order).first()
        position = Position.objects.create(
            account=order.account,
            order=order,
            thesis=thesis,
            instrument=order.instrument,
            direction=thesis.direction,
            quantity=order.quantity,
            entry_price=price,
            entry_costs=costs.total,
            opened_on=filled_on,
            stop=thesis.stop,
            target=thesis.target,
            horizon_sessions=thesis.horizon_sessions,
            last_mark=price,
            is_replay=thesis.run.is_replay,
        )
        Account.objects.filter(pk=order.account_id).update(cash=F("cash") - price * order.quantity - costs.total)
        audit_record(
            action="order_filled",
            target=f"order {order.pk}",
            details={"price": str(price), "quantity": order.quantity, "costs": str(costs.total), "on": str(filled_on)},
        )
    order.refresh_from_db()
    return position


def _fill_refusal(order: Order, account: Account, *, price: Decimal, costs: Decimal, on: dt.date) -> str:
    """Why this fill would breach the book, or "": every check again at the fill price (the book
    may have moved since approval), and the cash must pay for the shares and their costs."""
    book = account_portfolio(account, today=on, instrument_id=order.instrument_id, exclude_order_id=order.pk)
    decision = thesis_book_check(order.thesis, account, entry=price, today=on, portfolio=book)
    reasons = [f"{check.name}: {check.detail}" for check in decision.checks if not check.passed]
    available = book.available_cash
    needed = price * order.quantity + costs
    if needed > available:
        reasons.append(f"cash: {order.quantity} at {price} plus costs {costs} needs {needed}, available {available}")
    return f"cancelled at fill on {on}: " + "; ".join(reasons) if reasons else ""


def _inside_levels(direction: str, price: Decimal, *, stop: Decimal, target: Decimal) -> bool:
    return stop < price < target if direction == "LONG" else target < price < stop


def _cancel(order: Order, reason: str) -> None:
    """A gap through a level before the fill: entering would open a trade its own thesis has
    already stopped out (or taken profit on), so the order is cancelled instead."""
    cancelled = Order.objects.filter(pk=order.pk, status=Order.Status.WORKING).update(
        status=Order.Status.CANCELLED, note=reason
    )
    if cancelled:
        audit_record(action="order_cancelled", target=f"order {order.pk}", reason=reason)
    order.refresh_from_db()


def _sessions_held(position: Position, as_of: dt.date) -> int:
    """Sessions of the instrument's exchange after the fill day up to ``as_of``, from the exchange
    calendar: a holiday is not a session held, and a bar missing from the data does not stretch
    the horizon."""
    return sessions_between(position.instrument.exchange, position.opened_on, as_of)


def position_close(
    *,
    position: Position,
    price: Decimal,
    on: dt.date,
    reason: str,
    user: User | AnonymousUser | None = None,
    comment: str = "",
    on_close: Callable[[Position], None] | None = None,
    reference: Decimal | None = None,
) -> Position:
    """Close at ``price`` net of exit costs. A second close of the same position is refused.
    ``reference`` is the price the exit was taken at before slippage (kept for the retrospective's
    attribution of slippage)."""
    costs = order_costs(exit_side(as_direction(position.direction)), position.quantity, price, cost_model())
    # The dividends the position received (or paid) while held are part of its realised result;
    # read from the row, as the daily pass may have paid one since ``position`` was loaded.
    dividends = Position.objects.filter(pk=position.pk).values_list("dividends", flat=True).first() or Decimal(0)
    pnl = (
        realised_pnl(
            direction=as_direction(position.direction),
            quantity=position.quantity,
            entry_price=position.entry_price,
            exit_price=price,
            entry_costs=position.entry_costs,
            exit_costs=costs.total,
        )
        + dividends
    )
    gross = mark(
        direction=as_direction(position.direction),
        quantity=position.quantity,
        entry_price=position.entry_price,
        mark_price=price,
    )
    with transaction.atomic():
        claimed = Position.objects.filter(pk=position.pk, status=Position.Status.OPEN).update(
            status=Position.Status.CLOSED,
            exit_price=price,
            exit_reference=reference,
            exit_costs=costs.total,
            closed_on=on,
            exit_reason=reason,
            exit_comment=comment,
            realised_pnl=pnl,
            last_mark=price,
            unrealised_pnl=Decimal(0),
        )
        if not claimed:
            raise BrokerError("this position is already closed")
        Account.objects.filter(pk=position.account_id).update(
            cash=F("cash") + position.entry_price * position.quantity + gross - costs.total
        )
        audit_record(
            actor=user,
            action="position_closed",
            target=f"position {position.pk}",
            reason=comment or reason,
            details={
                "price": str(price),
                "on": str(on),
                "reason": reason,
                "realised_pnl": str(pnl),
                "dividends": str(dividends),
            },
        )
        if on_close is None:
            transaction.on_commit(lambda: _queue_review(position.pk))
    position.refresh_from_db()
    if on_close is not None:
        on_close(position)  # a replay reviews at once, so the next day's runs can recall the lesson
    return position


def _queue_review(position_id: int) -> None:
    current_app.send_task("reviews.review_position", args=[position_id])


def _exit_fill(position: Position, reference: Decimal) -> Decimal:
    """Every exit, automatic or by hand, fills ``reference`` moved against the trader by the
    desk's slippage and onto the tick, exactly as an entry does."""
    return fill_price(
        side=exit_side(as_direction(position.direction)),
        reference=reference,
        slippage_bps=Decimal(str(settings.BROKER["SLIPPAGE_BPS"])),
        tick=position.instrument.tick_size,
    )


def _last_session(exchange: str) -> dt.date | None:
    """The exchange's last session: the latest bar date of any instrument listed on it."""
    return DailyBar.objects.filter(instrument__exchange=exchange).aggregate(last=Max("date"))["last"]


def _refuse_stale_price(position: Position, bar: DailyBar) -> None:
    """A manual close fills at the last close; a close older than the exchange's last session is
    a price the market has already moved away from, so the close is refused until bars arrive."""
    instrument = position.instrument
    last = _last_session(instrument.exchange)
    if last is None or bar.date >= last:
        return
    # Counted on the exchange calendar; at least one, as a later bar exists whatever the calendar says.
    behind = max(sessions_between(instrument.exchange, bar.date, last), 1)
    raise BrokerError(
        f"the last price of {instrument.symbol} is from {bar.date:%d %b %Y}, {behind} session"
        f"{'s' if behind != 1 else ''} before the last session {last:%d %b %Y} on {instrument.exchange}: "
        f"import its bars, then close"
    )


def position_close_by_hand(*, position: Position, user: User | AnonymousUser, comment: str = "") -> Position:
    """A person closes a live position at the last close (with slippage), saying why. Refused for
    a viewer, for a replay's position, without a reason, and when the instrument's last price is
    older than its exchange's last session."""
    if not user.has_perm("trading.approve_thesis"):
        raise CloseNotAllowed("only approvers can close a position")
    if position.is_replay:
        raise BrokerError(
            f"position {position.pk} belongs to a history replay ({position.account.name}); a replay's positions "
            "are closed by the replay, never from the live desk"
        )
    comment = comment.strip()
    if not comment:
        raise CloseReasonMissing("say why you close it by hand: a reason is required")
    bar = _latest_bar(position.instrument_id)
    if bar is None:
        raise BrokerError("no price to close at")
    _refuse_stale_price(position, bar)
    price = _exit_fill(position, bar.close)
    return position_close(
        position=position, price=price, on=bar.date, reason="manual", user=user, comment=comment, reference=bar.close
    )


def positions_mark(
    *, as_of: dt.date, account: Account | None = None, on_close: Callable[[Position], None] | None = None
) -> dict[str, int]:
    """The daily pass: fill waiting orders, then for each open position with a bar on ``as_of``,
    close it if the bar hit its stop or target or the horizon is reached, else mark it at the
    close. Exits fill with slippage like entries. A position filled on ``as_of`` (at its open) is
    only marked: the stop and target watch from the next session, as nobody can say whether the
    day's range came before or after the fill.

    The day's corporate actions go first (``trading.book.corporate``): a split adjusts a position's
    quantity and levels before the day's bar, in the new units, is checked against them, and a
    dividend is paid to the positions held into its ex-date."""
    corporate_actions_apply(as_of=as_of, account=account)
    orders = Order.objects.filter(status=Order.Status.WORKING, placed_on__lt=as_of)
    positions = Position.objects.filter(status=Position.Status.OPEN, opened_on__lte=as_of)
    if account is not None:
        orders, positions = orders.filter(account=account), positions.filter(account=account)
    filled = sum(
        1 for order in orders.select_related("instrument", "thesis__run") if order_try_fill(order=order, as_of=as_of)
    )
    closed = marked = 0
    open_positions = list(positions.select_related("instrument").order_by("id"))
    # The day's bars in one query, not one per position.
    bars = {
        bar.instrument_id: bar
        for bar in DailyBar.objects.filter(date=as_of, instrument_id__in={p.instrument_id for p in open_positions})
    }
    for position in open_positions:
        bar = bars.get(position.instrument_id)
        if bar is None:
            continue
        signal = None
        if position.opened_on < as_of:
            signal = check_exit(
                direction=as_direction(position.direction),
                stop=position.stop,
                target=position.target,
                bar_open=bar.open,
                bar_high=bar.high,
                bar_low=bar.low,
                bar_close=bar.close,
                sessions_held=_sessions_held(position, as_of),
                horizon_sessions=position.horizon_sessions,
            )
        if signal is not None:
            price = _exit_fill(position, signal.price)
            position_close(
                position=position,
                price=price,
                on=as_of,
                reason=signal.reason,
                on_close=on_close,
                reference=signal.price,
            )
            closed += 1
            continue
        pnl = mark(
            direction=as_direction(position.direction),
            quantity=position.quantity,
            entry_price=position.entry_price,
            mark_price=bar.close,
        )
        _mark_store(position, as_of, close=bar.close, unrealised_pnl=pnl)
        Position.objects.filter(pk=position.pk).update(last_mark=bar.close, unrealised_pnl=pnl)
        marked += 1
    return {"filled": filled, "closed": closed, "marked": marked}


def _mark_store(position: Position, on: dt.date, *, close: Decimal, unrealised_pnl: Decimal) -> None:
    """The day's mark of ``position``: written, or rewritten when the day was already marked. The
    same row as ``update_or_create`` leaves, in half the statements: a day is nearly always new."""
    try:
        with transaction.atomic():
            PositionMark.objects.create(position=position, date=on, close=close, unrealised_pnl=unrealised_pnl)
    except IntegrityError:  # the day's mark exists (one per position and day)
        PositionMark.objects.filter(position=position, date=on).update(close=close, unrealised_pnl=unrealised_pnl)


def book_catch_up(*, account: Account, until: dt.date) -> list[dict]:
    """Run the daily pass for every session not yet processed for ``account``, oldest first, up to
    ``until``. Sessions before the account's first order are skipped: there was nothing to do.

    Never past today on the desk's clock, whatever ``until`` says or a bar claims: a pass recorded
    for a day that has not happened (a bar dated 9999-12-31) would mark every later session as
    done and the book would never be marked, filled or stopped again. For the same reason a pass
    already recorded after today is not where the catch-up resumes (``book_pass_repair`` deletes
    such records)."""
    from django.utils import timezone  # local: this change is kept to this function

    today = timezone.localdate()
    until = min(until, today)
    first_order = (
        Order.objects.filter(account=account).order_by("placed_on").values_list("placed_on", flat=True).first()
    )
    if first_order is None:
        return []
    done = (
        BookPass.objects.filter(account=account, date__lte=today)
        .order_by("-date")
        .values_list("date", flat=True)
        .first()
    )
    start = max(first_order, done) if done else first_order
    sessions = (
        DailyBar.objects.filter(date__gt=start, date__lte=until)
        .values_list("date", flat=True)
        .distinct()
        .order_by("date")
    )
    results = []
    for day in sessions:
        with transaction.atomic():
            if BookPass.objects.filter(account=account, date=day).exists():
                continue
            counts = positions_mark(as_of=day, account=account)
            BookPass.objects.create(account=account, date=day, **counts)
        results.append({"as_of": day.isoformat(), **counts})
    return results
