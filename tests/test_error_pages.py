"""The error pages sit in the desk's layout and offer a way back; a 500 renders even when what
every other page needs (the context processors) is what broke. Also the favicon and log-out."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from django.urls import path

from config.urls import urlpatterns as desk_urlpatterns
from tests.conftest import PASSWORD


def _boom(request):
    raise RuntimeError("the page failed")


def failing_context_processor(request):
    raise RuntimeError("the navigation's figures could not be read")


# The desk's routes plus one that fails, for the 500 tests.
urlpatterns = [path("boom/", _boom), *desk_urlpatterns]


def _broken_processors(settings) -> list[dict]:
    templates = [dict(engine) for engine in settings.TEMPLATES]
    options = dict(templates[0]["OPTIONS"])
    options["context_processors"] = [*options["context_processors"], f"{__name__}.failing_context_processor"]
    templates[0]["OPTIONS"] = options
    return templates


def test_a_missing_page_is_404_in_the_desk_layout_with_a_way_back(client, viewer):
    client.force_login(viewer)

    response = client.get("/no-such-page/")

    body = response.content.decode()
    assert response.status_code == 404
    assert 'class="topbar"' in body and 'id="desk-nav"' in body  # the desk's header and navigation
    assert "There is no page here" in body
    assert '<a href="/" id="way-back">Back to the desk</a>' in body


def test_an_anonymous_visitor_on_a_missing_page_is_offered_the_log_in(client, db):
    response = client.get("/no-such-page/")

    body = response.content.decode()
    assert response.status_code == 404
    assert 'href="/login/"' in body
    assert 'id="desk-nav"' not in body  # no navigation for someone not logged in


def test_a_missing_thesis_is_a_styled_404(client, viewer):
    client.force_login(viewer)

    response = client.get("/theses/999999/")

    assert response.status_code == 404
    assert "There is no page here" in response.content.decode()


def test_a_refused_role_gets_a_styled_403_that_says_why(client, viewer):
    client.force_login(viewer)

    response = client.post("/runs/start/", {"symbols": "RELIANCE"})

    body = response.content.decode()
    assert response.status_code == 403
    assert "Your role cannot do this" in body and 'id="way-back"' in body
    assert 'id="desk-nav"' in body


def test_a_form_without_its_csrf_token_gets_the_styled_refusal_and_changes_nothing(viewer):
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)

    response = client.post("/logout/")

    body = response.content.decode()
    assert response.status_code == 403
    assert "The form could not be checked" in body and "Nothing was changed" in body
    assert "CSRF verification failed" not in body  # not Django's bare page
    assert client.get("/").status_code == 200  # still logged in: the log-out was refused


@override_settings(ROOT_URLCONF=__name__)
def test_a_server_error_is_a_styled_500_with_a_way_back(viewer):
    client = Client(raise_request_exception=False)
    client.force_login(viewer)

    response = client.get("/boom/")

    body = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on the desk" in body
    assert '<a href="/" id="way-back">Back to the desk</a>' in body and "css/desk.css" in body
    assert "the page failed" not in body  # the error stays in the log


@override_settings(ROOT_URLCONF=__name__)
def test_the_500_page_renders_when_the_context_processors_fail(settings, viewer):
    settings.TEMPLATES = _broken_processors(settings)
    client = Client(raise_request_exception=False)
    client.force_login(viewer)

    assert client.get("/no-such-page/").status_code == 500  # a page that needs the processors fails…

    response = client.get("/boom/")
    assert response.status_code == 500  # …and the 500 page still renders, styled
    assert "Something went wrong on the desk" in response.content.decode()


def test_favicon_ico_is_answered_without_a_login(client, db):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    content = b"".join(response.streaming_content)
    assert content[:4] == b"\x00\x00\x01\x00"  # an icon resource
    assert "max-age=604800" in response["Cache-Control"]


def test_every_page_links_the_favicon(client, viewer):
    client.force_login(viewer)

    body = client.get("/").content.decode()

    assert 'rel="icon" href="/static/favicon.svg"' in body
    assert client.get("/static/favicon.svg").status_code == 200


def test_logging_out_says_so_on_the_log_in_page_once(client, viewer):
    client.post("/login/", {"username": "vera", "password": PASSWORD})

    response = client.post("/logout/", follow=True)

    assert response.redirect_chain[-1][0] == "/login/"
    assert "You are logged out." in response.content.decode()
    assert "You are logged out." not in client.get("/login/").content.decode()  # once, not on every visit


@pytest.mark.parametrize("url", ["/", "/theses/", "/runs/"])
def test_after_logging_out_the_pages_ask_for_a_login_again(client, viewer, url):
    client.force_login(viewer)
    client.post("/logout/")

    response = client.get(url)

    assert response.status_code == 302 and response["Location"].startswith("/login/")
