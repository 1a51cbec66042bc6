"""The error pages in a real browser: inside the desk's layout, a way back that works, nothing
refused by the Content-Security-Policy; the favicon; the "logged out" message after Log out."""

from __future__ import annotations

import pytest

from tests.browser.test_content_security_policy import RECORD_VIOLATIONS, _violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def watched(page):
    said: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on("console", lambda message: said.append(message.text))
    page.on("pageerror", lambda error: said.append(f"page error: {error}"))
    return page, said


def test_a_missing_page_has_the_desks_header_and_a_way_back(live_server, watched, log_in, viewer, screenshot):
    page, said = watched
    log_in("vera")

    response = page.goto(f"{live_server.url}/theses/999999/")

    assert response is not None and response.status == 404
    assert page.locator("#topbar #desk-nav").count() == 1
    assert page.locator("#error-page h1").inner_text() == "There is no page here"
    card = page.evaluate("getComputedStyle(document.querySelector('#error-page')).backgroundColor")
    assert card == "rgb(255, 255, 255)"  # the desk's card, so desk.css applied
    screenshot("error-404")
    page.click("#way-back")
    page.wait_for_url(f"{live_server.url}/")
    assert [text for text in _violations(page, said) if "404" not in text] == []


def test_a_refused_role_sees_the_styled_403(live_server, watched, log_in, viewer, screenshot):
    page, _ = watched
    log_in("vera")

    # A viewer posting the run form (as a stale page or a crafted form would): the 403 page.
    page.goto(f"{live_server.url}/login/")
    token = page.evaluate("document.querySelector('input[name=csrfmiddlewaretoken]').value")
    response = page.request.post(
        f"{live_server.url}/runs/start/",
        form={"csrfmiddlewaretoken": token, "symbols": "RELIANCE"},
        headers={"Referer": f"{live_server.url}/runs/"},
    )
    assert response.status == 403
    page.set_content(response.text())  # shown as the browser would show the answer
    assert "Your role cannot do this" in page.locator("#error-page").inner_text()


def test_a_server_error_shows_the_styled_500(live_server, watched, log_in, viewer, settings, screenshot):
    page, _ = watched
    log_in("vera")
    settings.ROOT_URLCONF = "tests.test_error_pages"

    response = page.goto(f"{live_server.url}/boom/")

    assert response is not None and response.status == 500
    assert page.locator("#error-page h1").inner_text() == "Something went wrong on the desk"
    assert page.locator("link[rel=stylesheet][href$='css/desk.css']").count() == 1
    screenshot("error-500")
    page.click("#way-back")
    page.wait_for_url(f"{live_server.url}/")


def test_log_out_lands_on_the_log_in_page_saying_so(live_server, watched, log_in, viewer, screenshot):
    page, _ = watched
    log_in("vera")

    page.click(".who button")  # the header's Log out

    page.wait_for_url(f"{live_server.url}/login/")
    assert page.locator(".messages li").inner_text() == "You are logged out."
    screenshot("logged-out")
    page.reload()
    assert page.locator(".messages li").count() == 0


def test_the_favicon_is_linked_and_served(live_server, watched, log_in, viewer):
    page, said = watched
    log_in("vera")

    href = page.locator("link[rel=icon][type='image/svg+xml']").get_attribute("href")
    icon = page.request.get(f"{live_server.url}{href}")
    legacy = page.request.get(f"{live_server.url}/favicon.ico")

    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert legacy.status == 200 and legacy.headers["content-type"] == "image/x-icon"
    assert _violations(page, said) == []
