"""The research pages: any desk user reads sessions, trials, folds, charts and the shortlist;
approvers and admins start a session (queued to a worker once committed), cancel one, and attach a
candidate to a strategy or detach it with one click (both audited). A bad value is refused with a
clear message and creates nothing; a viewer's forged POST is a 403. The session page reads a fixed
number of queries however many trials it shows."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from research.models import ResearchSession
from tests.conftest import PASSWORD, make_bars
from tests.research import web_rows
from trading.models import AuditEvent, ResearchSignal, Strategy

pytestmark = pytest.mark.django_db

START = reverse("research_sessions")


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The sessions sent to the task queue (no broker in these tests)."""
    sent: list[int] = []
    monkeypatch.setattr("research.start.queue_session", sent.append)
    return sent


@pytest.fixture
def seeded(instrument):
    make_bars(instrument, 260)
    return instrument


@pytest.fixture
def strategy(instrument) -> Strategy:
    return Strategy.objects.create(name="Trend desk", philosophy="Follow established trends.")


def logged_in(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def form(**values):
    return {
        "goal": "a trend follower for large caps",
        "symbols": ["RELIANCE"],
        "strategy": "sma_crossover",
        "proposer": "optuna",
        "provider": "offline",
        "max_trials": "6",
        "max_tokens": "0",
        "dry_rounds": "3",
        "seed": "11",
        **values,
    }


def test_a_viewer_sees_sessions_but_no_start_form(client, viewer, approver):
    research = web_rows.session(approver)
    page = logged_in(client, viewer).get(START)

    assert page.status_code == 200
    body = page.content.decode()
    assert research.goal in body and reverse("research_session", args=[research.pk]) in body
    assert 'id="start-research"' not in body
    assert 'href="/research/"' in body  # the nav link


def test_a_viewer_cannot_start_a_session(client, viewer, seeded, queued):
    refused = logged_in(client, viewer).post(START, form())

    assert refused.status_code == 403
    assert "approver or admin" in refused.content.decode()
    assert not ResearchSession.objects.exists() and queued == []


def test_an_approver_starts_a_session_queued_after_commit(
    client, approver, seeded, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        started = logged_in(client, approver).post(START, form())

    session = ResearchSession.objects.get()
    assert started.status_code == 302 and started["Location"] == reverse("research_session", args=[session.pk])
    assert queued == [session.pk]
    assert session.status == ResearchSession.Status.QUEUED and session.created_by == approver
    assert (session.proposer, session.strategy, session.symbols) == ("optuna", "sma_crossover", ["RELIANCE"])
    assert (session.max_trials, session.dry_rounds, session.seed) == (6, 3, 11)


def test_an_admin_starts_one_too(client, desk_admin, seeded, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        started = logged_in(client, desk_admin).post(START, form())
    assert started.status_code == 302 and ResearchSession.objects.count() == 1 and len(queued) == 1


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"max_trials": "lots"}, "max trials &#x27;lots&#x27; is not a whole number"),
        ({"strategy": "astrology"}, "unknown strategy"),
        ({"symbols": []}, "name at least one symbol"),
        ({"goal": "  "}, "state the research goal"),
        ({"proposer": "oracle"}, "unknown proposer"),
        ({"max_trials": "0"}, "the trial budget must be from 1"),
        ({"max_tokens": "99999999999999999999"}, "max tokens 99999999999999999999 is out of range"),
        ({"goal": "trend\x00"}, "NUL character"),
    ],
)
def test_bad_input_gets_a_clear_message_and_creates_nothing(client, approver, seeded, queued, values, words):
    refused = logged_in(client, approver).post(START, form(**values))

    assert refused.status_code == 400
    assert words in refused.content.decode()
    assert 'id="start-research"' in refused.content.decode()  # the form comes back, values kept
    assert not ResearchSession.objects.exists() and queued == []


def test_too_few_bars_is_refused_by_name(client, approver, instrument, queued):
    make_bars(instrument, 40)
    refused = logged_in(client, approver).post(START, form())
    assert refused.status_code == 400 and "RELIANCE has 40 daily bars" in refused.content.decode()
    assert not ResearchSession.objects.exists()


def test_the_session_page_shows_trials_folds_charts_pbo_and_the_shortlist(client, viewer, approver):
    research = web_rows.finished_session(approver, trials=4, shortlist=2)
    page = logged_in(client, viewer).get(reverse("research_session", args=[research.pk]))

    assert page.status_code == 200
    body = page.content.decode()
    for number in range(1, 5):
        assert f'id="trial-{number}"' in body
    assert body.count('<details class="folds">') == 4
    assert 'id="dsr-chart-data"' in body and 'id="folds-chart-data"' in body
    assert 'id="pbo"' in body and "0.25" in body
    assert 'id="candidate-1"' in body and 'id="candidate-2"' in body
    for candidate in research.candidates.all():
        assert reverse("research_candidate_config", args=[candidate.pk]) in body
    assert "attach-form" not in body  # a viewer attaches nothing
    assert "<script>" not in body  # the Content-Security-Policy runs no inline script
    assert "js/research-session.js" in body


def test_the_charts_carry_every_trial(client, viewer, approver):
    research = web_rows.finished_session(approver, trials=5)
    page = logged_in(client, viewer).get(reverse("research_session", args=[research.pk]))

    dsr = page.context["charts"]["dsr"]
    plotted = sorted(x for trace in dsr["data"][:-1] for x in trace["x"])
    assert plotted == [1, 2, 3, 4, 5]
    assert dsr["data"][-1]["y"] == [0.9, 0.9]  # the session's own gate
    folds = page.context["charts"]["folds"]
    assert sum(len(trace["x"]) for trace in folds["data"][:-1]) == 5 * 3


def test_the_candidate_config_downloads_as_json(client, viewer, approver):
    research = web_rows.finished_session(approver)
    candidate = research.candidates.get(rank=1)
    download = logged_in(client, viewer).get(reverse("research_candidate_config", args=[candidate.pk]))

    assert download.status_code == 200 and download["Content-Type"] == "application/json"
    assert f"candidate-{candidate.rank}.json" in download["Content-Disposition"]
    assert json.loads(download.content) == candidate.config


def test_the_page_reads_a_fixed_number_of_queries_whatever_the_trials(client, viewer, approver):
    few = web_rows.finished_session(approver, trials=3, shortlist=1)
    many = web_rows.finished_session(approver, trials=30, shortlist=5)
    logged_in(client, viewer)

    def queries(session: ResearchSession, name: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse(name, args=[session.pk])).status_code == 200
        return len(captured.captured_queries)

    for name in ("research_session", "research_session_live", "research_session_results"):
        assert queries(few, name) == queries(many, name), name


def test_the_sessions_list_reads_a_fixed_number_of_queries(client, viewer, approver):
    logged_in(client, viewer)
    web_rows.finished_session(approver)
    with CaptureQueriesContext(connection) as one:
        client.get(START)
    for _ in range(5):
        web_rows.finished_session(approver)
    with CaptureQueriesContext(connection) as six:
        client.get(START)
    assert len(one.captured_queries) == len(six.captured_queries)


def test_the_live_endpoint_sends_only_new_trials(client, viewer, approver):
    research = web_rows.session(approver)
    web_rows.trial(research, 1)
    web_rows.trial(research, 2)
    live = reverse("research_session_live", args=[research.pk])
    logged_in(client, viewer)

    first = client.get(live, {"after": 0}).json()
    assert first["status"] == "running" and first["finished"] is False and first["last_number"] == 2
    assert 'id="trial-1"' in first["rows"] and 'id="trial-2"' in first["rows"]

    web_rows.trial(research, 3)
    ResearchSession.objects.filter(pk=research.pk).update(status=ResearchSession.Status.DONE)
    second = client.get(live, {"after": 2}).json()
    assert 'id="trial-3"' in second["rows"] and 'id="trial-2"' not in second["rows"]
    assert second["finished"] is True and second["n_trials"] == 3
    assert len(second["charts"]["dsr"]["data"]) >= 2
    assert client.get(live, {"after": "junk"}).json()["last_number"] == 3
    assert client.get(live, {"after": "²"}).json()["last_number"] == 3


def test_an_approver_attaches_and_detaches_with_one_click_each(client, approver, strategy):
    research = web_rows.finished_session(approver)
    candidate = research.candidates.get(rank=1)
    logged_in(client, approver)
    page = client.get(reverse("research_session", args=[research.pk])).content.decode()
    assert "attach-form" in page and "Trend desk" in page

    attached = client.post(
        reverse("research_candidate_attach", args=[candidate.pk]), {"strategy": strategy.pk, "reason": "trend filter"}
    )
    assert attached.status_code == 302
    signal = ResearchSignal.objects.get()
    assert signal.strategy == strategy and signal.detached_at is None
    assert AuditEvent.objects.filter(action="research_signal_attached", reason="trend filter").count() == 1

    listed = client.get(START).content.decode()
    assert f'id="signal-{signal.pk}"' in listed and "Desk signals" in listed

    detached = client.post(reverse("research_signal_detach", args=[signal.pk]), {"next": f"session:{research.pk}"})
    assert detached.status_code == 302 and detached["Location"] == reverse("research_session", args=[research.pk])
    signal.refresh_from_db()
    assert signal.detached_at is not None
    assert AuditEvent.objects.filter(action="research_signal_detached").count() == 1
    assert f'id="signal-{signal.pk}"' not in client.get(START).content.decode()

    again = client.post(reverse("research_candidate_attach", args=[candidate.pk]), {"strategy": strategy.pk})
    assert again.status_code == 302
    from_strategies = client.post(
        reverse("research_signal_detach", args=[ResearchSignal.objects.get(detached_at=None).pk]),
        {"next": "strategies"},
    )
    assert from_strategies["Location"] == reverse("strategy_list")


def test_a_viewer_cannot_attach_or_detach(client, viewer, approver, strategy):
    research = web_rows.finished_session(approver)
    candidate = research.candidates.get(rank=1)
    logged_in(client, viewer)

    refused = client.post(reverse("research_candidate_attach", args=[candidate.pk]), {"strategy": strategy.pk})
    assert refused.status_code == 403 and not ResearchSignal.objects.exists()

    from research.attach import signal_attach

    signal = signal_attach(candidate=candidate, strategy_id=strategy.pk, user=approver)
    assert client.post(reverse("research_signal_detach", args=[signal.pk])).status_code == 403
    signal.refresh_from_db()
    assert signal.detached_at is None


@pytest.mark.parametrize("chosen", ["", "²", "9" * 40, "one"])
def test_attaching_without_a_strategy_says_so(client, approver, strategy, chosen):
    research = web_rows.finished_session(approver)
    candidate = research.candidates.get(rank=1)
    logged_in(client, approver)

    answer = client.post(reverse("research_candidate_attach", args=[candidate.pk]), {"strategy": chosen}, follow=True)

    assert answer.status_code == 200 and "choose the strategy" in answer.content.decode()
    assert (
        not ResearchSignal.objects.exists() and not AuditEvent.objects.filter(action__startswith="research_").exists()
    )


def test_an_approver_cancels_a_running_session(client, approver, viewer):
    research = web_rows.session(approver)
    cancel = reverse("research_session_cancel", args=[research.pk])

    assert logged_in(client, viewer).post(cancel).status_code == 403
    research.refresh_from_db()
    assert research.status == ResearchSession.Status.RUNNING

    answer = logged_in(client, approver).post(cancel, follow=True)
    research.refresh_from_db()
    assert research.status == ResearchSession.Status.CANCELLED
    assert "cancelled" in answer.content.decode()
    again = client.post(cancel, follow=True)
    assert "only a queued or running one can be cancelled" in again.content.decode()


def test_the_admin_reads_sessions_trials_and_candidates_but_changes_nothing(client, desk_admin, approver):
    research = web_rows.finished_session(approver)
    trial = research.trials.get(number=1)
    candidate = research.candidates.get(rank=1)
    logged_in(client, desk_admin)

    for model, row in (("researchsession", research), ("researchtrial", trial), ("researchcandidate", candidate)):
        assert client.get(reverse(f"admin:research_{model}_changelist")).status_code == 200
        assert client.get(reverse(f"admin:research_{model}_change", args=[row.pk])).status_code == 200
        assert client.get(reverse(f"admin:research_{model}_add")).status_code == 403
        assert client.post(reverse(f"admin:research_{model}_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    assert ResearchSession.objects.filter(pk=research.pk).exists()


def test_the_strategies_page_partial_lists_a_strategys_signals_with_a_detach_button(rf, approver, strategy):
    from django.template.loader import render_to_string

    from research.attach import signal_attach

    research = web_rows.finished_session(approver)
    signal = signal_attach(candidate=research.candidates.get(rank=1), strategy_id=strategy.pk, user=approver)
    strategy.attached_signals = [signal]  # what the strategies view prefetches
    request = rf.get("/strategies/")
    request.user = approver

    html = render_to_string(
        "research/_strategy_signals.html", {"strategy": strategy, "can_attach_signals": True}, request=request
    )

    assert signal.name in html and reverse("research_signal_detach", args=[signal.pk]) in html
    assert 'name="next" value="strategies"' in html
    strategy.attached_signals = []
    assert render_to_string("research/_strategy_signals.html", {"strategy": strategy}).strip() == ""


def test_the_strategies_page_lists_a_strategys_signals_with_a_one_click_detach(client, approver, viewer, strategy):
    from research.attach import signal_attach

    research = web_rows.finished_session(approver)
    signal = signal_attach(candidate=research.candidates.get(rank=1), strategy_id=strategy.pk, user=approver)

    logged_in(client, viewer)
    seen = client.get(reverse("strategy_list")).content.decode()
    assert f'id="strategy-signal-{signal.pk}"' in seen and signal.name in seen
    assert "Detach" not in seen  # a viewer reads; an approver decides

    logged_in(client, approver)
    page = client.get(reverse("strategy_list")).content.decode()
    assert reverse("research_signal_detach", args=[signal.pk]) in page
    detached = client.post(reverse("research_signal_detach", args=[signal.pk]), {"next": "strategies"})
    assert detached.status_code == 302 and detached["Location"] == reverse("strategy_list")
    assert f'id="strategy-signal-{signal.pk}"' not in client.get(reverse("strategy_list")).content.decode()
