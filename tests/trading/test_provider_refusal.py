"""A provider without its key or address is not offered, and a run on one is refused at once with
why, nothing created: before, such a run sat at "RUNNING · 0 model calls" with the reason only in
the worker log."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents.clients import provider_unavailable, providers_available
from agents.providers.factory import missing_configuration
from trading.models import PipelineRun, Strategy, StrategyRun

PRICED = {"*": {"input": "3", "output": "15"}}  # every model priced: the price is never the reason here
NO_CREDENTIALS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OLLAMA_HOST": ""}


@pytest.fixture
def unconfigured(settings, monkeypatch):
    """No key, no address in the settings nor in the environment; every model has a price."""
    for name in NO_CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    settings.LLM = {**settings.LLM, **NO_CREDENTIALS, "PRICES": PRICED, "PROVIDER": "offline"}
    return settings


def _provider_options(html: str) -> list[str]:
    select = html.split('id="run-provider"', 1)[1].split("</select>", 1)[0]
    return [part.split('"', 1)[0] for part in select.split('<option value="')[1:]]


# --- what "configured" means (pure) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "configured", "environ", "names"),
    [
        ("offline", {}, {}, None),
        ("replay", {}, {}, None),
        ("anthropic", {}, {}, "ANTHROPIC_API_KEY"),
        ("anthropic", {"ANTHROPIC_API_KEY": "  "}, {}, "ANTHROPIC_API_KEY"),
        ("anthropic", {}, {"ANTHROPIC_API_KEY": "sk-ant-test"}, None),
        ("openai", {"OPENAI_API_KEY": "sk-test"}, {}, None),
        ("openai", {}, {}, "OPENAI_API_KEY"),
        ("ollama", {}, {}, "OLLAMA_HOST"),
        ("ollama", {"OLLAMA_HOST": "gpu-box:11434"}, {}, None),
        ("ollama", {"OLLAMA_HOST": "ftp://gpu-box"}, {}, "OLLAMA_HOST"),
    ],
)
def test_a_provider_is_configured_when_its_key_or_address_is_set(provider, configured, environ, names):
    problem = missing_configuration(provider, configured, environ)

    if names is None:
        assert problem == ""
    else:
        assert names in problem and provider in problem


# --- the run form and the API ---------------------------------------------------------------------


def test_the_run_form_offers_only_the_providers_that_can_run_and_names_why_the_others_cannot(
    client, approver, instrument_with_bars, unconfigured
):
    client.force_login(approver)

    html = client.get(reverse("run_list")).content.decode()

    assert _provider_options(html) == ["offline", "replay"]
    missing = html.split('id="providers-missing"', 1)[1].split("</p>", 1)[0]
    assert "ANTHROPIC_API_KEY" in missing and "OPENAI_API_KEY" in missing and "OLLAMA_HOST" in missing


def test_a_provider_is_offered_once_its_key_is_set(client, approver, instrument_with_bars, unconfigured):
    unconfigured.LLM = {**unconfigured.LLM, "ANTHROPIC_API_KEY": "sk-ant-test"}
    client.force_login(approver)

    html = client.get(reverse("run_list")).content.decode()

    assert "anthropic" in _provider_options(html) and providers_available() == ["offline", "anthropic", "replay"]


def test_a_forged_post_naming_an_unconfigured_provider_is_refused_with_why_and_creates_nothing(
    client, approver, instrument_with_bars, unconfigured
):
    client.force_login(approver)

    page = client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "provider": "anthropic"})

    assert page.status_code == 400
    error = page.content.decode().split('id="provider-error"', 1)[1].split("</p>", 1)[0]
    assert "anthropic is not configured" in error and "ANTHROPIC_API_KEY" in error
    assert not PipelineRun.objects.exists()


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
def test_the_api_refuses_an_unconfigured_provider_with_a_400_naming_it(
    approver, instrument_with_bars, unconfigured, provider
):
    api = APIClient()
    api.force_authenticate(approver)

    response = api.post("/api/runs/", {"symbols": ["RELIANCE"], "provider": provider}, format="json")

    assert response.status_code == 400
    assert response.json()["provider"] == [provider_unavailable(provider)]
    assert f"{provider} is not configured" in response.json()["detail"]
    assert not PipelineRun.objects.exists()


def test_an_ollama_run_starts_once_its_address_is_set(
    approver, instrument_with_bars, unconfigured, django_capture_on_commit_callbacks
):
    unconfigured.LLM = {**unconfigured.LLM, "OLLAMA_HOST": "localhost:11434"}
    api = APIClient()
    api.force_authenticate(approver)

    with django_capture_on_commit_callbacks():  # queued, not sent: no broker in this test
        response = api.post("/api/runs/", {"symbols": ["RELIANCE"], "provider": "ollama"}, format="json")

    assert response.status_code == 202
    assert PipelineRun.objects.get().provider == "ollama"


# --- strategies -----------------------------------------------------------------------------------


def test_a_strategy_on_an_unconfigured_provider_is_refused_at_start_with_why(
    client, approver, instrument_with_bars, unconfigured
):
    strategy = Strategy.objects.create(name="claude-swing", philosophy="swing trades", provider="anthropic")
    strategy.universe.add(instrument_with_bars)
    client.force_login(approver)

    response = client.post(reverse("strategy_start", args=[strategy.pk]), follow=True)

    page = response.content.decode()
    assert "claude-swing runs on anthropic" in page and "ANTHROPIC_API_KEY" in page
    assert not StrategyRun.objects.exists() and not PipelineRun.objects.exists()
