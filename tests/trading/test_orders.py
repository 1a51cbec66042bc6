"""The orders blotter and cancelling a working order by hand: what a person sees after approving,
who may cancel, that a cancel is audited with who and why, and that a filled or already cancelled
order is refused with the reason and left as it was."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils.html import escape
from rest_framework.test import APIClient

from tests.factories import OrderFactory
from trading.book.accounts import default_account
from trading.book.broker import order_try_fill
from trading.book.orders import order_cancel
from trading.models import Account, AuditEvent, Order, Thesis
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict


def _live_order(**fields) -> Order:
    return OrderFactory(thesis__account=default_account(), **fields)


def _replay_order() -> Order:
    replay = Account.objects.create(
        name="replay: momentum", capital=Decimal("1000000"), cash=Decimal("1000000"), daily_loss_cap=Decimal("20000")
    )
    return OrderFactory(thesis__account=replay, thesis__run__is_replay=True)


def _filled(order: Order, price: str = "101.05") -> Order:
    Order.objects.filter(pk=order.pk).update(
        status=Order.Status.FILLED, fill_price=Decimal(price), filled_on=order.placed_on, costs_total=Decimal("31.40")
    )
    order.refresh_from_db()
    return order


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --- the blotter -----------------------------------------------------------------------------------


def test_the_blotter_shows_working_filled_and_cancelled_orders_with_the_reason_and_their_theses(client, viewer):
    working, filled = _live_order(), _filled(_live_order())
    cancelled = _live_order(cancelled=True, note="the fill price 93.10 is already beyond the stop 95.00")
    client.force_login(viewer)

    body = client.get(reverse("order_list")).content.decode()

    for order in (working, filled, cancelled):
        assert f'id="order-{order.pk}"' in body
        assert reverse("thesis_detail", args=[order.thesis_id]) in body
    assert "the fill price 93.10 is already beyond the stop 95.00" in body
    assert "₹101.05" in body and "₹31.40" in body  # the fill and its costs, in the desk's money format


def test_the_blotter_filters_by_status_instrument_and_book(client, viewer):
    working, filled, replayed = _live_order(), _filled(_live_order()), _replay_order()
    client.force_login(viewer)

    def listed(**params: str) -> set[int]:
        page = client.get(reverse("order_list"), params)
        assert page.status_code == 200
        return {order.pk for order in page.context["page"].object_list}

    assert listed() == {working.pk, filled.pk}  # the live book by default: a replay's orders stay apart
    assert listed(status="working") == {working.pk}
    assert listed(status="filled") == {filled.pk}
    assert listed(symbol=filled.instrument.symbol.lower()) == {filled.pk}
    assert listed(account="replay") == {replayed.pk}
    assert listed(account=str(replayed.account_id)) == {replayed.pk}
    assert listed(account="all") == {working.pk, filled.pk, replayed.pk}


def test_a_bad_filter_is_answered_400_with_the_reason_and_no_list(client, viewer):
    _live_order()
    client.force_login(viewer)

    for params, words in (({"status": "lost"}, "status 'lost' is not one of"), ({"account": "x"}, "account 'x'")):
        page = client.get(reverse("order_list"), params)
        assert page.status_code == 400 and escape(words) in page.content.decode()
        assert not page.context["page"].object_list


def test_the_blotter_pages_through_many_orders_newest_first(client, viewer):
    orders = [_live_order() for _ in range(53)]
    client.force_login(viewer)

    first = client.get(reverse("order_list"), {"status": "working"})
    second = client.get(reverse("order_list"), {"status": "working", "page": 2})

    assert [o.pk for o in first.context["page"].object_list][:1] == [orders[-1].pk]
    assert [o.pk for o in second.context["page"].object_list] == [o.pk for o in reversed(orders[:3])]
    assert "page 1 of 2" in first.content.decode()
    assert "status=working&amp;page=2" in first.content.decode()  # the filter survives paging


def test_the_blotter_reads_a_page_in_a_fixed_number_of_queries(client, viewer, django_assert_max_num_queries):
    for _ in range(12):
        _filled(_live_order())
    client.force_login(viewer)

    with django_assert_max_num_queries(12):
        assert client.get(reverse("order_list")).status_code == 200


# --- cancelling by hand ----------------------------------------------------------------------------


def test_an_approver_cancels_a_working_order_with_a_reason_and_it_is_audited(client, approver):
    order = _live_order()
    cash = default_account().cash
    client.force_login(approver)

    page = client.post(reverse("order_cancel", args=[order.pk]), {"reason": "results tomorrow"}, follow=True)

    order.refresh_from_db()
    assert order.status == Order.Status.CANCELLED
    assert order.note == f"cancelled by {approver.get_username()}: results tomorrow"
    assert f"Cancelled order #{order.pk}" in page.content.decode()
    event = AuditEvent.objects.get(action="order_cancelled", target=f"order {order.pk}")
    assert event.actor == approver and event.reason == "results tomorrow" and event.at is not None
    # Nothing else moves: the decision stands, no cash was reserved, and the broker will not fill it.
    assert Thesis.objects.get(pk=order.thesis_id).status == Thesis.Status.APPROVED
    assert default_account().cash == cash
    assert order_try_fill(order=order) is None and Order.objects.get(pk=order.pk).status == Order.Status.CANCELLED


def test_a_cancel_without_a_reason_is_refused_and_changes_nothing(client, approver):
    order = _live_order()
    client.force_login(approver)

    page = client.post(reverse("order_cancel", args=[order.pk]), {"reason": "   "}, follow=True)

    assert "a reason is required" in page.content.decode()
    assert Order.objects.get(pk=order.pk).status == Order.Status.WORKING
    assert not AuditEvent.objects.filter(action="order_cancelled").exists()


def test_a_viewer_sees_no_cancel_button_and_a_forged_cancel_is_403(client, viewer, approver):
    order = _live_order()
    client.force_login(viewer)

    assert "Confirm cancel" not in client.get(reverse("order_list")).content.decode()
    response = client.post(reverse("order_cancel", args=[order.pk]), {"reason": "mine now"})

    assert response.status_code == 403 and b"only approvers" in response.content
    assert Order.objects.get(pk=order.pk).status == Order.Status.WORKING
    client.force_login(approver)
    assert "Confirm cancel" in client.get(reverse("order_list")).content.decode()


def test_a_filled_order_is_refused_with_the_reason_and_left_filled(client, approver):
    order = _filled(_live_order())
    client.force_login(approver)

    page = client.post(reverse("order_cancel", args=[order.pk]), {"reason": "too late"}, follow=True)

    assert f"order #{order.pk} has already filled at 101.05" in page.content.decode()
    assert Order.objects.get(pk=order.pk).status == Order.Status.FILLED
    assert not AuditEvent.objects.filter(action="order_cancelled").exists()


def test_a_second_cancel_is_refused_and_keeps_the_first_reason(approver):
    order = _live_order()
    order_cancel(order=order, user=approver, reason="first")

    with pytest.raises(StateConflict, match="already cancelled"):
        order_cancel(order=order, user=approver, reason="second")

    assert Order.objects.get(pk=order.pk).note.endswith(": first")
    assert AuditEvent.objects.filter(action="order_cancelled").count() == 1


def test_a_fill_that_lands_between_loading_and_cancelling_wins_and_the_cancel_is_refused(approver):
    """The page was loaded while the order worked; the broker filled it before the click arrived. The
    cancel claims the row only if it still works, so it is refused instead of cancelling a fill."""
    order = _live_order()
    stale = Order.objects.get(pk=order.pk)  # what the view loaded
    _filled(order)  # the fill task, meanwhile

    with pytest.raises(StateConflict, match="already filled"):
        order_cancel(order=stale, user=approver, reason="changed my mind")

    assert Order.objects.get(pk=order.pk).status == Order.Status.FILLED


def test_a_replays_order_cannot_be_cancelled_from_the_live_desk(approver):
    order = _replay_order()

    with pytest.raises(StateConflict, match="history replay"):
        order_cancel(order=order, user=approver, reason="tidy up")

    assert Order.objects.get(pk=order.pk).status == Order.Status.WORKING


def test_the_service_itself_refuses_a_viewer_and_a_missing_reason(viewer, approver):
    order = _live_order()

    with pytest.raises(NotAllowed):
        order_cancel(order=order, user=viewer, reason="why not")
    with pytest.raises(InputRefused):
        order_cancel(order=order, user=approver, reason="")

    assert Order.objects.get(pk=order.pk).status == Order.Status.WORKING


# --- the API ---------------------------------------------------------------------------------------


def test_the_api_lists_orders_with_the_pages_filters(viewer):
    working, filled = _live_order(), _filled(_live_order())

    everything = _api(viewer).get("/api/orders/").json()
    only_filled = _api(viewer).get("/api/orders/", {"status": "filled"}).json()
    bad = _api(viewer).get("/api/orders/", {"status": "lost"})

    assert {row["id"] for row in everything["results"]} == {working.pk, filled.pk}
    assert [row["id"] for row in only_filled["results"]] == [filled.pk]
    assert (
        only_filled["results"][0]["fill_price"] == "101.0500"
        and only_filled["results"][0]["thesis"] == filled.thesis_id
    )
    assert bad.status_code == 400 and "status 'lost'" in bad.json()["detail"]


def test_the_api_cancels_for_an_approver_and_answers_each_refusal_by_its_kind(viewer, approver):
    order, filled = _live_order(), _filled(_live_order())

    forbidden = _api(viewer).post(f"/api/orders/{order.pk}/cancel/", {"reason": "x"}, format="json")
    no_reason = _api(approver).post(f"/api/orders/{order.pk}/cancel/", {}, format="json")
    done = _api(approver).post(f"/api/orders/{order.pk}/cancel/", {"reason": "news"}, format="json")
    too_late = _api(approver).post(f"/api/orders/{filled.pk}/cancel/", {"reason": "news"}, format="json")

    assert forbidden.status_code == 403 and "only approvers" in forbidden.json()["detail"]
    assert no_reason.status_code == 400 and "a reason is required" in no_reason.json()["detail"]
    assert done.status_code == 200 and done.json()["status"] == "cancelled" and "news" in done.json()["note"]
    assert too_late.status_code == 409 and "already filled" in too_late.json()["detail"]
    assert Thesis.objects.get(pk=order.thesis_id).status == Thesis.Status.APPROVED


def test_the_approval_queues_pager_keeps_the_filters_and_one_page_parameter(client, viewer):
    from tests.factories import ThesisFactory

    for _ in range(51):
        ThesisFactory(account=default_account())
    client.force_login(viewer)

    body = client.get(reverse("thesis_queue"), {"status": "pending", "page": 2}).content.decode()

    assert "status=pending&amp;page=1" in body and body.count("page=2&amp;page") == 0
