"""Missing or bad API credentials answer 401 with a challenge (log in again), a refused role 403;
the API docs are a page, so an anonymous visitor is sent to log in and brought back."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

# Its own address, so the anonymous throttle's count never carries from or to another test module.
ADDRESS = "10.40.1.1"

READS = [
    "/api/instruments/",
    "/api/runs/",
    "/api/theses/",
    "/api/positions/",
    "/api/schema/",
]
WRITES = [
    "/api/theses/1/approve/",
    "/api/theses/1/reject/",
    "/api/positions/1/close/",
    "/api/runs/",
]


@pytest.fixture
def anon(db):
    caches["throttle"].delete_many([f"throttle_anon_{ADDRESS}", f"throttle_token_{ADDRESS}"])
    yield APIClient(REMOTE_ADDR=ADDRESS)
    caches["throttle"].delete_many([f"throttle_anon_{ADDRESS}", f"throttle_token_{ADDRESS}"])


@pytest.mark.parametrize("url", READS)
def test_a_read_without_credentials_is_401_with_a_token_challenge(anon, url):
    response = anon.get(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("url", WRITES)
def test_a_write_without_credentials_is_401_not_403(anon, url):
    response = anon.post(url, {}, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["detail"] == "Authentication credentials were not provided."


def test_a_wrong_token_is_401(anon):
    anon.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    response = anon.get("/api/instruments/")

    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"


def test_a_logged_in_viewer_refused_a_write_gets_403_not_401(viewer, pending_thesis):
    client = APIClient(REMOTE_ADDR=ADDRESS)
    client.force_authenticate(viewer)

    response = client.post(f"/api/theses/{pending_thesis.pk}/approve/", {}, format="json")

    assert response.status_code == 403
    assert "WWW-Authenticate" not in response


def test_the_api_docs_send_an_anonymous_visitor_to_log_in_and_back(client, viewer):
    response = client.get("/api/docs/")

    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/api/docs/"

    logged_in = client.post("/login/", {"username": "vera", "password": PASSWORD, "next": "/api/docs/"}, follow=True)
    assert logged_in.redirect_chain[-1][0] == "/api/docs/"
    assert logged_in.status_code == 200 and b"swagger" in logged_in.content.lower()


def test_the_api_docs_open_for_a_logged_in_person(client, viewer):
    client.force_login(viewer)

    response = client.get("/api/docs/")

    assert response.status_code == 200
    assert b"Trading desk API" in response.content or b"swagger" in response.content.lower()
