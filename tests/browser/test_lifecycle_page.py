from __future__ import annotations

import pytest

from tests.factories import position_on_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GAVE_BACK = ["100", "100", "102", "105", "107", "108", "106", "104", "102", "101.5"]
CLOSED_ON_ITS_FILL_DAY = ["100", "100"]  # one session: the trajectory is a single point


@pytest.mark.parametrize("path", [GAVE_BACK, CLOSED_ON_ITS_FILL_DAY], ids=["gave-back", "one-session"])
def test_a_viewer_sees_the_profit_trajectory_drawn(live_server, page, screenshot, log_in, viewer, path):
    position = position_on_path(path, horizon_sessions=20, close_by_hand="taking it off")
    requests_off_machine: list[str] = []
    page.on(
        "request",
        lambda request: (
            requests_off_machine.append(request.url) if not request.url.startswith(live_server.url) else None
        ),
    )

    log_in("vera")
    page.goto(f"{live_server.url}/reviews/positions/{position.pk}/")

    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)
    assert page.locator("#price-chart .main-svg").count() >= 1
    assert page.locator("#price-chart g.trace").count() >= 1
    labels = page.locator("#price-chart .annotation").all_text_contents()
    assert any("entry" in label for label in labels) and any("exit" in label for label in labels)
    screenshot(f"position-lifecycle-{len(path)}")
    assert requests_off_machine == []
