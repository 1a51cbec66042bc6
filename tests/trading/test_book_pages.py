from __future__ import annotations

from django.urls import reverse

from trading.models import Order, Thesis


def test_the_queue_lists_pending_theses_and_filters_them(client, viewer, pending_thesis):
    client.force_login(viewer)

    listed = client.get(reverse("thesis_queue")).content.decode()
    other_side = "SHORT" if pending_thesis.direction == "LONG" else "LONG"
    filtered = client.get(reverse("thesis_queue"), {"direction": other_side}).content.decode()

    assert f"#{pending_thesis.pk}" in listed
    assert f"#{pending_thesis.pk}" not in filtered


def test_the_thesis_page_shows_levels_checks_and_hints_but_no_buttons_for_a_viewer(client, viewer, pending_thesis):
    client.force_login(viewer)

    body = client.get(reverse("thesis_detail", args=[pending_thesis.pk])).content.decode()

    assert 'id="winner"' in body and f"{pending_thesis.direction} · conviction" in body
    assert '"entry' in body and '"stop' in body and '"target' in body  # the chart's level lines
    assert body.count("degenerate_thesis") == 1 and "exposure_cap" in body
    assert "abstaining: no real data" in body
    assert 'id="decide"' not in body


def test_a_forged_approval_from_a_viewer_is_refused(client, viewer, pending_thesis):
    client.force_login(viewer)

    response = client.post(reverse("thesis_decide", args=[pending_thesis.pk]), {"decision": "approve"})

    assert response.status_code == 403 and b"only approvers" in response.content
    pending_thesis.refresh_from_db()
    assert pending_thesis.status == Thesis.Status.PENDING and not Order.objects.exists()


def test_an_approver_sees_the_buttons_and_approves(client, approver, pending_thesis, django_assert_max_num_queries):
    client.force_login(approver)
    assert 'id="decide"' in client.get(reverse("thesis_detail", args=[pending_thesis.pk])).content.decode()

    response = client.post(
        reverse("thesis_decide", args=[pending_thesis.pk]), {"decision": "approve", "comment": "ok"}, follow=True
    )

    assert "Approved: order #" in response.content.decode()
    assert Order.objects.filter(thesis=pending_thesis).count() == 1


def test_the_portfolio_page_renders_with_nothing_open(client, viewer, db):
    client.force_login(viewer)

    body = client.get(reverse("portfolio")).content.decode()

    assert "No open positions." in body and "Capital" in body


def _bulk_theses(thesis, count: int) -> None:
    from trading.models import PipelineRun

    runs = PipelineRun.objects.bulk_create(
        PipelineRun(instrument=thesis.instrument, as_of=thesis.run.as_of, provider="offline", status="completed")
        for _ in range(count)
    )
    Thesis.objects.bulk_create(
        Thesis(
            run=run,
            account_id=thesis.account_id,
            instrument=thesis.instrument,
            direction=thesis.direction,
            conviction=thesis.conviction,
            entry=thesis.entry,
            stop=thesis.stop,
            target=thesis.target,
            horizon_sessions=10,
            quantity=1,
            risk_approved=True,
            risk_checks=thesis.risk_checks,
            payload=thesis.payload,
        )
        for run in runs
    )


def test_the_queue_and_a_thesis_page_cost_the_same_queries_with_many_theses(client, viewer, pending_thesis):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(viewer)

    def queries(url: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    queue, page = reverse("thesis_queue"), reverse("thesis_detail", args=[pending_thesis.pk])
    queries(page)  # a finished run's record is drawn once, then served from the cache: count warm views
    few = (queries(queue), queries(page))
    _bulk_theses(pending_thesis, 300)
    many = (queries(queue), queries(page))

    assert many == few
