from __future__ import annotations

from django.urls import reverse
from rest_framework.test import APIClient

from trading.models import PipelineRun
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute


def test_a_viewer_sees_runs_but_no_start_form_and_cannot_start_one(client, viewer, instrument_with_bars):
    client.force_login(viewer)

    page = client.get(reverse("run_list")).content.decode()
    forged = client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "provider": "offline"})

    assert "Pipeline runs" in page and 'id="start-runs"' not in page
    assert forged.status_code == 403
    assert not PipelineRun.objects.exists()


def test_an_approver_queues_a_run_after_commit(
    client, approver, instrument_with_bars, django_capture_on_commit_callbacks
):
    client.force_login(approver)

    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "provider": "offline"})

    run = PipelineRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.pk])
    assert run.status == PipelineRun.Status.QUEUED and run.created_by == approver
    assert run.as_of == instrument_with_bars.bars.latest("date").date
    assert len(callbacks) == 1


def test_starting_without_instruments_explains_why(client, approver, instrument_with_bars):
    client.force_login(approver)

    response = client.post(reverse("run_start"), {"provider": "offline"})

    assert response.status_code == 400 and "choose at least one instrument" in response.content.decode()
    assert not PipelineRun.objects.exists()


def test_the_run_page_shows_notes_debate_thesis_and_risk(client, viewer, instrument_with_bars):
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    pipeline_run_execute(run.pk)
    client.force_login(viewer)

    body = client.get(reverse("run_detail", args=[run.pk])).content.decode()

    assert "completed" in body
    for section in ('data-role="technical"', "Debate", 'id="thesis"', 'id="risk"', "abstaining"):
        assert section in body
    fragment = client.get(reverse("run_detail", args=[run.pk]), {"fragment": "1"}).content.decode()
    assert 'id="run-state"' in fragment and "<html" not in fragment


def test_the_api_lists_reads_and_starts_runs(
    viewer, approver, instrument_with_bars, django_capture_on_commit_callbacks
):
    as_of = instrument_with_bars.bars.latest("date").date
    run = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
    pipeline_run_execute(run.pk)
    api = APIClient()
    api.force_authenticate(viewer)

    listed = api.get("/api/runs/").json()
    detail = api.get(f"/api/runs/{run.pk}/").json()
    refused = api.post("/api/runs/", {"symbols": ["RELIANCE"]}, format="json")

    assert listed["results"][0]["id"] == run.pk and listed["results"][0]["status"] == "completed"
    assert [s["stage"] for s in detail["stages"]] == ["features", "context", "analysts", "debate", "trader", "risk"]
    assert isinstance(detail["totals"]["calls"], int) and detail["totals"]["calls"] > 0
    assert isinstance(detail["totals"]["input_tokens"], int) and isinstance(detail["totals"]["cost"], float)
    assert refused.status_code == 403

    api.force_authenticate(approver)
    with django_capture_on_commit_callbacks() as callbacks:
        started = api.post("/api/runs/", {"symbols": ["RELIANCE", "NOPE"]}, format="json")
        assert started.status_code == 400 and "NOPE" in str(started.json())
        started = api.post("/api/runs/", {"symbols": ["RELIANCE"], "as_of": str(as_of)}, format="json")
    assert started.status_code == 202 and started.json()[0]["status"] == "queued"
    assert len(callbacks) == 1
