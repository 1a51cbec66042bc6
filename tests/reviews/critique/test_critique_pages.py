"""The critique's pages: a strategy's archive and one critique, read by any desk user; a free-form
action attested by an approver with a comment (never by a viewer, never without a comment); the gate
shown on the strategies page, a run's page and the approval queue; and a fixed number of queries
whatever the number of critiques."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviews.models import CritiqueAction
from tests.conftest import PASSWORD
from tests.factories import PipelineRunFactory, ThesisFactory
from tests.reviews.critique.web_rows import FREE_FORM, REDUCE, critique_for, runs_for, strategy_named
from trading.models import AuditEvent, PipelineRun, StrategyDirective, StrategyRun

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def gated():
    """A strategy held by a directive with one machine-checked and one free-form action."""
    strategy = strategy_named()
    runs_for(strategy, 12)
    critique = critique_for(
        strategy,
        diagnosis="Run 7 and position 3 show the same story; H-2 keeps being cited.",
        evidence=["Thesis 5 cites sentiment only (share 0.8).", "Strategy run 2 held."],
        scores={"single_signal_fixation": 0.8, "overconfidence": 0.6},
        actions=[REDUCE, FREE_FORM],
    )
    return strategy, critique


def free_form(critique) -> CritiqueAction:
    return critique.actions.get(kind=CritiqueAction.Kind.FREE_FORM)


def test_a_viewer_reads_a_critique_with_its_diagnosis_findings_and_actions(viewer, gated):
    _strategy, critique = gated
    page = logged_in(viewer).get(reverse("critique_detail", args=[critique.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Every thesis" not in html  # the diagnosis is the one stored, not a default
    assert "keeps being cited" in html
    # The ids it cites link to the rows' pages.
    assert f'href="{reverse("run_detail", args=[7])}"' in html
    assert f'href="{reverse("position_lifecycle", args=[3])}"' in html
    assert f'href="{reverse("thesis_detail", args=[5])}"' in html
    assert f'href="{reverse("heuristic_detail", args=["H-2"])}"' in html
    assert 'data-detector="single_signal_fixation" class="fired"' in html
    assert html.count('data-status="open"') == 2
    assert "Blocking." in html
    # No attestation form for a viewer.
    assert reverse("critique_action_attest", args=[free_form(critique).pk]) not in html


def test_an_approver_sees_the_attestation_form_only_for_the_free_form_action(approver, gated):
    _strategy, critique = gated
    html = logged_in(approver).get(reverse("critique_detail", args=[critique.pk])).content.decode()
    assert reverse("critique_action_attest", args=[free_form(critique).pk]) in html
    reduce = critique.actions.get(kind=CritiqueAction.Kind.REDUCE_CONCENTRATION)
    assert reverse("critique_action_attest", args=[reduce.pk]) not in html


def test_it_refuses_a_viewers_attestation_with_a_403_and_changes_nothing(viewer, gated):
    _strategy, critique = gated
    action = free_form(critique)
    answer = logged_in(viewer).post(
        reverse("critique_action_attest", args=[action.pk]), {"comment": "I did it, trust me"}
    )
    assert answer.status_code == 403
    action.refresh_from_db()
    assert action.status == CritiqueAction.Status.OPEN
    assert not AuditEvent.objects.filter(action="critique_action_attested").exists()


def test_it_refuses_an_empty_comment_with_a_message_and_changes_nothing(approver, gated):
    _strategy, critique = gated
    action = free_form(critique)
    answer = logged_in(approver).post(
        reverse("critique_action_attest", args=[action.pk]), {"comment": "   "}, follow=True
    )
    assert answer.status_code == 200
    assert "needs a comment" in answer.content.decode()
    action.refresh_from_db()
    assert action.status == CritiqueAction.Status.OPEN and action.attestation == ""
    assert not AuditEvent.objects.filter(action="critique_action_attested").exists()


def test_an_approver_attests_a_free_form_action_with_a_comment(approver, gated):
    _strategy, critique = gated
    action = free_form(critique)
    answer = logged_in(approver).post(
        reverse("critique_action_attest", args=[action.pk]),
        {"comment": "Added the analysts' fundamentals family; see run 14."},
        follow=True,
    )
    assert answer.status_code == 200
    assert f"Action {action.number} attested." in answer.content.decode()
    action.refresh_from_db()
    assert action.status == CritiqueAction.Status.ATTESTED
    assert action.attested_by == approver
    assert action.attestation == "Added the analysts' fundamentals family; see run 14."
    assert AuditEvent.objects.filter(action="critique_action_attested").exists()
    # The machine-checked action still blocks: only the attested one left the directive's list.
    directive = StrategyDirective.objects.get(source_ref=critique.pk)
    assert [item["id"] for item in directive.blocking] == [
        critique.actions.get(kind=CritiqueAction.Kind.REDUCE_CONCENTRATION).pk
    ]


def test_it_refuses_to_attest_a_machine_checked_action(approver, gated):
    _strategy, critique = gated
    reduce = critique.actions.get(kind=CritiqueAction.Kind.REDUCE_CONCENTRATION)
    answer = logged_in(approver).post(
        reverse("critique_action_attest", args=[reduce.pk]), {"comment": "done"}, follow=True
    )
    assert answer.status_code == 200
    reduce.refresh_from_db()
    assert reduce.status == CritiqueAction.Status.OPEN


def test_the_archive_lists_each_critique_with_its_actions_and_draws_the_trajectory(viewer, gated):
    strategy, _first = gated
    critique_for(
        strategy, sequence=2, run_count=20, severity="advisory", scores={"single_signal_fixation": 0.4},
        trajectory="improving",
    )  # fmt: skip
    critique_for(strategy, sequence=3, run_count=25, status="failed", error="the critic timed out")
    page = logged_in(viewer).get(reverse("critique_list", args=[strategy.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count("data-critique=") == 3
    assert "the critic timed out" in html
    assert "Improving" in html or "improving" in html
    assert "reduce_concentration · open" in html
    shown = [int(n) for n in re.findall(r'data-critique="(\d+)"', html)]
    assert shown == sorted(shown, reverse=True)  # latest first
    figure = json.loads(json.dumps(page.context["chart"]))  # plain JSON, as json_script writes it
    lines = {trace["meta"]: trace for trace in figure["data"]}
    assert len(lines) == 7
    assert lines["single_signal_fixation"]["y"] == [0.8, 0.4]
    assert lines["single_signal_fixation"]["marker"]["symbol"] == ["circle", "circle-open"]
    # The blocking directive of #1 is shown as in force.
    assert "blocks the strategy" in html


def test_the_archive_of_a_strategy_without_critiques_says_so(viewer):
    strategy = strategy_named("Quiet")
    page = logged_in(viewer).get(reverse("critique_list", args=[strategy.pk]))
    assert page.status_code == 200
    assert page.context["chart"] is None
    assert "No critique of Quiet yet" in page.content.decode()


def test_a_bad_replay_flag_on_the_archive_is_a_400_with_the_reason(viewer, gated):
    strategy, _ = gated
    page = logged_in(viewer).get(reverse("critique_list", args=[strategy.pk]), {"replay": "maybe"})
    assert page.status_code == 400
    assert "replay" in page.content.decode()


def test_the_strategies_page_shows_the_gate_and_each_runs_critique_decision(viewer, gated):
    strategy, critique = gated
    StrategyRun.objects.filter(strategy=strategy, as_of=critique.as_of).update(
        critique_decision="fired", critique_reason="run 12 ≥ 10; drew 0.04 < 0.10", critique_state="failed",
        critique_ref=critique.pk, blocked_by="1. reduce_concentration: Bring the largest position below 20%",
    )  # fmt: skip
    StrategyRun.objects.filter(strategy=strategy, as_of=critique.as_of.replace(day=2)).update(
        critique_decision="exempt", critique_reason="run 1 of the first 10: no critique yet"
    )
    html = logged_in(viewer).get(reverse("strategy_list")).content.decode()
    assert f'id="gate-{strategy.pk}" data-gate="blocked"' in html
    assert "Bring the largest position below 20% of capital." in html
    assert reverse("critique_list", args=[strategy.pk]) in html
    assert "drew 0.04 &lt; 0.10" in html
    assert 'crit-state-failed">Failed' in html
    assert "held by: 1. reduce_concentration" in html
    assert "no critique yet" in html


def test_the_strategies_page_says_an_advisory_does_not_block(viewer):
    strategy = strategy_named()
    critique_for(strategy, severity="advisory", actions=[FREE_FORM])
    html = logged_in(viewer).get(reverse("strategy_list")).content.decode()
    assert f'id="gate-{strategy.pk}" data-gate="advisory"' in html
    assert "Not blocked" in html


def test_a_runs_page_says_what_held_it(viewer, gated):
    strategy, _ = gated
    strategy_run = StrategyRun.objects.filter(strategy=strategy).first()
    StrategyRun.objects.filter(pk=strategy_run.pk).update(blocked_by="2. free_form: write it down")
    run = PipelineRunFactory()
    PipelineRun.objects.filter(pk=run.pk).update(strategy_run=strategy_run)
    html = logged_in(viewer).get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="blocked-by"' in html and "2. free_form: write it down" in html


def test_the_approval_queue_badges_theses_of_a_gated_strategy(viewer, gated):
    strategy, _ = gated
    held = ThesisFactory()
    PipelineRun.objects.filter(pk=held.run_id).update(
        strategy_run=StrategyRun.objects.filter(strategy=strategy).first()
    )
    ThesisFactory()  # no strategy: no badge
    html = logged_in(viewer).get(reverse("thesis_queue")).content.decode()
    assert html.count('class="tag gated"') == 1
    assert f"#gate-{strategy.pk}" in html


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def test_the_pages_cost_the_same_queries_for_more_critiques(viewer, gated):
    strategy, first = gated
    client = logged_in(viewer)
    archive, detail = reverse("critique_list", args=[strategy.pk]), reverse("critique_detail", args=[first.pk])
    strategies = reverse("strategy_list")
    before = (_queries(client, archive), _queries(client, detail), _queries(client, strategies))
    for sequence in range(2, 7):
        critique_for(strategy, sequence=sequence, run_count=10 + sequence * 3, actions=[REDUCE, FREE_FORM])
    after = (_queries(client, archive), _queries(client, detail), _queries(client, strategies))
    assert after == before


def test_the_admin_reads_critiques_with_their_actions_and_the_ic_log_but_changes_nothing(desk_admin, gated):
    _strategy, critique = gated
    client = logged_in(desk_admin)
    assert client.get("/admin/reviews/critique/").status_code == 200
    change = client.get(f"/admin/reviews/critique/{critique.pk}/change/")
    assert change.status_code == 200
    assert "Write down which new signal family the analysts will read." in change.content.decode()
    assert 'name="_save"' not in change.content.decode()
    assert client.get("/admin/reviews/critique/add/").status_code == 403
    assert client.get("/admin/reviews/signalic/").status_code == 200
    assert client.get("/admin/reviews/signalic/add/").status_code == 403


def test_a_replays_directive_does_not_gate_the_live_desk_but_is_mentioned(viewer):
    strategy = strategy_named()
    critique_for(strategy, is_replay=True, actions=[FREE_FORM])
    html = logged_in(viewer).get(reverse("strategy_list")).content.decode()
    assert f'id="gate-{strategy.pk}" data-gate="clear"' in html
    assert "its history replay is held by directive <a" in html
