"""``critique_run``: evidence, memory, the critic, the grounding check, settle by code, and one finish
that writes the actions, the trading-owned directive, the run's state, the audit and the archive, once.
Every rule "code decides" is held against a client that disagrees."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest

from agents.domain.llm import ModelChoice, ModelReply, ModelRequest
from agents.roles import OfflineModel
from reviews.critique import service
from reviews.critique.archive import read_archive
from reviews.critique.service import critique_run
from reviews.models import Critique, CritiqueAction
from tests.reviews.critique.critic_packs import pack
from trading.models import AuditEvent, Strategy, StrategyDirective, StrategyRun

pytestmark = pytest.mark.django_db

AS_OF = dt.date(2026, 11, 20)
Rewrite = Callable[[dict[str, Any], int], dict[str, Any]]


class Critic:
    """The offline critic, except that each reply may be rewritten (``rewrite(reply, call_number)``)."""

    provider = "scripted"

    def __init__(self, rewrite: Rewrite | None = None) -> None:
        self.rewrite = rewrite
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        self.requests.append(request)
        reply = json.loads(OfflineModel().complete(request, model=model).text)
        if self.rewrite is not None:
            reply = self.rewrite(reply, len(self.requests))
        return ModelReply(text=json.dumps(reply), provider=self.provider, model=model)


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path):
    settings.CRITIQUE = {**settings.CRITIQUE, "ARCHIVE_DIR": str(tmp_path / "critiques")}


@pytest.fixture
def critic(monkeypatch):
    def install(rewrite: Rewrite | None = None) -> Critic:
        client = Critic(rewrite)
        choice = ModelChoice(client=client, default_model="quick", deep_model="deep")
        monkeypatch.setattr(service, "model_choice", lambda provider, *, symbol: choice)
        return client

    return install


@pytest.fixture
def evidence(monkeypatch):
    """Serve a hand-made pack in place of the real one; ``calls`` counts how often it was asked."""
    state: dict[str, Any] = {"pack": pack(), "calls": 0}

    def serve(strategy, *, as_of, is_replay):
        state["calls"] += 1
        return {**state["pack"], "strategy": {**state["pack"]["strategy"], "id": strategy.pk}}

    monkeypatch.setattr(service, "evidence_pack", serve)
    return state


def queued(strategy: Strategy | None = None, sequence: int = 1, as_of: dt.date = AS_OF) -> Critique:
    strategy = strategy or Strategy.objects.create(name="Momentum", philosophy="Trend continuation in large caps.")
    run = StrategyRun.objects.create(
        strategy=strategy, as_of=as_of, critique_decision="fired", critique_state=StrategyRun.CritiqueState.PENDING
    )
    critique = Critique.objects.create(
        strategy=strategy, strategy_run=run, sequence=sequence, run_count=10 + sequence, as_of=as_of
    )
    run.critique_ref = critique.pk
    run.save(update_fields=["critique_ref"])
    return critique


def run_state(critique: Critique) -> str:
    return StrategyRun.objects.get(pk=critique.strategy_run_id).critique_state


def test_a_critique_is_issued_once_with_its_actions_directive_audit_and_archive(critic, evidence) -> None:
    critic()
    evidence["pack"] = pack("narrative_as_quant", "overconfidence", strong=["overconfidence"], demoted=["H-3"])
    critique = queued()

    done = critique_run(critique.pk)

    assert done.status == Critique.Status.DONE and done.error == ""
    assert done.severity == "directive" and done.trajectory == "first"
    assert done.grounding["share"] == 1.0 and done.grounding["invented_ids"] == []
    kinds = list(done.actions.order_by("number").values_list("kind", flat=True))
    assert kinds == ["stop_citing", "calibrate_confidence", "log_signal_ics"]
    directive = StrategyDirective.objects.get(source_ref=done.pk)
    assert (directive.severity, directive.sequence, directive.opened_on) == ("directive", 1, AS_OF)
    assert directive.text.startswith("### Critique #1 of 2026-11-20: DIRECTIVE")
    assert "must HOLD" in directive.text and done.diagnosis in directive.text
    assert {"kind": "heuristic", "value": "H-3", "text": "Citing H-3, a demoted heuristic."} in directive.prohibitions
    assert {row["kind"] for row in directive.blocking} <= set(kinds)
    assert run_state(done) == StrategyRun.CritiqueState.DONE
    assert AuditEvent.objects.filter(action="critique_issued", target=f"critique {done.pk}").count() == 1
    assert [document["sequence"] for document in read_archive(done.strategy)] == [1]
    assert done.archive_path.endswith("critique_run_001.json")

    again = critique_run(critique.pk)

    assert again.attempts == done.attempts
    assert StrategyDirective.objects.filter(source_ref=done.pk).count() == 1
    assert AuditEvent.objects.filter(action="critique_issued").count() == 1
    assert evidence["calls"] == 1


def test_a_worker_that_died_mid_critique_is_finished_once_by_the_retry_from_the_stored_evidence(
    critic, evidence
) -> None:
    critic()
    critique = queued()
    stored = pack("overconfidence")
    stored["strategy"]["id"] = critique.strategy_id
    Critique.objects.filter(pk=critique.pk).update(status=Critique.Status.RUNNING, attempts=1, evidence=stored)

    done = critique_run(critique.pk)

    assert done.status == Critique.Status.DONE and done.attempts == 2
    assert evidence["calls"] == 0  # the same facts as the first attempt read, not a later reading
    assert done.findings == stored["loops"]
    assert StrategyDirective.objects.filter(source_ref=done.pk).count() == 1


def invent(reply: dict[str, Any], call: int) -> dict[str, Any]:
    return {**reply, "diagnosis": "The win rate collapsed to 0.1234 in run 987654.", "evidence": ["position 31337."]}


def test_a_critique_citing_invented_figures_is_repaired_once_then_fails_closed_and_visible(critic, evidence) -> None:
    client = critic(invent)
    evidence["pack"] = pack("overconfidence", strong=["overconfidence"])
    critique = queued()

    failed = critique_run(critique.pk)

    assert failed.status == Critique.Status.FAILED
    assert "no grounded critique after one repair" in failed.error
    assert "0.1234 (diagnosis)" in failed.error and "run 987654" in failed.error and "position 31337" in failed.error
    assert len(client.requests) == 2
    assert "0.1234 (diagnosis)" in client.requests[1].prompt  # the repair request names what was ungrounded
    assert failed.grounding["share"] < 1.0
    assert not StrategyDirective.objects.filter(strategy=failed.strategy).exists()
    assert not CritiqueAction.objects.filter(critique=failed).exists()
    assert run_state(failed) == StrategyRun.CritiqueState.FAILED
    assert AuditEvent.objects.filter(action="critique_failed", target=f"critique {failed.pk}").exists()
    assert read_archive(failed.strategy) == []


def test_a_critique_grounded_on_its_repair_is_issued(critic, evidence) -> None:
    client = critic(lambda reply, call: invent(reply, call) if call == 1 else reply)
    evidence["pack"] = pack("overconfidence")

    done = critique_run(queued().pk)

    assert done.status == Critique.Status.DONE
    assert len(client.requests) == 2 and done.grounding["share"] == 1.0


def test_a_careless_critic_cannot_downgrade_an_escalated_finding(critic, evidence) -> None:
    critic(lambda reply, call: {**reply, "severity": "advisory", "required_actions": []})
    strategy = Strategy.objects.create(name="Stubborn", philosophy="x")
    evidence["pack"] = pack("overconfidence")
    for sequence, day in ((1, dt.date(2026, 10, 1)), (2, dt.date(2026, 10, 20))):
        earlier = queued(strategy, sequence, day)
        Critique.objects.filter(pk=earlier.pk).update(
            status=Critique.Status.DONE, severity="advisory", findings=pack("overconfidence")["loops"]
        )
    critique = queued(strategy, 3)

    done = critique_run(critique.pk)

    assert done.severity == "directive"
    escalation = next(row for row in done.escalations if row["detector"] == "overconfidence")
    assert (escalation["status"], escalation["reviews_ago"]) == ("persisting", 2)
    assert "severity raised to directive" in " ".join(done.directive["settled"])
    directive = StrategyDirective.objects.get(source_ref=done.pk)
    assert directive.severity == "directive"
    assert [action.kind for action in done.actions.all()] == ["free_form"]  # something the gate can hold it to
    assert "first flagged 2 reviews ago" in directive.text


def test_an_invented_action_kind_becomes_free_form_and_bad_params_are_not_trusted(critic, evidence) -> None:
    def rewrite(reply: dict[str, Any], call: int) -> dict[str, Any]:
        return {
            **reply,
            "required_actions": [
                {"kind": "rebuild_the_model", "text": "Rebuild the return model.", "params": {"depth": 3}},
                {"kind": "write_lesson", "text": "Write a lesson for position 45.", "params": {"position_id": 45}},
                {"kind": "calibrate_confidence", "text": "Calibrate.", "params": {"max_gap": 7}},
            ],
        }

    critic(rewrite)
    evidence["pack"] = pack("overconfidence")

    done = critique_run(queued().pk)

    actions = list(done.actions.order_by("number"))
    assert [action.kind for action in actions] == ["free_form", "free_form", "free_form"]
    assert all(action.params == {} for action in actions)
    assert "not a losing position of this strategy" in actions[1].text  # position 45 is no loss of this strategy
    assert len(done.directive["settled"]) == 3


def test_the_gate_check_runs_once_after_the_commit(critic, evidence, monkeypatch) -> None:
    critic()
    evidence["pack"] = pack("overconfidence")
    calls = []
    monkeypatch.setattr(service, "actions_check", lambda strategy, **kwargs: calls.append((strategy.pk, kwargs)))

    done = critique_run(queued().pk)
    critique_run(done.pk)

    assert calls == [(done.strategy_id, {"is_replay": False, "as_of": AS_OF})]


def test_a_broken_gate_check_does_not_undo_the_issued_critique(critic, evidence, monkeypatch) -> None:
    critic()

    def broken(strategy, **kwargs):
        raise RuntimeError("gate down")

    monkeypatch.setattr(service, "actions_check", broken)

    done = critique_run(queued().pk)

    assert done.status == Critique.Status.DONE
    assert StrategyDirective.objects.filter(source_ref=done.pk).exists()


def test_the_real_evidence_pack_of_a_young_strategy_gives_a_grounded_offline_critique(critic) -> None:
    critic()

    done = critique_run(queued().pk)

    assert done.status == Critique.Status.DONE, done.error
    assert {row["detector"] for row in done.findings} >= {"overconfidence", "paralysis_or_churn"}
    assert done.grounding["share"] == 1.0
    assert done.evidence["figures"]
