from __future__ import annotations

from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from config.asgi import application
from trading.consumers import UNAUTHENTICATED
from trading.events import DeskEvent, publish

ORIGIN = (b"origin", b"http://testserver")


def _session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


def test_an_anonymous_socket_is_refused(db):
    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/events/", headers=[ORIGIN])
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(scenario)() == (False, UNAUTHENTICATED)


def test_a_logged_in_viewer_receives_published_desk_events(viewer):
    cookie = _session_cookie(viewer)

    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/events/", headers=[ORIGIN, (b"cookie", cookie)])
        connected, _ = await communicator.connect()
        assert connected
        await sync_to_async(publish)(DeskEvent(kind="features.computed", data={"symbol": "RELIANCE"}))
        message = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return message

    message = async_to_sync(scenario)()

    assert message["kind"] == "features.computed"
    assert message["data"] == {"symbol": "RELIANCE"}


def test_the_channel_layer_is_the_configured_one():
    backend = settings.CHANNEL_LAYERS["default"]["BACKEND"]
    assert backend.endswith("RedisChannelLayer" if settings.REDIS_URL else "InMemoryChannelLayer")


def test_a_run_page_socket_receives_each_stage_as_it_happens(viewer, instrument_with_bars):
    from trading.pipeline.orchestrator import STAGES, pipeline_run_create, pipeline_run_execute

    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    cookie = _session_cookie(viewer)

    async def scenario():
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=[ORIGIN, (b"cookie", cookie)])
        connected, _ = await communicator.connect()
        assert connected
        await sync_to_async(pipeline_run_execute)(run.pk)
        events = []
        while not events or events[-1]["kind"] != "run.finished":
            events.append(await communicator.receive_json_from(timeout=10))
        await communicator.disconnect()
        return events

    events = async_to_sync(scenario)()

    started = [e["data"]["stage"] for e in events if e["kind"] == "stage.started"]
    finished = [e["data"]["stage"] for e in events if e["kind"] == "stage.finished"]
    assert started == list(STAGES) and finished == list(STAGES)
    assert events[-1]["data"]["status"] == "completed"
