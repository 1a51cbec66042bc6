"""Each stage's output is typed and versioned: it reads back into the same model it was written
from, a row written before versions (no ``version`` key, fields added since missing) still reads
and shows, a shape this desk does not know is refused with the reason, and the API publishes the
shapes and a run's typed outputs."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse
from django.utils.html import escape
from rest_framework.test import APIClient

from trading.models import PipelineRun, StageRun
from trading.models.pipeline import STAGES
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute
from trading.pipeline.outputs import (
    SCHEMA_VERSION,
    STAGE_OUTPUTS,
    AnalystsOutput,
    ContextOutput,
    DebateOutput,
    FeaturesOutput,
    RiskOutput,
    RunOutputs,
    StageOutputUnreadable,
    TraderOutput,
    read_stage_output,
)
from trading.pipeline.presenters import run_outputs, run_summary_lines

# What each stage's rows looked like before versions were stored: no "version", and without the
# fields added later (the mandate, the citation checks, the trader's warnings, the sizing note).
ADDED_SINCE = {
    "context": ("mandate",),
    "analysts": ("citations", "citation_mismatches"),
    "trader": ("warnings",),
}


@pytest.fixture
def finished_run(instrument_with_bars, roomy_account) -> PipelineRun:
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    assert pipeline_run_execute(run.pk).status == PipelineRun.Status.COMPLETED
    return run


def _stored(run: PipelineRun) -> dict[str, dict]:
    return dict(StageRun.objects.filter(run=run).values_list("stage", "output"))


def _as_written_before_versions(stage: str, output: dict) -> dict:
    old = copy.deepcopy(output)
    old.pop("version")
    for field in ADDED_SINCE.get(stage, ()):
        old.pop(field)
    if stage == "risk":
        old.pop("held")  # a sized run's risk row had only its decision
        old["decision"].pop("sizing")
    return old


def test_every_stage_reads_back_into_the_model_it_was_written_from(finished_run):
    stored = _stored(finished_run)

    assert list(stored) == list(STAGES)
    expected_types = (FeaturesOutput, ContextOutput, AnalystsOutput, DebateOutput, TraderOutput, RiskOutput)
    for (stage, output), shape in zip(stored.items(), expected_types, strict=True):
        typed = read_stage_output(stage, output)
        assert type(typed) is shape and typed.version == SCHEMA_VERSION == output["version"]
        assert typed.stored() == output, stage  # nothing lost or added on the way back
        assert shape.model_validate(typed.stored()) == typed


def test_the_typed_outputs_carry_what_the_pages_read(finished_run):
    outputs = run_outputs(finished_run)

    assert set(outputs.analysts.notes) == {"news", "sentiment", "technical", "fundamental"}
    assert outputs.analysts.quorum and outputs.analysts.citation_mismatches == 0
    assert outputs.debate.result.conviction == outputs.debate.calibration.conviction
    assert outputs.trader.thesis.direction == outputs.debate.result.winner
    assert outputs.risk.decision is not None and not outputs.risk.held
    assert outputs.features.bundle.technical.atr_14 is not None


def test_a_run_whose_rows_predate_versions_still_reads_and_shows(finished_run, client, viewer):
    for stage, output in _stored(finished_run).items():
        StageRun.objects.filter(run=finished_run, stage=stage).update(output=_as_written_before_versions(stage, output))

    outputs = run_outputs(finished_run)

    assert outputs.context.mandate == "" and outputs.trader.warnings == []
    assert outputs.analysts.citations == {} and outputs.analysts.citation_mismatches == 0
    assert outputs.risk.decision.sizing == "" and outputs.risk.held == ""
    assert {output.version for output in (outputs.features, outputs.debate, outputs.risk)} == {1}
    client.force_login(viewer)
    page = client.get(reverse("run_detail", args=[finished_run.pk]))
    assert page.status_code == 200
    assert escape(outputs.debate.result.manager_rationale) in page.content.decode()
    lines = run_summary_lines(finished_run, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": 0})
    assert any(line.startswith(("Risk: APPROVED", "Risk: REJECTED")) for line in lines)


def test_an_old_held_risk_row_reads_as_held():
    old = {"held": "HOLD: RELIANCE a thesis is already pending approval (thesis #3); one live idea per instrument"}

    typed = read_stage_output("risk", old)

    assert typed.decision is None and typed.held == old["held"] and typed.version == 1


def test_a_shape_this_desk_does_not_know_is_refused_with_the_reason(finished_run):
    context = _stored(finished_run)["context"]

    with pytest.raises(StageOutputUnreadable, match=r"context output \(version 2\).*version"):
        read_stage_output("context", {**context, "version": 2})
    with pytest.raises(StageOutputUnreadable, match="memory_blok"):
        read_stage_output("context", {**context, "memory_blok": "a typo nobody would read"})
    with pytest.raises(StageOutputUnreadable, match="no stage is named 'critique'"):
        read_stage_output("critique", {})


def test_a_run_that_cannot_read_a_finished_stage_fails_with_the_reason_instead_of_retrying(
    instrument_with_bars, roomy_account
):
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    pipeline_run_execute(run.pk, stop_after="analysts")
    context = StageRun.objects.get(run=run, stage="context")
    StageRun.objects.filter(pk=context.pk).update(output={**context.output, "version": 2})

    resumed = pipeline_run_execute(run.pk)

    assert resumed.status == PipelineRun.Status.FAILED
    assert resumed.failure_reason.startswith("cannot resume: the stored context output (version 2)")
    assert not StageRun.objects.filter(run=run, stage="debate").exists()


def test_the_schemas_endpoint_lists_each_stage_with_its_version(db, viewer):
    api = APIClient()
    assert api.get("/api/stages/schemas/").status_code in (401, 403)
    api.force_authenticate(viewer)

    response = api.get(reverse("api-stage-schemas"))

    assert response.status_code == 200
    body = response.json()
    assert list(body) == list(STAGES) == list(STAGE_OUTPUTS)
    for stage, published in body.items():
        assert published["version"] == SCHEMA_VERSION
        assert "version" in published["schema"]["properties"], stage
        assert published["schema"]["additionalProperties"] is False, stage
    assert {"notes", "failures", "quorum", "citations"} <= set(body["analysts"]["schema"]["properties"])


def test_the_openapi_schema_documents_the_schemas_endpoint(db):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)

    operation = schema["paths"]["/api/stages/schemas/"]["get"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/StageSchemas")
    assert {"401", "429"} <= set(operation["responses"])
    assert set(schema["components"]["schemas"]["StageSchemas"]["properties"]) == set(STAGES)


def test_the_run_api_includes_the_typed_outputs(finished_run, viewer):
    api = APIClient()
    api.force_authenticate(viewer)

    body = api.get(reverse("api-run", args=[finished_run.pk])).json()

    assert list(body["outputs"]) == list(STAGES)
    assert {output["version"] for output in body["outputs"].values()} == {SCHEMA_VERSION}
    assert RunOutputs.model_validate(body["outputs"]) == run_outputs(finished_run)
