"""Orders a person acts on: cancelling a working order by hand.

The broker cancels an order itself when its fill would breach the book or gap through a level
(``trading.book.broker._cancel``); a person may cancel one before that, while it still waits for
its fill. Both leave the same row behind: status ``cancelled`` with the reason in ``note``, and an
``order_cancelled`` audit event. Nothing else changes: cash moves only at a fill and a working
order holds no reservation of its own (the risk checks count working orders by their status), so
there is nothing to release. The thesis stays approved: the decision was made; the order was
withdrawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from trading import edge
from trading.audit import audit_record
from trading.book.approvals import APPROVE_PERMISSION
from trading.models import Order
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

__all__ = ["OrderCancelRefused", "order_cancel"]


class OrderCancelRefused(StateConflict):
    """The order is no longer working (filled or cancelled already), or it is a replay's: 409."""


class OrderCancelNotAllowed(OrderCancelRefused, NotAllowed):
    """Only an approver cancels an order (403)."""


class OrderCancelReasonMissing(OrderCancelRefused, InputRefused):
    """A cancel needs a reason (400)."""


def _settled(order: Order) -> str:
    """Why an order that is no longer working cannot be cancelled, in the words a person reads."""
    if order.status == Order.Status.FILLED:
        on = f" on {order.filled_on:%d %b %Y}" if order.filled_on else ""
        return f"order #{order.pk} has already filled at {order.fill_price}{on}: close its position instead"
    note = f" ({order.note})" if order.note else ""
    return f"order #{order.pk} is already cancelled{note}"


def order_cancel(*, order: Order, user: User | AnonymousUser, reason: str) -> Order:
    """Cancel a working order of the live book, saying why. Refused for a viewer, without a reason,
    for a replay's order (its replay settles it), and when the order has filled or been cancelled
    meanwhile. The claim is a conditional update on the working status, so a fill racing the
    cancel (or a second click) finds the row changed and one of them is refused, never both done."""
    if not user.has_perm(APPROVE_PERMISSION):
        raise OrderCancelNotAllowed("only approvers can cancel an order")
    reason = reason.strip()
    if not reason:
        raise OrderCancelReasonMissing("say why you cancel the order: a reason is required")
    edge.check_comment(reason, "reason")  # too long or a NUL: InputInvalid, a 400
    if order.thesis.run.is_replay:
        raise OrderCancelRefused(
            f"order #{order.pk} belongs to a history replay ({order.account.name}); a replay's orders are "
            "settled by the replay, never from the live desk"
        )
    who = user.get_username()
    note = f"cancelled by {who}: {reason}"
    with transaction.atomic():
        claimed = Order.objects.filter(pk=order.pk, status=Order.Status.WORKING).update(
            status=Order.Status.CANCELLED, note=note
        )
        if claimed:
            audit_record(
                actor=user,
                action="order_cancelled",
                target=f"order {order.pk}",
                reason=reason,
                details={"by": who, "thesis": order.thesis_id, "symbol": order.instrument.symbol},
            )
    order.refresh_from_db()
    if not claimed:
        raise OrderCancelRefused(_settled(order))
    return order
