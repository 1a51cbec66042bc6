"""API tokens: hashed at rest, expiring, revoked by a password change; the API is throttled."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from django.core.cache import caches
from django.db import connection
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

# Each test speaks from its own address, so throttle counts never carry from one test to another.
ADDRESS = "10.20.30.40"


@pytest.fixture
def anon(db):
    return APIClient(REMOTE_ADDR=ADDRESS)


@pytest.fixture(autouse=True)
def _forget_throttle_history(viewer):
    """Throttle history lives in a cache that outlives a test (Redis in CI): forget ours, before and after."""
    keys = [f"throttle_token_{ADDRESS}", f"throttle_anon_{ADDRESS}", f"throttle_user_{viewer.pk}"]
    caches["throttle"].delete_many(keys)
    yield
    caches["throttle"].delete_many(keys)


def _obtain(client: APIClient, password: str = PASSWORD):
    return client.post("/api/auth/token/", {"username": "vera", "password": password})


def _instruments(token: str):
    client = APIClient(REMOTE_ADDR=ADDRESS)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/instruments/")


def test_a_token_obtained_with_a_password_opens_the_api_and_says_when_it_expires(anon, viewer, instrument):
    response = _obtain(anon)

    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"token", "expiry"}
    assert _instruments(body["token"]).status_code == 200
    assert dt.datetime.fromisoformat(body["expiry"]) > timezone.now()


def test_the_token_is_stored_only_as_a_hash(anon, viewer):
    token = _obtain(anon).json()["token"]

    row = AuthToken.objects.get(user=viewer)
    assert row.digest == hashlib.sha512(token.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {AuthToken._meta.db_table}")  # every column, as stored on disk
        stored = " ".join(str(value) for record in cursor.fetchall() for value in record)
    assert token not in stored


def test_a_token_stops_working_once_its_ttl_has_passed(anon, viewer, instrument, settings, monkeypatch):
    settings.REST_KNOX = {**settings.REST_KNOX, "TOKEN_TTL": dt.timedelta(minutes=5)}
    token = _obtain(anon).json()["token"]
    assert _instruments(token).status_code == 200

    later = timezone.now() + dt.timedelta(minutes=5, seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)

    response = _instruments(token)
    assert response.status_code == 401
    assert not AuthToken.objects.filter(user=viewer).exists()  # an expired token is deleted, not kept


def test_the_token_ttl_comes_from_the_environment(settings):
    assert settings.REST_KNOX["TOKEN_TTL"] == dt.timedelta(hours=settings.API_TOKEN_TTL_HOURS)
    assert settings.REST_KNOX["TOKEN_TTL"] > dt.timedelta(0)


def test_changing_the_password_revokes_every_token_of_that_user(anon, viewer, approver, instrument):
    first, second = _obtain(anon).json()["token"], _obtain(anon).json()["token"]
    others = AuthToken.objects.create(user=approver)[1]

    viewer.set_password("a brand new passphrase 42")
    viewer.save()

    assert _instruments(first).status_code == 401
    assert _instruments(second).status_code == 401
    assert _instruments(others).status_code == 200  # another user's tokens are untouched


def test_logging_in_again_does_not_revoke_the_tokens_already_issued(anon, viewer, instrument):
    first = _obtain(anon).json()["token"]
    _obtain(anon)  # updates last_login: a save of the user that is not a password change

    assert _instruments(first).status_code == 200


def test_a_wrong_password_gets_no_token(anon, viewer):
    response = _obtain(anon, password="not the password")

    assert response.status_code == 400
    assert not AuthToken.objects.exists()


def test_the_token_endpoint_is_throttled_per_address_with_a_429_that_says_when_to_retry(anon, viewer, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**rates, "token": "3/min"}}
    settings.AXES_FAILURE_LIMIT = 100  # this test is about the throttle, not the lock-out

    codes = [_obtain(anon, password="wrong").status_code for _ in range(3)]
    throttled = _obtain(anon)

    assert codes == [400, 400, 400]
    assert throttled.status_code == 429
    assert "throttled" in throttled.json()["detail"] and "seconds" in throttled.json()["detail"]
    assert 0 < int(throttled["Retry-After"]) <= 60


def test_an_invented_forwarded_for_header_does_not_dodge_the_throttle(anon, viewer, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**rates, "token": "2/min"}}
    settings.AXES_FAILURE_LIMIT = 100

    wrong = {"username": "vera", "password": "x"}
    codes = [anon.post("/api/auth/token/", wrong, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}").status_code for n in range(3)]

    assert codes == [400, 400, 429]


def test_a_users_api_calls_are_throttled_at_the_user_rate(viewer, instrument, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**rates, "user": "2/min"}}
    client = APIClient(REMOTE_ADDR=ADDRESS)
    client.force_authenticate(viewer)

    codes = [client.get("/api/instruments/").status_code for _ in range(3)]

    assert codes == [200, 200, 429]


def test_the_api_has_anon_user_and_token_rates_with_the_token_rate_the_strictest(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    per_minute = {scope: _per_minute(rate) for scope, rate in rates.items()}

    assert set(per_minute) >= {"anon", "user", "token"}
    assert per_minute["token"] < per_minute["anon"] < per_minute["user"]


def _per_minute(rate: str) -> float:
    count, period = rate.split("/")
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400}[period[0]]
    return int(count) * 60 / seconds
