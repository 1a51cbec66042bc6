from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import PASSWORD
from trading.models import Instrument


def test_every_page_needs_a_login(client, instrument):
    for url in (reverse("dashboard"), reverse("instrument_detail", args=["RELIANCE"])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_a_person_logs_in_and_lands_on_the_home_page(client, viewer, instrument_with_bars):
    response = client.post(reverse("login"), {"username": "vera", "password": PASSWORD}, follow=True)

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("dashboard")
    assert b'id="home-pending"' in response.content


def test_the_instrument_list_names_each_instrument(client, viewer, instrument_with_bars):
    client.force_login(viewer)
    body = client.get(reverse("instrument_list")).content

    assert b"RELIANCE" in body and b"Reliance Industries" in body


def test_the_instrument_list_shows_last_close_and_change(client, viewer, instrument_with_bars):
    client.force_login(viewer)
    last, previous = instrument_with_bars.bars.order_by("-date")[:2]
    change = (last.close - previous.close) / previous.close * 100

    body = client.get(reverse("instrument_list")).content.decode()

    assert f"{last.close:,.2f}" in body
    assert f"{change:.2f}%" in body


def test_the_instrument_list_reads_a_large_universe_in_constant_queries(
    client, viewer, django_assert_max_num_queries
):
    client.force_login(viewer)
    Instrument.objects.bulk_create(Instrument(symbol=f"SYM{i}", exchange="NSE", name=f"Company {i}") for i in range(60))
    # Six for the list, one for the navigation's badges, two for the person's permissions (the
    # upload link) and two for the health strip's market data freshness (the latest bar of each
    # exchange, and the exchanges), whatever the size of the universe.
    with django_assert_max_num_queries(11):
        assert client.get(reverse("instrument_list")).status_code == 200


def test_the_instrument_page_shows_the_bundle_as_of_a_chosen_date(client, viewer, instrument_with_bars):
    client.force_login(viewer)
    as_of = instrument_with_bars.bars.order_by("date")[260].date

    response = client.get(reverse("instrument_detail", args=["RELIANCE"]), {"as_of": as_of.isoformat()})

    body = response.content.decode()
    assert response.status_code == 200
    assert f"Feature bundle as of {as_of:%d %b %Y}" in body
    assert "RSI 14" in body and "ATR 14" in body and "SMA 200" in body
    assert 'id="chart-data"' in body and "vendor/plotly.min.js" in body
    assert "Unavailable: no fundamentals snapshot" in body


@pytest.mark.parametrize(
    ("as_of", "message"),
    [
        ("31/12/2024", "is not a date (YYYY-MM-DD); showing the latest bar instead."),
        ("2001-01-01", "No bars on or before 01 Jan 2001"),
    ],
)
def test_a_bad_as_of_date_is_explained(client, viewer, instrument_with_bars, as_of, message):
    client.force_login(viewer)

    response = client.get(reverse("instrument_detail", args=["RELIANCE"]), {"as_of": as_of})

    assert response.status_code == 200
    assert message in response.content.decode()


def test_an_unknown_instrument_is_404(client, viewer, db):
    client.force_login(viewer)
    assert client.get(reverse("instrument_detail", args=["NOPE"])).status_code == 404


def test_static_assets_are_local(client, viewer, instrument_with_bars):
    client.force_login(viewer)
    body = client.get(reverse("instrument_detail", args=["RELIANCE"])).content.decode()

    assert "http://" not in body.split("<body", 1)[0] and "https://" not in body.split("<body", 1)[0]
    assert all(src.startswith("/static/") for src in _script_sources(body))


def _script_sources(html: str) -> list[str]:
    return [part.split('"', 1)[0] for part in html.split('<script src="')[1:]]
