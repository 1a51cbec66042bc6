"""The research API: sessions, trials and candidates for any authenticated user; a session started
only by approvers and admins (202, queued once committed), a bad body refused by field with nothing
created; filters checked; a candidate's config file downloaded as JSON; every route in the schema."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from research.models import ResearchSession
from tests.conftest import make_bars
from tests.research import web_rows

pytestmark = pytest.mark.django_db

SESSIONS = "/api/research/sessions/"


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    sent: list[int] = []
    monkeypatch.setattr("research.start.queue_session", sent.append)
    return sent


@pytest.fixture
def seeded(instrument):
    make_bars(instrument, 260)
    return instrument


def body(**values):
    return {
        "goal": "mean reversion that pays for its costs",
        "symbols": ["RELIANCE"],
        "strategy": "rsi_reversion",
        "proposer": "fixed",
        "max_trials": 4,
        "dry_rounds": 2,
        "seed": 3,
        **values,
    }


@pytest.mark.parametrize(
    "url",
    [
        SESSIONS,
        f"{SESSIONS}1/",
        "/api/research/trials/",
        "/api/research/trials/1/",
        "/api/research/candidates/",
        "/api/research/candidates/1/",
        "/api/research/candidates/1/config/",
    ],
)
def test_every_route_needs_credentials(url, approver):
    web_rows.finished_session(approver)
    response = APIClient().get(url)
    assert response.status_code == 401 and "detail" in response.json()


def test_sessions_are_listed_latest_first_and_filtered_by_status(viewer, approver):
    done = web_rows.finished_session(approver)
    running = web_rows.session(approver)

    listed = api(viewer).get(SESSIONS).json()["results"]
    assert [row["id"] for row in listed] == [running.pk, done.pk]
    assert listed[1]["pbo"] == 0.25 and listed[1]["status"] == "done" and listed[1]["created_by"] == "arjun"

    only_done = api(viewer).get(SESSIONS, {"status": "done"}).json()["results"]
    assert [row["id"] for row in only_done] == [done.pk]
    refused = api(viewer).get(SESSIONS, {"status": "sleeping"})
    assert refused.status_code == 400 and "status 'sleeping' is not one of" in refused.json()["detail"]


def test_a_session_in_detail_carries_its_shortlist(viewer, approver):
    research = web_rows.finished_session(approver, trials=4, shortlist=2)

    detail = api(viewer).get(f"{SESSIONS}{research.pk}/").json()

    assert detail["config"] == {"gates": {"min_dsr": 0.9}} and detail["stop_reason"] == "trial budget spent"
    assert [row["rank"] for row in detail["candidates"]] == [1, 2]
    first = detail["candidates"][0]
    assert first["holdout_metrics"]["trades"] == 6 and first["strategy"] == "sma_crossover"
    assert first["config_url"] == f"/api/research/candidates/{first['id']}/config/"
    assert api(viewer).get(f"{SESSIONS}999999/").status_code == 404


def test_trials_are_filtered_by_session_and_decision(viewer, approver):
    one = web_rows.finished_session(approver, trials=4)
    other = web_rows.finished_session(approver, trials=2)
    client = api(viewer)

    trials = client.get("/api/research/trials/", {"session": one.pk}).json()["results"]
    assert [row["number"] for row in trials] == [1, 2, 3, 4]
    assert trials[0]["folds"][0]["is_metrics"]["sharpe_per_period"] == pytest.approx(0.08)
    kept = client.get("/api/research/trials/", {"session": one.pk, "decision": "kept"}).json()["results"]
    assert [row["number"] for row in kept] == [1, 3]
    everything = client.get("/api/research/trials/").json()["results"]
    assert [row["session"] for row in everything][:2] == [other.pk, other.pk]  # latest session first
    for bad in ({"session": "x"}, {"session": "-1"}, {"session": "²"}, {"session": "9" * 30}, {"decision": "maybe"}):
        answer = client.get("/api/research/trials/", bad)
        assert answer.status_code == 400 and answer.json()["detail"]


def test_candidates_and_their_config_download(viewer, approver):
    research = web_rows.finished_session(approver)
    client = api(viewer)

    candidates = client.get("/api/research/candidates/", {"session": research.pk}).json()["results"]
    assert [row["rank"] for row in candidates] == [1, 2]
    one = client.get(f"/api/research/candidates/{candidates[0]['id']}/").json()
    assert one["trial_number"] == 1 and one["dsr"] == pytest.approx(0.52)

    download = client.get(candidates[0]["config_url"])
    assert download.status_code == 200 and download["Content-Type"] == "application/json"
    assert "attachment" in download["Content-Disposition"]
    assert json.loads(download.content) == research.candidates.get(rank=1).config
    assert client.get("/api/research/candidates/999999/config/").status_code == 404


def test_a_viewer_may_not_start_a_session(viewer, seeded, queued):
    refused = api(viewer).post(SESSIONS, body(), format="json")

    assert refused.status_code == 403 and "approver or admin" in refused.json()["detail"]
    assert not ResearchSession.objects.exists() and queued == []


def test_an_approver_starts_a_session(approver, seeded, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        started = api(approver).post(SESSIONS, body(), format="json")

    assert started.status_code == 202, started.json()
    session = ResearchSession.objects.get()
    assert started.json()["id"] == session.pk and started.json()["status"] == "queued"
    assert queued == [session.pk]
    assert (session.proposer, session.strategy, session.max_trials, session.seed) == ("fixed", "rsi_reversion", 4, 3)
    assert session.max_tokens > 0  # the setting's budget, since the body left it out


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"symbols": ["NOPE"]}, "symbols"),
        ({"symbols": []}, "symbols"),
        ({"strategy": "tea_leaves"}, "strategy"),
        ({"proposer": "crystal_ball"}, "proposer"),
        ({"max_trials": 0}, "max_trials"),
        ({"max_trials": "many"}, "max_trials"),
        ({"seed": 2**40}, "seed"),
        ({"goal": ""}, "goal"),
        ({"proposer": "optuna", "allow_code_gen": True}, "allow_code_gen"),
    ],
)
def test_a_bad_body_is_refused_by_field_and_creates_nothing(approver, seeded, queued, values, field):
    refused = api(approver).post(SESSIONS, body(**values), format="json")

    assert refused.status_code == 400, refused.json()
    assert field in refused.json() and refused.json()["detail"]
    assert not ResearchSession.objects.exists() and queued == []


def test_reads_are_the_only_verbs_on_trials_and_candidates(approver):
    research = web_rows.finished_session(approver)
    client = api(approver)
    assert client.post("/api/research/trials/", {}, format="json").status_code == 405
    assert client.delete(f"{SESSIONS}{research.pk}/").status_code == 405
    assert client.post("/api/research/candidates/", {}, format="json").status_code == 405


def test_the_schema_lists_every_research_route(db):
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for route in (
        "/api/research/sessions/",
        "/api/research/sessions/{session_id}/",
        "/api/research/trials/",
        "/api/research/trials/{trial_id}/",
        "/api/research/candidates/",
        "/api/research/candidates/{candidate_id}/",
        "/api/research/candidates/{candidate_id}/config/",
    ):
        assert route in paths, route
    assert set(paths["/api/research/sessions/"]) == {"get", "post"}
    assert {"400", "401", "403", "429"} <= set(paths["/api/research/sessions/"]["post"]["responses"])
