"""The playbook's pages and API: each heuristic's citations and the record of the closed positions
that cited it (from the stored rows, by the pure audit), candidates that a person activates or
rejects with a reason, and an admin's edits, each audited and kept in the rule's history."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from agents.models import Heuristic
from agents.playbook import seed_demo_playbook
from reviews.domain.heuristics import AuditSettings, audit_heuristic
from reviews.playbook import audit_settings, playbook_overview
from tests.conftest import PASSWORD
from tests.factories import AccountFactory, position_on_path, trending
from trading.models import AuditEvent, HeuristicCitation, Position
from vocabulary.money import format_money

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def cite(position: Position, *codes: str, role: str = "technical", accepted: bool = True) -> None:
    """The run of ``position`` cited ``codes`` (by ``role``), as the pipeline stores it."""
    run = position.thesis.run
    for code in codes:
        heuristic = Heuristic.objects.filter(code=code).first() if accepted else None
        HeuristicCitation.objects.create(
            run=run,
            role=role,
            code=code,
            heuristic=heuristic,
            accepted=accepted,
            cited_on=run.as_of,
            thesis=position.thesis if role == "trader" else None,
        )


@pytest.fixture
def book():
    """H-1 cited by three closed winners (one of them twice, by two roles) and a closed loser; H-2 by
    the loser only; H-9 a candidate cited once (not accepted); H-999 cited but never written."""
    seed_demo_playbook()
    Heuristic.objects.create(code="H-9", text="Buy the dip in a bull market", factor="trend", status="candidate")
    account = AccountFactory(roomy=True, name="playbook book")
    winners = [position_on_path(trending(100, 8, "2"), account=account, quantity=1000) for _ in range(3)]
    loser = position_on_path(trending(100, 8, "-2"), account=account, quantity=1000)
    open_one = position_on_path(trending(100, 3, "0.1"), account=account, quantity=10)
    assert all(p.status == Position.Status.CLOSED for p in [*winners, loser]) and open_one.status == "open"
    for position in [*winners, loser, open_one]:
        cite(position, "H-1")
    cite(winners[0], "H-1", role="trader")
    cite(loser, "H-2")
    cite(winners[1], "H-9", "H-999", accepted=False)
    return {"winners": winners, "loser": loser, "open": open_one}


def _row(html: str, row_id: str) -> str:
    match = re.search(rf'<tr id="{row_id}"[^>]*>(.*?)</tr>', html, re.S)
    assert match, f"no row {row_id}"
    return match.group(1)


def _figure(row: str, name: str) -> str:
    match = re.search(rf'data-figure="{name}">(.*?)</', row, re.S)
    assert match, f"no figure {name}"
    return match.group(1).strip()


def test_the_playbook_shows_each_rules_record_from_the_positions_that_cited_it(viewer, book):
    response = logged_in(viewer).get(reverse("heuristic_list"))
    assert response.status_code == 200
    html = response.content.decode()

    closed = [*book["winners"], book["loser"]]
    expected = audit_heuristic("H-1", [p.realised_pnl for p in closed], audit_settings())
    row = _row(html, "heuristic-H-1")
    assert _figure(row, "citations") == "6"  # five runs' technical notes and one thesis
    assert _figure(row, "positions") == "4"  # the closed ones, each once
    assert _figure(row, "total_pnl") == format_money(expected.total_pnl, "INR")
    assert expected.total_pnl == sum(p.realised_pnl for p in closed)
    assert _figure(row, "win_rate") == "75.0%"
    assert _figure(row, "recommendation") == expected.recommendation.replace("_", " ").lower() == "keep"
    loser_only = _row(html, "heuristic-H-2")
    assert _figure(loser_only, "recommendation") == "insufficient data"
    assert _figure(_row(html, "heuristic-H-3"), "citations") == "0"


def test_citations_of_codes_that_were_not_active_are_shown_apart_and_never_counted(viewer, book):
    overview = playbook_overview()
    candidate = next(record for record in overview.candidates if record.code == "H-9")

    assert candidate.citations == 0 and candidate.report.citations == 0
    assert {row["code"] for row in overview.unaccepted} == {"H-9", "H-999"}
    html = logged_in(viewer).get(reverse("heuristic_list")).content.decode()
    unaccepted = html.split('id="unaccepted"', 1)[1]
    assert "H-999" in unaccepted and "H-9" in unaccepted


def test_the_recommendation_follows_the_desks_thresholds(viewer, book, settings):
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "HEURISTIC_MIN_CITATIONS": 5}
    assert audit_settings() == AuditSettings(min_citations=5, demote_below=Decimal("-1.0"))

    html = logged_in(viewer).get(reverse("heuristic_list")).content.decode()

    assert _figure(_row(html, "heuristic-H-1"), "recommendation") == "insufficient data"


def test_a_viewer_sees_the_candidates_but_no_buttons_and_a_forged_decision_is_refused(viewer, book):
    client = logged_in(viewer)
    html = client.get(reverse("heuristic_list")).content.decode()

    assert 'id="candidate-H-9"' in html and 'value="activate"' not in html
    response = client.post(reverse("heuristic_decide", args=["H-9"]), {"decision": "activate", "reason": "sure"})
    assert response.status_code == 403
    assert (
        Heuristic.objects.get(code="H-9").status == "candidate"
        and not AuditEvent.objects.filter(action__startswith="heuristic").exists()
    )


def test_an_approver_activates_a_candidate_with_a_reason_and_it_is_audited(approver, book):
    client = logged_in(approver)
    html = client.get(reverse("heuristic_list")).content.decode()
    assert 'value="activate"' in html and 'value="reject"' in html

    response = client.post(
        reverse("heuristic_decide", args=["H-9"]),
        {"decision": "activate", "reason": "held up in the replay", "next": "list"},
    )

    assert response.status_code == 302 and response.url == reverse("heuristic_list")
    assert Heuristic.objects.get(code="H-9").status == "active"
    event = AuditEvent.objects.get(action="heuristic_status_changed")
    assert (event.actor, event.target, event.reason) == (approver, "H-9", "held up in the replay")
    history = Heuristic.objects.get(code="H-9").history.first()
    assert history.history_user == approver and history.history_change_reason == "held up in the replay"


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ({"decision": "activate", "reason": ""}, "a reason is required"),
        ({"decision": "promote", "reason": "why"}, "not a decision"),
    ],
)
def test_a_decision_without_a_reason_or_of_no_kind_changes_nothing(approver, book, form, words):
    client = logged_in(approver)

    response = client.post(reverse("heuristic_decide", args=["H-9"]), form, follow=True)

    assert words in response.content.decode()
    assert (
        Heuristic.objects.get(code="H-9").status == "candidate"
        and not AuditEvent.objects.filter(action__startswith="heuristic").exists()
    )


def test_a_candidate_rejected_is_retired_and_cannot_be_rejected_twice(desk_admin, book):
    client = logged_in(desk_admin)
    url = reverse("heuristic_decide", args=["H-9"])

    client.post(url, {"decision": "reject", "reason": "buying dips is a story"})
    again = client.post(url, {"decision": "reject", "reason": "again"}, follow=True)

    assert Heuristic.objects.get(code="H-9").status == "retired"
    assert "H-9 is already retired" in again.content.decode()
    assert AuditEvent.objects.filter(action="heuristic_status_changed").count() == 1


def test_a_decision_must_be_posted(approver, book):
    assert logged_in(approver).get(reverse("heuristic_decide", args=["H-9"])).status_code == 405


def test_a_heuristics_page_shows_its_citations_outcomes_and_history(viewer, approver, book):
    logged_in(approver).post(
        reverse("heuristic_decide", args=["H-1"]), {"decision": "demote", "reason": "checking the page"}
    )
    response = logged_in(viewer).get(reverse("heuristic_detail", args=["H-1"]))
    assert response.status_code == 200
    html = response.content.decode()

    assert Heuristic.objects.get(code="H-1").text in html
    table = html.split('id="citations"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 1 + 6  # the header and one row per citation
    assert f'href="{reverse("position_lifecycle", args=[book["loser"].pk])}"' in table
    assert "stop" in table and "target" in table and "open" in table
    history = html.split('id="history"', 1)[1]
    assert "checking the page" in history and "status: active → demoted" in history and approver.username in history
    assert 'value="activate"' not in html  # a viewer sees no decision


def test_the_cumulative_chart_adds_each_closed_position_once_by_the_day_it_closed(viewer, book):
    html = logged_in(viewer).get(reverse("heuristic_detail", args=["H-1"])).content.decode()
    figure = json.loads(re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', html, re.S)[1])

    closed = sorted([*book["winners"], book["loser"]], key=lambda p: (p.closed_on, p.pk))
    running, expected = Decimal("0"), []
    for position in closed:
        running += position.realised_pnl
        expected.append(float(running))
    (trace,) = figure["data"]
    assert trace["y"] == pytest.approx(expected)
    assert trace["x"] == [p.closed_on.isoformat() for p in closed]


def test_the_chart_is_readable_at_one_point(viewer, book):
    html = logged_in(viewer).get(reverse("heuristic_detail", args=["H-2"])).content.decode()
    figure = json.loads(re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', html, re.S)[1])

    (trace,) = figure["data"]
    assert len(trace["x"]) == 1 and trace["mode"] == "lines+markers"
    assert figure["layout"]["xaxis"]["type"] == "date" and "range" in figure["layout"]["xaxis"]


def test_an_uncited_heuristic_has_no_chart_and_says_so(viewer, book):
    html = logged_in(viewer).get(reverse("heuristic_detail", args=["H-3"])).content.decode()

    assert "No position whose run cited it has closed yet." in html and "chart-data" not in html


@pytest.mark.parametrize("code", ["H-77", "h-1", "H-1x", "nonsense"])
def test_an_unknown_or_malformed_code_is_not_found(viewer, book, code):
    assert logged_in(viewer).get(f"/reviews/heuristics/{code}/").status_code == 404


# --- the API --------------------------------------------------------------------------------------


def test_the_api_lists_the_playbook_with_its_figures_to_any_desk_user(viewer, book):
    response = api(viewer).get("/api/heuristics/")
    assert response.status_code == 200
    rows = {row["code"]: row for row in response.json()["results"]}

    assert list(rows)[:3] == ["H-1", "H-2", "H-3"]  # by number
    closed = [*book["winners"], book["loser"]]
    assert rows["H-1"]["citations"] == 6
    assert rows["H-1"]["audit"] == {
        "closed_positions": 4,
        "wins": 3,
        "total_pnl": f"{sum(p.realised_pnl for p in closed):.2f}",
        "win_rate": "0.7500",
        "average_pnl": f"{audit_heuristic('H-1', [p.realised_pnl for p in closed]).average_pnl:.2f}",
        "recommendation": "KEEP",
    }
    assert rows["H-9"]["status"] == "candidate" and rows["H-9"]["citations"] == 0


def test_the_api_filters_by_status_and_refuses_an_unknown_one(viewer, book):
    client = api(viewer)

    candidates = client.get("/api/heuristics/?status=candidate").json()["results"]
    refused = client.get("/api/heuristics/?status=archived")

    assert [row["code"] for row in candidates] == ["H-9"]
    assert refused.status_code == 400 and "status" in refused.json()["detail"]


def test_the_api_needs_a_login(book):
    assert APIClient().get("/api/heuristics/").status_code in (401, 403)


def test_an_admin_edits_a_rules_text_over_the_api_audited_and_kept_in_its_history(desk_admin, book):
    old = Heuristic.objects.get(code="H-3").text
    response = api(desk_admin).patch(
        "/api/heuristics/H-3/", {"text": "RSI over 75 means wait", "reason": "sharper line"}, format="json"
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["text"] == "RSI over 75 means wait" and body["status"] == "active"
    assert body["history"][0]["reason"] == "sharper line" and body["history"][0]["who"] == desk_admin.username
    assert f"text: {old} → RSI over 75 means wait" in body["history"][0]["changes"]
    event = AuditEvent.objects.get(action="heuristic_edited")
    assert event.actor == desk_admin and event.details["before"] == {"text": old}


def test_an_admin_may_post_the_same_edit_and_change_the_status(desk_admin, book):
    response = api(desk_admin).post("/api/heuristics/H-2/", {"status": "retired", "reason": "unused"}, format="json")

    assert response.status_code == 200 and response.json()["status"] == "retired"


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"text": "new words"}, 400, "a reason is required"),
        ({"text": "   ", "reason": "blank"}, 400, "a heuristic needs its text"),
        ({"status": "archived", "reason": "x"}, 400, "status"),
        ({"status": "active", "reason": "no change"}, 409, "nothing to change"),
    ],
)
def test_a_bad_edit_is_refused_with_the_reason_and_changes_nothing(desk_admin, book, body, status, words):
    before = Heuristic.objects.get(code="H-1")

    response = api(desk_admin).patch("/api/heuristics/H-1/", body, format="json")

    assert response.status_code == status and words in response.json()["detail"]
    after = Heuristic.objects.get(code="H-1")
    assert (after.text, after.status) == (before.text, before.status) and not AuditEvent.objects.filter(
        action__startswith="heuristic"
    ).exists()


@pytest.mark.parametrize("who", ["viewer", "approver"])
def test_only_admins_edit_over_the_api(request, book, who):
    user = request.getfixturevalue(who)

    response = api(user).patch("/api/heuristics/H-1/", {"text": "mine now", "reason": "because"}, format="json")

    assert response.status_code == 403
    assert Heuristic.objects.get(code="H-1").text != "mine now"


def test_the_api_answers_404_for_an_unknown_code(viewer, book):
    assert api(viewer).get("/api/heuristics/H-404/").status_code == 404


def test_the_playbook_page_costs_the_same_queries_for_a_bigger_playbook(viewer, book, django_assert_num_queries):
    client = logged_in(viewer)
    with CaptureQueriesContext(connection) as small:
        client.get(reverse("heuristic_list"))
    for number in range(20, 40):
        Heuristic.objects.create(code=f"H-{number}", text=f"rule {number}", factor="trend", status="active")
        cite(book["loser"], f"H-{number}")

    with django_assert_num_queries(len(small.captured_queries)):
        client.get(reverse("heuristic_list"))
