"""The desk on a phone (390 × 844): the navigation folds behind "Menu" and fits the header, and no
main page scrolls sideways (a wide table scrolls inside itself). On a wide screen nothing folds."""

from __future__ import annotations

import pytest

from tests.browser.test_reviews_browser import reviews_with_positions
from trading.models import Strategy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
MAIN_PAGES = [
    "/",
    "/instruments/",
    "/theses/",
    "/portfolio/",
    "/runs/",
    "/strategies/",
    "/reviews/",
    "/reviews/performance/",
    "/research/",
]

# Elements that stick out past the viewport's right edge and are not inside a box that scrolls
# (what makes a page scroll sideways), named so a failure says which.
OVERFLOWING = """(width) => {
  const scrolls = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      const page = p === document.body || p === document.documentElement;
      if (!page && ["auto", "scroll", "hidden"].includes(s.overflowX)) return true;
    }
    return false;
  };
  return [...document.querySelectorAll("body *")]
    .filter((el) => el.getBoundingClientRect().right > width + 1 && !scrolls(el))
    .slice(0, 5)
    .map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
      + (typeof el.className === "string" && el.className ? "." + el.className : ""));
}"""


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def desk_with_rows(pending_thesis):
    """Every main page with rows in it: a thesis waiting, its run, positions open and closed, reviews, a strategy."""
    reviews_with_positions()
    Strategy.objects.create(name="Large-cap trend following", philosophy="Follow established trends in large caps.")
    return pending_thesis


def _log_in(page, live_server, username: str) -> None:
    from tests.conftest import PASSWORD

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    # The login page has the top bar too: wait for the page the form leads to, not for #topbar.
    with page.expect_navigation(wait_until="load"):
        page.click("button[type=submit]")
    page.wait_for_selector("#topbar")


def _shoot(page, name: str) -> None:
    from tests.browser.conftest import SCREENSHOTS

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_no_main_page_scrolls_sideways_on_a_phone(phone, live_server, approver, desk_with_rows):
    problems = []
    _log_in(phone, live_server, "arjun")

    pages = {url: url.strip("/").replace("/", "-") or "home" for url in MAIN_PAGES}
    pages[f"/theses/{desk_with_rows.pk}/"] = "thesis"
    for url, name in pages.items():
        response = phone.goto(f"{live_server.url}{url}")
        assert response is not None and response.status == 200, url
        phone.wait_for_load_state("load")
        scroll_width = phone.evaluate("document.documentElement.scrollWidth")
        if scroll_width > PHONE["width"]:
            problems.append((url, scroll_width, phone.evaluate(OVERFLOWING, PHONE["width"])))
        _shoot(phone, f"mobile-{name}")

    assert problems == []


def test_the_navigation_folds_behind_menu_and_fits_the_header_on_a_phone(phone, live_server, approver, desk_with_rows):
    _log_in(phone, live_server, "arjun")
    toggle, links = phone.locator("#nav-toggle"), phone.locator("#desk-nav a")

    assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
    assert not phone.locator("#desk-nav").is_visible()  # folded: the page starts right under the header
    assert phone.evaluate("document.getElementById('topbar').getBoundingClientRect().height") < 80

    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert links.count() >= 8
    for index in range(links.count()):
        box = links.nth(index).bounding_box()
        assert box is not None and links.nth(index).is_visible()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], links.nth(index).inner_text()
    header = phone.evaluate(
        "(() => { const h = document.getElementById('topbar'); return [h.scrollWidth, h.clientWidth]; })()"
    )
    assert header[0] <= header[1]
    assert phone.locator(".who button", has_text="Log out").is_visible()
    _shoot(phone, "mobile-menu-open")

    phone.keyboard.press("Escape")
    assert not phone.locator("#desk-nav").is_visible() and toggle.get_attribute("aria-expanded") == "false"

    toggle.click()
    phone.locator("#desk-nav a", has_text="Portfolio").click()
    phone.wait_for_url(f"{live_server.url}/portfolio/")
    assert not phone.locator("#desk-nav").is_visible()  # a new page starts folded


@pytest.mark.parametrize("width", [1024, 1400])
def test_on_a_wide_screen_the_links_show_without_a_menu(browser, live_server, approver, desk_with_rows, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        _log_in(page, live_server, "arjun")

        assert not page.locator("#nav-toggle").is_visible()
        links = page.locator("#desk-nav a")
        for index in range(links.count()):
            box = links.nth(index).bounding_box()
            assert links.nth(index).is_visible() and box is not None and box["x"] + box["width"] <= width
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()


@pytest.mark.parametrize("person", ["approver", "desk_admin"])
def test_on_a_laptop_screen_the_person_and_log_out_stay_on_the_navigation_line(
    browser, live_server, desk_with_rows, person, request
):
    """At 1280 px, a small laptop, the header is one line, the admin's extra link
    included: the log-out sits level with the desk's name, not wrapped under it."""
    user = request.getfixturevalue(person)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        _log_in(page, live_server, user.username)

        brand = page.locator("#topbar .brand").bounding_box()
        log_out = page.locator("#topbar .who button", has_text="Log out").bounding_box()
        assert brand is not None and log_out is not None
        assert abs((log_out["y"] + log_out["height"] / 2) - (brand["y"] + brand["height"] / 2)) < brand["height"] / 2
        assert page.locator("#desk-nav a", has_text="Admin").count() == (1 if person == "desk_admin" else 0)
        _shoot(page, f"laptop-header-{person}")
    finally:
        context.close()
