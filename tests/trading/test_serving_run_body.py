"""The thesis page's run record (``_run_body.html``) is rendered once a run has finished and then
served from the cache: the cached fragment is the fragment drawn afresh, a run that changes (resumed,
failed, finished again) is redrawn, a run still working is never cached, and one person's page never
carries anything of another's (the fragment holds no form, token or role-dependent link)."""

from __future__ import annotations

import re

from django.core.cache import cache
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from agents.models import ModelCall
from agents.recording import run_totals
from trading.book.views import run_body_key
from trading.models import PipelineRun, StageRun
from trading.pipeline import presenters
from vocabulary.numbers import format_count


def _page(client, thesis_id: int) -> str:
    """The page, its CSRF tokens (masked afresh on every response, outside the fragment) blanked."""
    response = client.get(reverse("thesis_detail", args=[thesis_id]))
    assert response.status_code == 200
    return re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]*', r"\1", response.content.decode())


def _fresh_fragment(run: PipelineRun) -> str:
    """The fragment as the template draws it from the stored outputs, no cache involved."""
    run = PipelineRun.objects.select_related("instrument").get(pk=run.pk)
    return render_to_string("trading/_run_body.html", {"run": run, **presenters.run_context(run, run_totals(run))})


def _key(run_id: int) -> str:
    run = PipelineRun.objects.select_related("instrument").get(pk=run_id)
    return run_body_key(run, run_totals(run))


def test_the_cached_run_record_is_the_record_drawn_afresh(client, viewer, pending_thesis):
    client.force_login(viewer)
    cache.clear()
    expected = _fresh_fragment(pending_thesis.run)

    drawn = _page(client, pending_thesis.pk)
    assert cache.get(_key(pending_thesis.run_id))
    served = _page(client, pending_thesis.pk)  # the fragment from the cache

    assert expected in drawn and drawn == served
    assert 'data-stage="risk"' in expected and "Analysts" in expected  # a real, full record


def test_a_run_that_changes_is_redrawn_not_served_stale(client, viewer, pending_thesis):
    client.force_login(viewer)
    run = pending_thesis.run
    before = _page(client, pending_thesis.pk)
    assert "resumed and failed at the risk stage" not in before

    # As a resumed run that fails again: a new status, attempt, finish time and reason, a stage's error.
    StageRun.objects.filter(run=run, stage="risk").update(status="failed", error="limits unreadable")
    PipelineRun.objects.filter(pk=run.pk).update(
        status=PipelineRun.Status.FAILED,
        attempts=run.attempts + 1,
        finished_at=timezone.now(),
        failure_reason="resumed and failed at the risk stage",
    )

    after = _page(client, pending_thesis.pk)
    assert "resumed and failed at the risk stage" in after and "limits unreadable" in after
    assert _fresh_fragment(run) in after


def test_a_run_still_working_is_drawn_afresh_on_every_view(client, viewer, pending_thesis):
    client.force_login(viewer)
    run = pending_thesis.run
    PipelineRun.objects.filter(pk=run.pk).update(status=PipelineRun.Status.RUNNING, finished_at=None)
    first = _page(client, pending_thesis.pk)

    StageRun.objects.filter(run=run, stage="risk").update(error="a stage still being written")

    second = _page(client, pending_thesis.pk)
    assert "a stage still being written" not in first and "a stage still being written" in second
    assert not cache.get(_key(run.pk))


def test_the_cached_record_carries_nothing_of_the_person(client, viewer, approver, pending_thesis):
    """The approver's page has the decide form and its token; the viewer, served the same cached
    fragment, gets neither, and the fragment itself holds no token, form or person's name."""
    cache.clear()
    client.force_login(approver)
    approver_page = _page(client, pending_thesis.pk)
    client.force_login(viewer)
    viewer_page = _page(client, pending_thesis.pk)  # the fragment the approver's view cached

    fragment = _fresh_fragment(pending_thesis.run)
    assert fragment in approver_page and fragment in viewer_page
    assert 'id="decide"' in approver_page and 'id="decide"' not in viewer_page
    for private in ("csrfmiddlewaretoken", "<form", approver.get_username(), viewer.get_username()):
        assert private not in fragment


def test_model_calls_added_after_the_run_finished_are_counted(client, viewer, pending_thesis):
    """A trade review records its model calls against the thesis's run long after the run finished:
    the page's totals must count them, not serve the totals cached before."""
    client.force_login(viewer)
    cache.clear()
    run = pending_thesis.run
    _page(client, pending_thesis.pk)
    calls = ModelCall.objects.filter(run_id=run.pk)
    before = run_totals(run)
    model_call = calls.first()
    assert model_call is not None
    model_call.pk = None  # the review's call: a copy of one of the run's, with its own tokens
    model_call.input_tokens, model_call.output_tokens = 1_234_567, 7
    model_call.save()

    after = run_totals(run)
    assert after["calls"] == before["calls"] + 1
    page = _page(client, pending_thesis.pk)
    tokens = after["input_tokens"] + after["output_tokens"]
    assert f"{format_count(tokens)} tokens" in page and _fresh_fragment(run) in page
