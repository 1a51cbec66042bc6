"""The playbook's services: what a run is shown, proposing candidates, and changing a rule's status,
each change kept in the rule's history (and the desk's audit log when the caller hands it over)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.domain.playbook import FACTORS
from agents.models import Heuristic
from agents.playbook import (
    DEMO_PLAYBOOK,
    active_playbook,
    heuristic_edit,
    next_code,
    propose_candidate,
    seed_demo_playbook,
    set_status,
)
from trading.audit import audit_record
from trading.models import AuditEvent
from vocabulary.refusals import InputRefused, StateConflict


def _rule(code: str, status: str = Heuristic.Status.ACTIVE, text: str = "", factor: str = "trend") -> Heuristic:
    return Heuristic.objects.create(code=code, text=text or f"rule {code}", factor=factor, status=status)


def test_a_run_is_shown_the_active_rules_in_code_order_in_one_query(db, django_assert_num_queries):
    _rule("H-10")
    _rule("H-2", text="  spaced\n  out  ")
    _rule("H-3", Heuristic.Status.CANDIDATE)
    _rule("H-4", Heuristic.Status.DEMOTED)
    _rule("H-5", Heuristic.Status.RETIRED)

    with django_assert_num_queries(1):
        rules = active_playbook()

    assert [rule.code for rule in rules] == ["H-2", "H-10"]
    assert rules[0].text == "spaced out" and rules[0].factor == "trend"


def test_a_proposal_is_a_candidate_under_the_next_free_code(db):
    _rule("H-3", Heuristic.Status.RETIRED)  # a retired code is never given again
    _rule("H-1")

    candidate = propose_candidate(text="Cut losers  faster\nin a falling market", origin="retrospective #4")

    assert candidate.code == "H-4" and next_code() == "H-5"
    assert candidate.status == Heuristic.Status.CANDIDATE
    assert candidate.text == "Cut losers faster in a falling market"
    assert candidate.origin == "retrospective #4"
    assert candidate.history.get().history_change_reason == "proposed (retrospective #4)"
    assert candidate.code not in [rule.code for rule in active_playbook()]


def test_the_same_proposal_twice_is_one_candidate(db):
    first = propose_candidate(text="Respect the 200-day average", origin="weekly review #1", factor="trend")
    again = propose_candidate(text="  respect THE 200-day   average ", origin="weekly review #2")

    assert again.pk == first.pk and Heuristic.objects.count() == 1


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_a_proposal_without_words_is_refused_and_nothing_is_written(db, text):
    with pytest.raises(InputRefused, match="a heuristic needs its text"):
        propose_candidate(text=text, origin="retrospective #9")
    assert not Heuristic.objects.exists()


def test_a_proposal_is_audited_when_the_caller_hands_over_the_audit_log(db, desk_admin):
    candidate = propose_candidate(text="Avoid results week", origin="admin", user=desk_admin, audit=audit_record)

    event = AuditEvent.objects.get(action="heuristic_proposed")
    assert event.target == candidate.code and event.actor == desk_admin
    assert candidate.history.get().history_user == desk_admin


def test_a_status_change_keeps_who_and_why_in_the_history_and_the_audit_log(db, approver):
    rule = _rule("H-1", Heuristic.Status.CANDIDATE)

    changed = set_status(rule, "active", user=approver, reason="tested in the replay", audit=audit_record)

    assert changed.status == "active" and Heuristic.objects.get(pk=rule.pk).status == "active"
    latest = rule.history.first()
    assert latest.history_user == approver and latest.history_change_reason == "tested in the replay"
    event = AuditEvent.objects.get(action="heuristic_status_changed")
    assert event.details == {"from": "candidate", "to": "active"} and event.reason == "tested in the replay"


@pytest.mark.parametrize(
    ("status", "reason", "refusal", "words"),
    [
        ("archived", "why not", InputRefused, "not a heuristic status"),
        ("retired", "  ", InputRefused, "a reason is required"),
        ("active", "again", StateConflict, "already active"),
    ],
)
def test_a_bad_status_change_is_refused_and_changes_nothing(db, approver, status, reason, refusal, words):
    rule = _rule("H-1")
    versions = rule.history.count()

    with pytest.raises(refusal, match=words):
        set_status(rule, status, user=approver, reason=reason, audit=audit_record)

    assert Heuristic.objects.get(pk=rule.pk).status == "active"
    assert rule.history.count() == versions and not AuditEvent.objects.filter(action__startswith="heuristic").exists()


def test_a_status_change_from_a_status_it_may_not_leave_is_a_conflict(db, approver):
    rule = _rule("H-1", Heuristic.Status.RETIRED)

    with pytest.raises(StateConflict, match="only a candidate heuristic can be made active"):
        set_status(rule, "active", user=approver, reason="bring it back", allowed_from={"candidate"})


def test_an_edit_changes_only_what_differs_and_keeps_the_old_text_in_the_history(db, desk_admin):
    rule = _rule("H-1", text="Trade with the trend")

    edited = heuristic_edit(
        rule, user=desk_admin, reason="clearer", text="Trade with the 200-day trend", factor="trend", audit=audit_record
    )

    assert edited.text == "Trade with the 200-day trend"
    event = AuditEvent.objects.get(action="heuristic_edited")
    assert event.details == {"before": {"text": "Trade with the trend"}, "after": {"text": edited.text}}
    assert [version.text for version in rule.history.all()] == ["Trade with the 200-day trend", "Trade with the trend"]
    with pytest.raises(StateConflict, match="nothing to change"):
        heuristic_edit(rule, user=desk_admin, reason="again", text="Trade with the 200-day trend")


def test_the_demo_playbook_ties_each_rule_to_a_factor_the_offline_rules_read(db):
    assert len(DEMO_PLAYBOOK) >= 8
    assert all(factor in FACTORS for _, factor, _ in DEMO_PLAYBOOK)
    assert len({factor for _, factor, _ in DEMO_PLAYBOOK}) == len(DEMO_PLAYBOOK)

    assert seed_demo_playbook() == len(DEMO_PLAYBOOK)
    assert [rule.code for rule in active_playbook()] == [code for code, _, _ in DEMO_PLAYBOOK]


def test_seeding_the_demo_playbook_again_leaves_a_persons_changes_alone(db, approver):
    seed_demo_playbook()
    demoted = Heuristic.objects.get(code="H-3")
    set_status(demoted, "demoted", user=approver, reason="lost money")

    assert seed_demo_playbook() == 0
    assert Heuristic.objects.get(code="H-3").status == "demoted"
    assert Heuristic.objects.count() == len(DEMO_PLAYBOOK)


def test_the_admin_edits_the_playbook_with_its_history_and_never_deletes_a_rule(db, desk_admin, client):
    rule = _rule("H-4")
    client.force_login(desk_admin)

    assert client.get(reverse("admin:agents_heuristic_changelist")).status_code == 200
    assert client.get(reverse("admin:agents_heuristic_history", args=[rule.pk])).status_code == 200
    assert client.get(reverse("admin:agents_heuristic_delete", args=[rule.pk])).status_code == 403
    add = client.get(reverse("admin:agents_heuristic_add")).content.decode()
    assert 'value="H-5"' in add  # the next free code, offered

    client.post(
        reverse("admin:agents_heuristic_change", args=[rule.pk]),
        {"code": "H-99", "text": "Edited in the admin", "factor": "trend", "status": "demoted", "origin": "seed"},
    )

    rule.refresh_from_db()
    assert (rule.code, rule.text, rule.status) == ("H-4", "Edited in the admin", "demoted")  # the code stays
    assert rule.history.first().history_user == desk_admin
