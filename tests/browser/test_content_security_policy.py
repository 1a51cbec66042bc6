"""Every page renders under the Content-Security-Policy with no violation in a real browser."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Injected by the browser's devtools before any page script (so the policy does not apply to it):
# it records each violation the page reports, whatever wording the console uses.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


@pytest.fixture
def watched(page):
    """The page, and everything it says about the policy on the console or in violation events."""
    said: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on("console", lambda message: said.append(message.text))
    page.on("pageerror", lambda error: said.append(f"page error: {error}"))
    return page, said


def _violations(page, said: list[str]) -> list[str]:
    mentions = [text for text in said if "Content Security Policy" in text or "CSP" in text or "page error" in text]
    return mentions + page.evaluate("window.__cspViolations || []")


def _visit(page, url: str):
    response = page.goto(url)
    assert response is not None and response.ok, url
    assert "default-src 'self'" in response.headers["content-security-policy"]
    return response


def test_the_desks_pages_render_with_no_policy_violation(
    live_server, watched, log_in, viewer, instrument_with_bars, screenshot
):
    from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

    page, said = watched
    as_of = instrument_with_bars.bars.latest("date").date
    run = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
    pipeline_run_execute(run.pk)
    log_in("vera")

    _visit(page, f"{live_server.url}/")
    page.wait_for_selector("#home-pending")

    _visit(page, f"{live_server.url}/instruments/")
    page.wait_for_selector("#instruments")

    _visit(page, f"{live_server.url}/notifications/")

    _visit(page, f"{live_server.url}/instruments/RELIANCE/")
    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)
    page.hover("#price-chart .main-svg")  # hover labels are where Plotly adds more style rules

    _visit(page, f"{live_server.url}/runs/")
    page.wait_for_selector("#runs")

    _visit(page, f"{live_server.url}/runs/{run.pk}/")
    page.wait_for_selector("#run-state")
    page.wait_for_timeout(500)  # the page opens its websocket (or polls) straight away

    _visit(page, f"{live_server.url}/portfolio/")
    _visit(page, f"{live_server.url}/reviews/performance/")

    _visit(page, f"{live_server.url}/api/docs/")
    page.wait_for_selector("#swagger-ui .opblock", timeout=20_000)
    screenshot("api-docs-under-csp")

    assert _violations(page, said) == []


def test_the_thesis_page_chart_renders_with_no_policy_violation(live_server, watched, log_in, viewer, pending_thesis):
    page, said = watched
    log_in("vera")

    _visit(page, f"{live_server.url}/theses/{pending_thesis.pk}/")
    page.wait_for_selector("#price-chart[data-rendered=true]", timeout=20_000)

    assert _violations(page, said) == []


def test_the_admin_renders_with_no_policy_violation(live_server, watched, log_in, desk_admin):
    page, said = watched
    log_in("asha")

    _visit(page, f"{live_server.url}/admin/")
    _visit(page, f"{live_server.url}/admin/auth/user/")
    page.wait_for_selector("#result_list")

    assert _violations(page, said) == []
