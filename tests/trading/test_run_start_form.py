"""Starting runs is checked once (``start.run_request``): the run form and the API refuse exactly
the same inputs with the same words, field by field, and nothing is created when anything is
refused. The page comes back with each problem next to its field and what the person typed."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from trading.models import PipelineRun

PROVIDER_WORDS = "provider 'skynet' is not one of offline, anthropic, openai, ollama, replay"

# (what is sent, the field refused, the words both edges use)
BAD_REQUESTS = [
    pytest.param({"symbols": ["RELIANCE", "NOPE"]}, "symbols", "NOPE is unknown or inactive", id="unknown-symbol"),
    pytest.param(
        {"symbols": ["RELIANCE"], "as_of": "2030-01-01"},
        "as_of",
        f"as_of 2030-01-01 is after today, {timezone.localdate()}, the current session ({settings.TIME_ZONE})",
        id="future-date",
    ),
    pytest.param(
        {"symbols": ["RELIANCE"], "as_of": "1989-12-31"},
        "as_of",
        "as_of 1989-12-31 is before 1990-01-01, the earliest date the desk accepts",
        id="before-the-floor",
    ),
    pytest.param(
        {"symbols": ["RELIANCE"], "as_of": "31/12/2024"},
        "as_of",
        "as_of '31/12/2024' is not a date (YYYY-MM-DD)",
        id="not-a-date",
    ),
    pytest.param({"symbols": ["RELIANCE"], "provider": "skynet"}, "provider", PROVIDER_WORDS, id="unknown-provider"),
    pytest.param({}, "symbols", "choose at least one instrument", id="empty"),
    pytest.param({"symbols": ["RELIANCE", " "]}, "symbols", "symbols[1] is blank", id="blank-symbol"),
]


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _page_errors(response) -> dict[str, list[str]]:
    return {name: list(problems) for name, problems in response.context["start_form"].errors.items()}


@pytest.mark.parametrize(("sent", "field", "words"), BAD_REQUESTS)
def test_the_page_and_the_api_refuse_the_same_input_with_the_same_words(
    client, approver, instrument_with_bars, sent, field, words
):
    client.force_login(approver)

    page = client.post(reverse("run_start"), sent)
    api = _api(approver).post("/api/runs/", sent, format="json")

    assert page.status_code == 400 and api.status_code == 400
    assert _page_errors(page) == {field: [words]}
    body = api.json()
    assert body[field] == [words] and words in body["detail"]
    assert set(body) == {"detail", field}
    assert not PipelineRun.objects.exists()


def test_every_refused_field_is_named_at_once_and_the_page_keeps_what_was_typed(
    client, approver, instrument_with_bars
):
    sent = {"symbols": ["RELIANCE", "NOPE"], "as_of": "1989-12-31", "provider": "skynet"}
    client.force_login(approver)

    page = client.post(reverse("run_start"), sent)
    api = _api(approver).post("/api/runs/", sent, format="json")

    assert set(_page_errors(page)) == set(api.json()) - {"detail"} == {"symbols", "as_of", "provider"}
    assert api.json()["detail"] == (
        "symbols: NOPE is unknown or inactive; as_of 1989-12-31 is before 1990-01-01, the earliest date the desk "
        f"accepts; {PROVIDER_WORDS}"
    )
    html = page.content.decode()
    assert 'value="RELIANCE" checked' in html and 'name="as_of" value="1989-12-31"' in html
    assert 'id="symbols-error"' in html and 'id="as-of-error"' in html and 'id="provider-error"' in html
    assert "Pipeline runs" in html  # the whole page, its run list included
    assert not PipelineRun.objects.exists()


def test_a_paid_provider_without_a_price_is_refused_by_both_before_anything_is_created(
    client, approver, instrument_with_bars, settings
):
    settings.LLM = {**settings.LLM, "DEFAULT_MODEL": "claude-unreleased-9", "PRICES": {}}
    sent = {"symbols": ["RELIANCE"], "provider": "anthropic"}
    client.force_login(approver)

    page = client.post(reverse("run_start"), sent)
    api = _api(approver).post("/api/runs/", sent, format="json")

    assert page.status_code == 400 and api.status_code == 400
    [words] = _page_errors(page)["provider"]
    assert "claude-unreleased-9 has no price" in words and "LLM_PRICES" in words
    assert api.json()["provider"] == [words]
    assert not PipelineRun.objects.exists()


def test_a_hostile_body_is_a_400_never_a_500(approver, instrument_with_bars):
    """A JSON body can carry any type where the form carries strings: the check refuses each."""
    api = _api(approver)

    answers = [
        api.post("/api/runs/", body, format="json")
        for body in (
            {"symbols": "RELIANCE"},
            {"symbols": [1, None]},
            {"symbols": ["RELIANCE"], "as_of": 20240101},
            {"symbols": ["RELIANCE"], "provider": ["offline"]},
            {"symbols": ["A\x00B"]},
            {"symbols": ["R" * 65]},
            {"symbols": ["RELIANCE"] * 501},
            ["RELIANCE"],
        )
    ]

    assert [answer.status_code for answer in answers] == [400] * len(answers)
    assert all(answer.json()["detail"] for answer in answers)
    assert not PipelineRun.objects.exists()


def test_a_valid_request_starts_the_same_runs_from_the_page_and_the_api(
    client, approver, instrument_with_bars, django_capture_on_commit_callbacks
):
    as_of = instrument_with_bars.bars.filter(date__lte=timezone.localdate()).latest("date").date
    client.force_login(approver)

    with django_capture_on_commit_callbacks():
        page = client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "provider": "offline"})
        api = _api(approver).post("/api/runs/", {"symbols": ["reliance"], "provider": "offline"}, format="json")

    runs = list(PipelineRun.objects.order_by("pk"))
    assert page.status_code == 302 and page["Location"] == reverse("run_detail", args=[runs[0].pk])
    assert api.status_code == 202 and api.json()[0]["id"] == runs[1].pk
    assert [(run.instrument.symbol, run.as_of, run.provider) for run in runs] == [("RELIANCE", as_of, "offline")] * 2


def test_an_explicit_date_inside_the_window_is_kept(client, approver, instrument_with_bars):
    earlier = instrument_with_bars.bars.order_by("date")[10].date
    assert dt.date(1990, 1, 1) <= earlier <= timezone.localdate()
    client.force_login(approver)

    client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "as_of": earlier.isoformat(), "provider": "offline"})

    assert PipelineRun.objects.get().as_of == earlier
