"""A provider whose error text echoes credentials: none of them is stored, published, shown or logged."""

from __future__ import annotations

import io
import logging
from decimal import Decimal

import pytest
from django.core.serializers.json import DjangoJSONEncoder

from agents import clients
from agents.domain.llm import CallRecord, ModelError
from agents.domain.pricing import PriceTable
from agents.models import ModelCall
from agents.recording import BufferedRecorder
from security.redaction import RedactSecretsFilter
from trading import events
from trading.models import PipelineRun, StageRun
from trading.pipeline import orchestrator

KEY = "sk-ant-api03-" + "Qw3rTy" * 8
GATEWAY_TOKEN = "gw_live_0f9e8d7c6b5a4321"
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2Vzc2lvbg.c2lnbmF0dXJl"
LEAKS = (KEY, GATEWAY_TOKEN, BEARER, KEY[-20:])


def _echo() -> str:
    return (
        f"anthropic: APIStatusError: 502 bad gateway; request was "
        f"{{'headers': {{'x-api-key': '{KEY}', 'authorization': 'Bearer {BEARER}'}}}} "
        f"upstream key {KEY}, gateway credential {GATEWAY_TOKEN}"
    )


class LeakyProvider:
    """A paid provider behind a gateway that echoes the request's credentials in its errors."""

    provider = "anthropic"

    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    def complete(self, request, *, model):
        raise self.error(_echo())


@pytest.fixture
def configured(settings, monkeypatch):
    settings.LLM = {**settings.LLM, "ANTHROPIC_API_KEY": KEY, "PRICES": {"*": {"input": 3, "output": 15}}}
    monkeypatch.setenv("GATEWAY_TOKEN", GATEWAY_TOKEN)


@pytest.fixture
def published(monkeypatch) -> list[dict]:
    sent: list[dict] = []
    monkeypatch.setattr(events, "_send", lambda group, message: sent.append(message))
    return sent


@pytest.fixture
def logged() -> io.StringIO:
    """What the configured console handler writes (the filter sits on the handler, so records from
    every logger that propagates to the root pass through it)."""
    handlers = [
        h for h in logging.getLogger().handlers if any(isinstance(f, RedactSecretsFilter) for f in h.filters)
    ]
    assert handlers, "LOGGING installs RedactSecretsFilter on the console handler"
    stream = io.StringIO()
    previous = [h.setStream(stream) for h in handlers]
    yield stream
    for handler, old in zip(handlers, previous, strict=True):
        handler.setStream(old)


def _everything_stored() -> str:
    rows = [
        *ModelCall.objects.values("error", "reply"),
        *PipelineRun.objects.values("failure_reason"),
        *StageRun.objects.values("error", "output"),
    ]
    return DjangoJSONEncoder().encode(rows)


def _assert_clean(text: str, where: str) -> None:
    for leak in LEAKS:
        assert leak not in text, f"{where} contains a credential"


@pytest.mark.parametrize("error", [ModelError, RuntimeError], ids=["provider-error", "unexpected-error"])
def test_a_provider_error_echoing_credentials_leaks_them_nowhere(
    error, configured, published, logged, instrument_with_bars, roomy_account, client, viewer, monkeypatch
):
    monkeypatch.setattr(clients, "build_llm_client", lambda provider, **kwargs: LeakyProvider(error))
    run = orchestrator.pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="anthropic"
    )

    orchestrator.pipeline_run_execute(run.pk)
    logging.getLogger("agents.providers").error("provider said: %s", _echo())

    run.refresh_from_db()
    assert run.status == PipelineRun.Status.FAILED
    assert "[redacted]" in run.failure_reason  # the reason is kept, only the credentials are cut
    if error is ModelError:
        assert ModelCall.objects.filter(run=run, ok=False).exists()
    _assert_clean(_everything_stored(), "the database")
    assert published, "the run published its events"
    _assert_clean(DjangoJSONEncoder().encode(published), "a published event")
    assert "provider said" in logged.getvalue()
    _assert_clean(logged.getvalue(), "the log")
    client.force_login(viewer)
    _assert_clean(client.get(f"/runs/{run.pk}/").content.decode(), "the run page")
    _assert_clean(client.get(f"/api/runs/{run.pk}/").content.decode(), "the run API")


def test_a_logged_exception_has_its_credentials_cut_from_the_traceback(configured, logged):
    try:
        raise ModelError(_echo())
    except ModelError:
        logging.getLogger("trading.pipeline.orchestrator").exception("run 1 failed in stage debate")

    assert "Traceback" in logged.getvalue() and "run 1 failed" in logged.getvalue()
    _assert_clean(logged.getvalue(), "the log")


def test_a_recorded_reply_and_error_are_cut_before_they_are_written(configured, db):
    recorder = BufferedRecorder(run_id=None, prices=PriceTable())
    recorder.record(
        CallRecord(
            role="technical",
            symbol="RELIANCE",
            tier="default",
            provider="anthropic",
            model="claude-sonnet-4-5",
            system="",
            prompt="p",
            reply=f'{{"note": "my key is {KEY}"}}',
            input_tokens=1,
            output_tokens=1,
            latency_ms=1.0,
            ok=False,
            error=f"invalid output: Authorization: Bearer {BEARER}",
        )
    )

    recorder.flush()

    call = ModelCall.objects.get()
    _assert_clean(call.reply + call.error, "the model call")
    assert call.cost >= Decimal(0)


def test_a_celery_workers_log_handlers_get_the_filter_too():
    from security.apps import install_redaction_filter

    logger = logging.getLogger("celery-like-test-logger")
    handler = logging.StreamHandler(io.StringIO())
    logger.addHandler(handler)
    try:
        install_redaction_filter(logger=logger)
        install_redaction_filter(logger=logger)  # idempotent: once per handler
    finally:
        logger.removeHandler(handler)

    assert sum(isinstance(f, RedactSecretsFilter) for f in handler.filters) == 1
