from __future__ import annotations

import pytest
from knox.models import AuthToken
from rest_framework.test import APIClient

from tests.conftest import PASSWORD


@pytest.fixture
def api(viewer):
    client = APIClient()
    client.force_authenticate(viewer)
    return client


def test_the_api_refuses_anonymous_callers(db, instrument):
    response = APIClient().get("/api/instruments/")

    assert response.status_code in (401, 403)
    assert response["Content-Type"].startswith("application/json")


def test_a_token_obtained_with_a_password_opens_the_api(viewer, instrument):
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": "vera", "password": PASSWORD}).json()["token"]
    assert AuthToken.objects.filter(user=viewer).count() == 1  # kept as a hash only: tests/security

    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get("/api/instruments/")

    assert response.status_code == 200
    assert response.json()["results"][0]["symbol"] == "RELIANCE"


def test_instruments_are_listed_with_market_details(api, instrument):
    body = api.get("/api/instruments/").json()

    assert body["count"] == 1
    assert body["results"][0] == {
        "symbol": "RELIANCE",
        "exchange": "NSE",
        "name": "Reliance Industries",
        "sector": "Energy",
        "tick_size": "0.0500",
        "lot_size": 1,
        "currency": "INR",
        "is_active": True,
    }


def test_bars_are_paginated_and_filtered_by_date(api, instrument_with_bars):
    dates = list(instrument_with_bars.bars.order_by("date").values_list("date", flat=True))

    page = api.get("/api/instruments/RELIANCE/bars/").json()
    window = api.get("/api/instruments/NSE:RELIANCE/bars/", {"start": dates[10], "end": dates[14]}).json()

    assert page["count"] == 320 and len(page["results"]) == 100 and page["next"]
    assert [bar["date"] for bar in window["results"]] == [d.isoformat() for d in dates[10:15]]
    assert set(window["results"][0]) == {"date", "open", "high", "low", "close", "volume"}


def test_bad_bar_filters_are_refused_with_a_reason(api, instrument_with_bars):
    response = api.get("/api/instruments/RELIANCE/bars/", {"start": "2025-02-01", "end": "2025-01-01"})
    assert response.status_code == 400
    assert "after end" in response.json()["start"][0]

    response = api.get("/api/instruments/RELIANCE/bars/", {"start": "yesterday"})
    assert response.status_code == 400 and "start" in response.json()


def test_the_feature_bundle_is_served_as_of_a_date(api, instrument_with_bars):
    as_of = instrument_with_bars.bars.order_by("date")[250].date

    body = api.get("/api/instruments/RELIANCE/features/", {"as_of": as_of.isoformat()}).json()

    assert body["symbol"] == "RELIANCE" and body["as_of"] == as_of.isoformat()
    assert body["technical"]["bars_used"] == 251
    assert {"technical", "news", "sentiment", "fundamentals", "forecast", "macro", "fallback"} <= set(body)


def test_a_feature_bundle_before_any_bar_is_404_with_a_reason(api, instrument_with_bars):
    response = api.get("/api/instruments/RELIANCE/features/", {"as_of": "2001-01-01"})

    assert response.status_code == 404
    assert "no bar on or before 2001-01-01" in response.json()["detail"]


def test_the_openapi_schema_and_its_ui_are_served_locally(api, client, viewer):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert "/api/instruments/{symbol}/features/" in schema["paths"]

    client.force_login(viewer)
    docs = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in docs and "cdn" not in docs.lower()


def test_the_openapi_schema_validates_without_warnings(db, tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def _schema(db) -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


DESK_OPERATIONS = {
    # path, method: the error statuses it can answer (throttling, credentials and pages everywhere)
    ("/api/instruments/", "get"): {401, 404, 429},
    ("/api/instruments/{symbol}/", "get"): {401, 404, 429},
    ("/api/instruments/{symbol}/bars/", "get"): {400, 401, 404, 429},
    ("/api/instruments/{symbol}/features/", "get"): {400, 401, 404, 429},
    ("/api/runs/", "get"): {400, 401, 404, 429},
    ("/api/runs/", "post"): {400, 401, 403, 429, 503},
    ("/api/runs/{run_id}/", "get"): {401, 404, 429},
    ("/api/theses/", "get"): {400, 401, 404, 429},
    ("/api/theses/{thesis_id}/", "get"): {401, 404, 429},
    ("/api/theses/{thesis_id}/approve/", "post"): {400, 401, 403, 404, 409, 429},
    ("/api/theses/{thesis_id}/reject/", "post"): {400, 401, 403, 404, 409, 429},
    ("/api/positions/", "get"): {400, 401, 404, 429},
    ("/api/positions/{position_id}/close/", "post"): {400, 401, 403, 404, 409, 429},
}


def test_the_schema_documents_every_error_status_of_every_operation_with_a_detail_body(db):
    schema = _schema(db)

    for (path, method), statuses in DESK_OPERATIONS.items():
        responses = schema["paths"][path][method]["responses"]
        assert {int(code) for code in responses if code.startswith(("4", "5"))} == statuses, (path, method)
        for code in statuses - {503}:
            body = responses[str(code)]["content"]["application/json"]["schema"]["$ref"]
            assert body.rsplit("/", 1)[1] in {"ErrorOutput", "RefusalOutput"}, (path, method, code)
    assert schema["components"]["schemas"]["ErrorOutput"]["required"] == ["detail"]


def test_the_schema_documents_every_filter(db):
    schema = _schema(db)

    def names(path: str) -> set[str]:
        return {p["name"] for p in schema["paths"][path]["get"].get("parameters", []) if p["in"] == "query"}

    assert names("/api/theses/") == {"status", "symbol", "direction", "strategy", "min_conviction", "replay", "page"}
    assert names("/api/positions/") == {"status", "page"}
    assert names("/api/runs/") == {"replay", "page"}
    assert names("/api/instruments/{symbol}/bars/") == {"start", "end", "page"}
    assert names("/api/instruments/{symbol}/features/") == {"as_of"}


def test_the_schema_documents_the_token_endpoint(db):
    operation = _schema(db)["paths"]["/api/auth/token/"]["post"]

    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/AuthToken")
    assert {"200", "400"} <= set(operation["responses"])
