"""Log-in throttling: N wrong passwords for one username from one address lock that pair out for a
cool-off period, and the page says when to try again."""

from __future__ import annotations

import datetime as dt

from axes.models import AccessAttempt
from django.contrib.auth import authenticate
from django.core.cache import caches
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

HOME = "10.1.1.1"
ELSEWHERE = "10.2.2.2"


def _log_in(client: Client, password: str, *, username: str = "vera", address: str = HOME):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def _lock_out(client: Client, settings) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _log_in(client, "not the password")


def test_the_defaults_allow_a_few_typos_and_lock_for_minutes_not_forever(settings):
    assert 3 <= settings.AXES_FAILURE_LIMIT <= 10
    assert dt.timedelta(minutes=1) <= settings.AXES_COOLOFF_TIME <= dt.timedelta(hours=24)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_wrong_passwords_below_the_limit_get_the_usual_message(client, viewer, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = _log_in(client, "not the password")
        assert response.status_code == 200
        assert "didn't match" in response.content.decode()


def test_the_limit_locks_the_username_at_that_address_even_for_the_right_password(client, viewer, settings):
    _lock_out(client, settings)

    response = _log_in(client, PASSWORD)

    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_lockout_page_says_when_to_try_again(client, viewer, settings):
    _lock_out(client, settings)
    until = timezone.localtime(timezone.now() + settings.AXES_COOLOFF_TIME)

    page = _log_in(client, PASSWORD).content.decode()

    assert "Too many failed log-ins" in page
    # The minute may tick over between the lock and this line: either reading is right.
    assert any(f"try again after {t:%H:%M}" in page for t in (until, until + dt.timedelta(minutes=1)))
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    assert f"in {minutes} minutes" in page or f"in {minutes + 1} minutes" in page
    assert 'id="lockout"' in page and "didn't match" not in page


def test_hammering_during_the_lockout_does_not_move_the_time_it_ends(client, viewer, settings):
    _lock_out(client, settings)
    before = AccessAttempt.objects.get(username="vera").attempt_time

    for _ in range(3):
        _log_in(client, "still wrong")

    assert AccessAttempt.objects.get(username="vera").attempt_time == before


def test_the_lockout_ends_after_the_cool_off(client, viewer, settings):
    _lock_out(client, settings)
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - dt.timedelta(seconds=1))

    response = _log_in(client, PASSWORD)

    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(viewer.pk)


def test_the_same_user_elsewhere_and_another_user_here_are_not_locked_out(viewer, approver, settings):
    _lock_out(Client(), settings)

    assert _log_in(Client(), PASSWORD, address=ELSEWHERE).status_code == 302
    assert _log_in(Client(), PASSWORD, username="arjun").status_code == 302


def test_a_successful_log_in_starts_the_count_again(client, viewer, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _log_in(client, "not the password")
    assert _log_in(client, PASSWORD).status_code == 302
    client.post("/logout/")

    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _log_in(client, "not the password")

    assert _log_in(client, PASSWORD).status_code == 302


def test_logging_in_many_times_with_the_right_password_never_locks_out(client, viewer, settings):
    for _ in range(3 * settings.AXES_FAILURE_LIMIT):
        assert _log_in(client, PASSWORD).status_code == 302
        client.post("/logout/")


def test_code_that_authenticates_without_a_request_still_works(viewer):
    # Django's test client, the shell and management commands pass no request: no client to count.
    assert Client().login(username="vera", password=PASSWORD)
    assert authenticate(username="vera", password=PASSWORD) == viewer
    assert authenticate(username="vera", password="wrong") is None


def test_the_token_endpoint_shares_the_lockout_and_answers_429_saying_when(viewer, settings):
    caches["throttle"].delete(f"throttle_token_{HOME}")
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**rates, "token": "100/min"}}
    api = APIClient(REMOTE_ADDR=HOME)
    try:
        for _ in range(settings.AXES_FAILURE_LIMIT):
            api.post("/api/auth/token/", {"username": "vera", "password": "wrong"})

        response = api.post("/api/auth/token/", {"username": "vera", "password": PASSWORD})
    finally:
        caches["throttle"].delete(f"throttle_token_{HOME}")

    assert response.status_code == 429
    assert "try again after" in response.json()["detail"]
    assert "token" not in response.json()
