"""The critique API: critiques and their actions read by any authenticated user (filtered by strategy,
status and replay; a bad filter a 400 naming it), and a free-form action attested by an approver
with a comment through the same service as the page (a viewer 403, no comment 400, a machine-checked
kind 409), each refusal changing nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from reviews.models import CritiqueAction
from tests.reviews.critique.web_rows import FREE_FORM, REDUCE, critique_for, runs_for, strategy_named
from trading.models import AuditEvent, StrategyDirective

pytestmark = pytest.mark.django_db


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def archive():
    momentum, value = strategy_named("Momentum"), strategy_named("Value")
    runs_for(momentum, 12)
    first = critique_for(
        momentum, scores={"overconfidence": 0.7}, actions=[REDUCE, FREE_FORM], diagnosis="Conviction runs hot."
    )
    second = critique_for(momentum, sequence=2, run_count=20, status="failed", error="the critic timed out")
    other = critique_for(value, severity="advisory", actions=[FREE_FORM])
    replayed = critique_for(momentum, sequence=1, is_replay=True)
    return {"first": first, "second": second, "other": other, "replayed": replayed, "momentum": momentum}


def test_it_lists_live_critiques_latest_first_with_their_actions(viewer, archive):
    answer = api(viewer).get(reverse("api-critiques"))
    assert answer.status_code == 200
    rows = answer.json()["results"]
    assert {row["id"] for row in rows} == {archive["first"].pk, archive["second"].pk, archive["other"].pk}
    first = next(row for row in rows if row["id"] == archive["first"].pk)
    assert first["fired"] == ["overconfidence"]
    assert [(a["number"], a["kind"], a["status"]) for a in first["actions"]] == [
        (1, "reduce_concentration", "open"),
        (2, "free_form", "open"),
    ]
    assert first["diagnosis"] == "Conviction runs hot."


def test_it_filters_by_strategy_status_and_replay(viewer, archive):
    client = api(viewer)
    by_strategy = client.get(reverse("api-critiques"), {"strategy": archive["momentum"].pk}).json()["results"]
    assert {row["id"] for row in by_strategy} == {archive["first"].pk, archive["second"].pk}
    failed = client.get(reverse("api-critiques"), {"status": "failed"}).json()["results"]
    assert [row["error"] for row in failed] == ["the critic timed out"]
    replays = client.get(reverse("api-critiques"), {"replay": "1"}).json()["results"]
    assert [row["id"] for row in replays] == [archive["replayed"].pk]


@pytest.mark.parametrize(
    ("params", "named"),
    [({"strategy": "x"}, "strategy"), ({"strategy": "999"}, "no strategy"), ({"status": "odd"}, "status"),
     ({"replay": "maybe"}, "replay")],
)  # fmt: skip
def test_a_bad_filter_is_a_400_naming_it(viewer, archive, params, named):
    answer = api(viewer).get(reverse("api-critiques"), params)
    assert answer.status_code == 400
    assert named in answer.json()["detail"]


def test_a_critique_in_full_holds_its_evidence_findings_and_directive(viewer, archive):
    answer = api(viewer).get(reverse("api-critique", args=[archive["first"].pk]))
    assert answer.status_code == 200
    body = answer.json()
    assert len(body["findings"]) == 7
    assert body["directive"]["severity"] == "directive"
    assert "figures" in body["evidence"]
    assert len(body["actions"]) == 2


def test_it_needs_credentials(archive):
    assert api().get(reverse("api-critiques")).status_code in (401, 403)


def _attest(user, action: CritiqueAction, body: dict):
    return api(user).post(reverse("api-critique-action-attest", args=[action.pk]), body, format="json")


def test_an_approver_attests_a_free_form_action(approver, archive):
    action = archive["first"].actions.get(kind="free_form")
    answer = _attest(approver, action, {"comment": "A fundamentals family was added on 14 Mar."})
    assert answer.status_code == 200
    assert answer.json()["status"] == "attested"
    assert answer.json()["attested_by"] == approver.username
    assert AuditEvent.objects.filter(action="critique_action_attested").count() == 1
    directive = StrategyDirective.objects.get(source_ref=archive["first"].pk)
    assert [item["kind"] for item in directive.blocking] == ["reduce_concentration"]


def test_attesting_the_last_open_action_lifts_the_directive(approver, archive):
    other = archive["other"]
    answer = _attest(approver, other.actions.get(), {"comment": "Done and written up in the desk notes."})
    assert answer.status_code == 200
    directive = StrategyDirective.objects.get(source_ref=other.pk)
    assert directive.lifted_at is not None and directive.blocking == []


@pytest.mark.parametrize(
    ("who", "kind", "body", "status"),
    [("viewer", "free_form", {"comment": "done"}, 403), ("approver", "free_form", {"comment": " "}, 400),
     ("approver", "free_form", {}, 400), ("approver", "reduce_concentration", {"comment": "done"}, 409)],
)  # fmt: skip
def test_a_refused_attestation_changes_nothing(request, archive, who, kind, body, status):
    user = request.getfixturevalue(who)
    action = archive["first"].actions.get(kind=kind)
    answer = _attest(user, action, body)
    assert answer.status_code == status, answer.json()
    assert answer.json()["detail"]
    action.refresh_from_db()
    assert action.status == "open" and action.attestation == ""
    assert not AuditEvent.objects.filter(action="critique_action_attested").exists()


def test_attesting_twice_is_a_409(approver, archive):
    action = archive["first"].actions.get(kind="free_form")
    assert _attest(approver, action, {"comment": "first"}).status_code == 200
    again = _attest(approver, action, {"comment": "second"})
    assert again.status_code == 409
    action.refresh_from_db()
    assert action.attestation == "first"


def test_an_action_reads_alone(viewer, archive):
    action = archive["first"].actions.get(kind="reduce_concentration")
    answer = api(viewer).get(reverse("api-critique-action", args=[action.pk]))
    assert answer.status_code == 200
    assert answer.json()["params"] == {"max_pct": 20.0}
    assert answer.json()["attested_by"] is None
