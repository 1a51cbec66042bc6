"""Playbook citations are read out of what each role wrote, checked by code against the playbook the
run was shown, and stored once per (run, role, code) with the stage that wrote them. A model that
cites a rule which does not exist, is not active, or is written wrong gets it stored as not accepted
or not read at all: never counted."""

from __future__ import annotations

import json

import pytest

from agents.domain.llm import ModelChoice, ModelReply, ModelRequest
from agents.models import Heuristic
from agents.playbook import DEMO_PLAYBOOK, seed_demo_playbook, set_status
from agents.roles import OfflineModel
from trading.market.demo_seed import seed_demo
from trading.models import AnalystNoteRecord, HeuristicCitation, Instrument, PipelineRun, StageRun, Thesis
from trading.pipeline.citations import citations_store
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute
from trading.pipeline.outputs import read_stage_output

HOSTILE_NOTE = "Bullish per H-1 and H-999, and H-9 (a candidate), H-10 (retired), h-1 in lower case and H-12x glued."
HOSTILE_THESIS = "LONG per H-2, H-999 and H-0002, not h-8 nor H-8x."


class HostileCiter:
    """The offline model, except that the technical note and the thesis cite schema-valid nonsense."""

    provider = "offline"

    def __init__(self) -> None:
        self.inner = OfflineModel()

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        reply = self.inner.complete(request, model=model)
        answer = json.loads(reply.text)
        if request.role == "technical":
            answer["summary"] = HOSTILE_NOTE
        elif request.role == "trader":
            answer["rationale"] = HOSTILE_THESIS
        else:
            return reply
        return reply.model_copy(update={"text": json.dumps(answer)})


@pytest.fixture
def playbook(db):
    seed_demo_playbook()  # H-1 … H-8, active
    Heuristic.objects.create(code="H-9", text="a proposal", factor="trend", status=Heuristic.Status.CANDIDATE)
    Heuristic.objects.create(code="H-10", text="an old rule", factor="trend", status=Heuristic.Status.RETIRED)
    Heuristic.objects.create(code="H-12", text="an active rule", factor="", status=Heuristic.Status.ACTIVE)


@pytest.fixture
def hostile(monkeypatch):
    choice = ModelChoice(client=HostileCiter(), default_model="offline-rules", deep_model="offline-rules")
    monkeypatch.setattr("trading.pipeline.orchestrator.model_choice", lambda provider, symbol: choice)


def _run(instrument: Instrument) -> PipelineRun:
    return pipeline_run_create(instrument=instrument, as_of=instrument.bars.latest("date").date, provider="offline")


def _cited(run: PipelineRun, role: str) -> dict[str, bool]:
    return dict(HeuristicCitation.objects.filter(run=run, role=role).values_list("code", "accepted"))


def test_a_hostile_note_keeps_its_unknown_codes_as_not_accepted_and_its_misspelt_ones_not_at_all(
    playbook, hostile, instrument_with_bars, roomy_account
):
    run = _run(instrument_with_bars)
    assert pipeline_run_execute(run.pk).status == PipelineRun.Status.COMPLETED

    assert _cited(run, "technical") == {"H-1": True, "H-999": False, "H-9": False, "H-10": False}
    rows = HeuristicCitation.objects.filter(run=run, role="technical")
    note = AnalystNoteRecord.objects.get(run=run, role="technical")
    assert all(row.note_id == note.pk and row.cited_on == run.as_of for row in rows)
    assert {row.code: row.heuristic_id for row in rows} == {
        "H-1": Heuristic.objects.get(code="H-1").pk,
        "H-999": None,
        "H-9": None,
        "H-10": None,
    }
    assert not HeuristicCitation.objects.filter(code__in=["h-1", "H-12", "H-12x"]).exists()


def test_a_hostile_thesis_is_read_the_same_way_and_its_citations_are_the_thesiss(
    playbook, hostile, instrument_with_bars, roomy_account
):
    run = _run(instrument_with_bars)
    pipeline_run_execute(run.pk)
    thesis = Thesis.objects.get(run=run)

    # "H-0002" is not the playbook's H-2: a code is compared as written.
    assert _cited(run, "trader") == {"H-2": True, "H-999": False, "H-0002": False}
    assert not HeuristicCitation.objects.filter(run=run, code="H-8", role="trader").exists()
    run_level = HeuristicCitation.objects.filter(run=run, note__isnull=True)
    assert run_level.filter(role="trader").exists() and run_level.filter(role="manager").exists()
    assert set(run_level.values_list("thesis_id", flat=True)) == {thesis.pk}


def test_citations_are_checked_against_the_playbook_the_run_was_shown(
    playbook, instrument_with_bars, roomy_account, approver
):
    run = _run(instrument_with_bars)
    pipeline_run_execute(run.pk, stop_after="context")
    shown = read_stage_output("context", StageRun.objects.get(run=run, stage="context").output)
    assert [rule.code for rule in shown.playbook] == [*(code for code, _, _ in DEMO_PLAYBOOK), "H-12"]

    # Retired after the run read its context: its citations by this run still count.
    set_status(Heuristic.objects.get(code="H-8"), "retired", user=approver, reason="test")
    pipeline_run_execute(run.pk)

    assert _cited(run, "trader").get("H-8") is True


def test_a_resumed_or_redelivered_run_never_duplicates_a_citation(playbook, instrument_with_bars, roomy_account):
    run = _run(instrument_with_bars)
    pipeline_run_execute(run.pk, stop_after="analysts")
    after_analysts = set(HeuristicCitation.objects.filter(run=run).values_list("role", "code", "accepted"))
    assert after_analysts and {role for role, _, _ in after_analysts} <= {"news", "technical", "fundamental"}

    pipeline_run_execute(run.pk)
    stored = HeuristicCitation.objects.filter(run=run).count()
    pipeline_run_execute(run.pk)  # a finished run delivered again

    assert HeuristicCitation.objects.filter(run=run).count() == stored
    assert after_analysts <= set(HeuristicCitation.objects.filter(run=run).values_list("role", "code", "accepted"))


def test_storing_a_roles_citations_again_replaces_them(playbook, instrument_with_bars):
    run = _run(instrument_with_bars)
    active = {"H-1", "H-2"}

    citations_store(run=run, texts_by_role={"manager": ["per H-1 and H-999"]}, active_codes=active)
    citations_store(run=run, texts_by_role={"manager": ["per H-1 and H-2"]}, active_codes=active)

    assert _cited(run, "manager") == {"H-1": True, "H-2": True}


def test_the_offline_model_cites_the_demo_playbook_on_the_demo_data(db, roomy_account):
    seed_demo()  # the demo universe and its playbook
    reliance = Instrument.objects.get(symbol="RELIANCE")
    run = _run(reliance)

    assert pipeline_run_execute(run.pk).status == PipelineRun.Status.COMPLETED, run.failure_reason
    accepted = HeuristicCitation.objects.filter(run=run, accepted=True)
    roles = set(accepted.values_list("role", flat=True))
    assert {"technical", "manager", "trader"} <= roles
    assert not HeuristicCitation.objects.filter(run=run, accepted=False).exists()
    assert accepted.filter(role="trader", code="H-8", heuristic__code="H-8").exists()  # the ATR stop
    assert set(accepted.filter(note__isnull=True).values_list("thesis__run", flat=True)) == {run.pk}
