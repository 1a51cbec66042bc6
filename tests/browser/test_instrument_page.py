from __future__ import annotations

import pytest

from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_viewer_logs_in_opens_an_instrument_and_sees_the_chart(
    live_server, page, screenshot, viewer, instrument_with_bars
):
    requests_off_machine: list[str] = []
    page.on(
        "request",
        lambda request: (
            requests_off_machine.append(request.url) if not request.url.startswith(live_server.url) else None
        ),
    )

    page.goto(f"{live_server.url}/")
    page.fill("#id_username", "vera")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.click("a:text-is('Instruments')")  # the home page is the desk's state; instruments have a list of their own
    page.click("text=RELIANCE")

    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)
    assert page.locator("#price-chart .main-svg").count() >= 1
    assert page.locator("#price-chart g.trace").count() >= 1
    assert page.locator("#feature-bundle").inner_text().count("RSI 14") == 1
    screenshot("instrument-page")
    assert requests_off_machine == []


def test_a_wrong_password_is_refused_with_a_message(live_server, page, viewer):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "vera")
    page.fill("#id_password", "not the password")
    page.click("button[type=submit]")

    assert "didn't match" in page.locator(".error").inner_text()
    assert page.url.startswith(f"{live_server.url}/login/")
