from __future__ import annotations

from rest_framework.test import APIClient

from trading.book.domain.risk import CHECK_NAMES
from trading.models import Order


def _api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_queue_and_a_thesis_are_readable_by_a_viewer(viewer, pending_thesis):
    api = _api(viewer)

    listed = api.get("/api/theses/").json()
    detail = api.get(f"/api/theses/{pending_thesis.pk}/").json()

    assert listed["results"][0]["id"] == pending_thesis.pk
    assert detail["status"] == "pending" and len(detail["risk_checks"]) == len(CHECK_NAMES)


def test_a_viewer_cannot_approve_over_the_api(viewer, pending_thesis):
    response = _api(viewer).post(f"/api/theses/{pending_thesis.pk}/approve/", {}, format="json")

    assert response.status_code == 403 and "only approvers" in response.json()["detail"]
    assert not Order.objects.exists()


def test_an_approver_approves_once_and_a_second_time_gets_the_reason(approver, pending_thesis):
    api = _api(approver)

    first = api.post(f"/api/theses/{pending_thesis.pk}/approve/", {"comment": "ok"}, format="json")
    second = api.post(f"/api/theses/{pending_thesis.pk}/approve/", {}, format="json")

    assert first.status_code == 200 and first.json()["status"] == "approved"
    assert second.status_code == 409 and "already approved by arjun" in second.json()["detail"]
    assert Order.objects.count() == 1


def test_a_rejection_without_a_comment_is_refused_with_the_reason(approver, pending_thesis):
    response = _api(approver).post(f"/api/theses/{pending_thesis.pk}/reject/", {}, format="json")

    assert response.status_code == 400 and "comment is required" in response.json()["detail"]


def test_positions_are_listed(viewer, db):
    assert _api(viewer).get("/api/positions/").json()["count"] == 0
