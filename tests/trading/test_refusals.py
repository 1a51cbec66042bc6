"""One refusal type, answered in one place: each kind gets its status and the ``{"detail": ...,
**details}`` body from the API, and the same sentence (with its details, one a line) on the pages.
The refusals come from the real services; nothing under test is faked."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from rest_framework.test import APIClient

from tests.trading.book_rows import SESSION, book_account, instrument_at, open_position, pending
from trading.api.errors import refusal_body, refusal_status
from trading.book.accounts import default_account
from trading.book.approvals import DecisionRefused, thesis_approve
from trading.models import Order, Position, Strategy, Thesis
from vocabulary.refusals import (
    InputRefused,
    NotAllowed,
    Refusal,
    ServiceUnavailable,
    StateConflict,
    kind_of,
)


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.fixture
def two_ideas_one_slot(db) -> tuple[Thesis, Thesis]:
    """Two pending theses on a book with room for one position: the first approval fills the slot,
    so the second is refused by the max_positions check against the live book."""
    account = book_account(max_positions=1)
    first = pending(account, instrument_at("ALPHA"), quantity=100)
    second = pending(account, instrument_at("BRAVO"), quantity=100)
    return first, second


# --- the kinds, pure ----------------------------------------------------------------------------


def test_a_refusal_of_several_kinds_is_answered_as_the_narrowest_blame():
    class DecisionByAViewer(StateConflict, NotAllowed):
        pass

    assert kind_of(DecisionByAViewer("only approvers")) is NotAllowed
    assert kind_of(InputRefused("bad date")) is InputRefused
    assert kind_of(ServiceUnavailable("queue down")) is ServiceUnavailable
    assert kind_of(Refusal("no")) is StateConflict


def test_details_read_as_lines_a_person_can_act_on():
    refusal = StateConflict(
        "the book has moved",
        {
            "checks": [{"name": "max_positions", "passed": False, "detail": "1 open position(s) ≥ limit 1"}],
            "as_of": ["as_of 2030-01-01 is after today"],
            "symbols": ["NOPE is unknown or inactive"],
            "unsent": [4, 5],  # ids: for the API body, not for a person
        },
    )

    assert refusal.lines() == [
        "max_positions: 1 open position(s) ≥ limit 1",
        "as_of 2030-01-01 is after today",
        "symbols: NOPE is unknown or inactive",
    ]


def test_a_careless_detail_named_detail_never_overwrites_the_sentence():
    refusal = InputRefused("as_of is not a date", {"detail": "something else", "as_of": ["as_of is not a date"]})

    assert refusal_body(refusal) == {"detail": "as_of is not a date", "as_of": ["as_of is not a date"]}
    assert refusal_status(refusal) == 400


# --- the API: each kind its status, one body shape ----------------------------------------------


def test_input_refused_is_a_400_with_the_reason_from_the_selector(viewer):
    response = _api(viewer).get("/api/theses/", {"min_conviction": "NaN"})

    assert response.status_code == 400
    assert response.json() == {"detail": "min_conviction 'NaN' is not a number from 0 to 1"}


def test_not_allowed_is_a_403_with_the_reason_and_nothing_else(viewer, two_ideas_one_slot):
    thesis, _ = two_ideas_one_slot

    response = _api(viewer).post(f"/api/theses/{thesis.pk}/approve/", {"comment": "mine now"}, format="json")

    assert response.status_code == 403
    assert response.json() == {"detail": "only approvers can decide on a thesis"}
    thesis.refresh_from_db()
    assert thesis.status == Thesis.Status.PENDING and not Order.objects.exists()


def test_a_state_conflict_is_a_409_with_the_reason_and_its_checks(approver, two_ideas_one_slot):
    first, second = two_ideas_one_slot
    thesis_approve(thesis=first, user=approver, as_of=SESSION)

    response = _api(approver).post(f"/api/theses/{second.pk}/approve/", {"comment": "both"}, format="json")

    assert response.status_code == 409
    body = response.json()
    assert body["detail"] == (
        "the book has moved since this thesis was sized: 1 risk check(s) fail against the live book now "
        "(max_positions)"
    )
    assert [(check["name"], check["passed"]) for check in body["checks"]] == [("max_positions", False)]
    assert "working order(s)" in body["checks"][0]["detail"]
    second.refresh_from_db()
    assert second.status == Thesis.Status.PENDING and Order.objects.count() == 1


def test_a_decided_thesis_is_a_409_with_no_checks(approver, two_ideas_one_slot):
    first, _ = two_ideas_one_slot
    thesis_approve(thesis=first, user=approver, as_of=SESSION)

    response = _api(approver).post(f"/api/theses/{first.pk}/reject/", {"comment": "changed my mind"}, format="json")

    assert response.status_code == 409
    assert response.json() == {"detail": f"this thesis is already approved by {approver.username}", "checks": []}


def test_a_rejection_without_a_reason_is_the_requests_fault_a_400(approver, two_ideas_one_slot):
    thesis, _ = two_ideas_one_slot

    response = _api(approver).post(f"/api/theses/{thesis.pk}/reject/", {"comment": "  "}, format="json")

    assert response.status_code == 400
    assert response.json()["detail"] == "say why you reject it: a comment is required"


def test_a_close_refused_by_the_book_is_a_409_and_a_viewers_close_a_403(viewer, approver, db):
    thesis = pending(default_account(), instrument_at("ALPHA"), quantity=10)
    position = open_position(thesis, default_account(), on=SESSION)
    Position.objects.filter(pk=position.pk).update(status=Position.Status.CLOSED)

    by_viewer = _api(viewer).post(f"/api/positions/{position.pk}/close/", {"comment": "out"}, format="json")
    by_approver = _api(approver).post(f"/api/positions/{position.pk}/close/", {"comment": "out"}, format="json")

    assert by_viewer.status_code == 403 and by_viewer.json() == {"detail": "only approvers can close a position"}
    assert by_approver.status_code == 409 and by_approver.json() == {"detail": "this position is already closed"}


# --- the pages: the same sentence, details one a line -------------------------------------------


def test_the_page_shows_a_refused_approval_with_each_failing_check_on_its_own_line(
    client, approver, two_ideas_one_slot
):
    first, second = two_ideas_one_slot
    thesis_approve(thesis=first, user=approver, as_of=SESSION)
    client.force_login(approver)

    response = client.post(
        reverse("thesis_decide", args=[second.pk]), {"decision": "approve", "comment": "both"}, follow=True
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert "Refused: the book has moved since this thesis was sized: 1 risk check(s) fail" in page
    assert '<br><span class="refusal-detail">max_positions: 0 open position(s) + 1 working order(s)' in page
    second.refresh_from_db()
    assert second.status == Thesis.Status.PENDING and Order.objects.count() == 1


def test_the_page_escapes_what_a_refusal_quotes_back(client, approver, db):
    """A refusal quotes values back (a symbol, a check's figures): they are text, never markup."""
    client.force_login(approver)

    response = client.post(reverse("run_start"), {"symbols": ["<script>x</script>"], "provider": "offline"})

    page = response.content.decode()
    assert response.status_code == 400
    assert "&lt;SCRIPT&gt;X&lt;/SCRIPT&gt; is unknown or inactive" in page and "<SCRIPT>" not in page


def test_a_viewers_forged_decision_or_close_is_a_403_with_the_sentence(client, viewer, two_ideas_one_slot):
    thesis, _ = two_ideas_one_slot
    position = open_position(thesis, default_account(), on=SESSION)
    client.force_login(viewer)

    decided = client.post(reverse("thesis_decide", args=[thesis.pk]), {"decision": "reject", "comment": "no"})
    closed = client.post(reverse("position_close", args=[position.pk]), {"comment": "out"})

    assert decided.status_code == 403 and decided.content.decode() == "Refused: only approvers can decide on a thesis."
    assert closed.status_code == 403 and closed.content.decode() == "Refused: only approvers can close a position."
    position.refresh_from_db()
    assert position.status == Position.Status.OPEN


def test_the_page_says_why_a_close_is_refused(client, approver, db):
    thesis = pending(default_account(), instrument_at("ALPHA"), quantity=10)
    position = open_position(thesis, default_account(), on=SESSION)
    client.force_login(approver)

    response = client.post(reverse("position_close", args=[position.pk]), {"comment": "  "})

    assert response.status_code == 302
    assert _messages(response) == ["Refused: say why you close it by hand: a reason is required."]


def test_a_strategy_that_cannot_start_says_why_on_its_page(client, approver, db):
    strategy = Strategy.objects.create(name="Empty", philosophy="Nothing to trade.")
    client.force_login(approver)

    response = client.post(reverse("strategy_start", args=[strategy.pk]))

    assert response.status_code == 302
    assert _messages(response) == ["Refused: Empty: no bars for its universe."]
    assert not strategy.runs.exists()


def test_a_decision_refused_is_still_a_decision_refused_for_its_callers(approver, two_ideas_one_slot):
    first, second = two_ideas_one_slot
    thesis_approve(thesis=first, user=approver, as_of=SESSION)

    with pytest.raises(DecisionRefused) as refused:
        thesis_approve(thesis=second, user=approver, as_of=SESSION)

    assert isinstance(refused.value, StateConflict)
    assert refused.value.reason == refused.value.message
    assert refused.value.checks == refused.value.details["checks"]
    assert refused.value.checks[0]["name"] == "max_positions"
