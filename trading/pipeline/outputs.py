"""What each pipeline stage stores, typed and versioned. Pure pydantic; no Django.

A stage's output is written to ``StageRun.output`` as ``model_dump(mode="json")`` and read back
with ``model_validate``, never by string keys: a misspelt key is then an error at the reader, not
a silent ``None`` on a page. Each shape carries ``version``; a row written before versions
existed has no ``version`` key and reads as version 1 (the shape it was written in), and fields
added to version 1 later (the mandate, the citation checks, the trader's warnings, the sizing
note, the playbook) default to empty for those rows. A change that an old row cannot be read into
is a new version: add ``Literal[1, 2]`` and the conversion here, and a reader keeps working on both.

Numbers in these shapes were set by code (calibration, anchoring, sizing); the model's own numbers
are kept beside them for audit (``proposed``, ``proposed_conviction``) and named as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, ValidationError

from agents.domain.citations import CitationCheck
from agents.domain.playbook import PlaybookRule
from agents.roles import AnalystNote, BearCase, BullCase, DebateResult, TradeThesis
from vocabulary.features import FeatureBundle

__all__ = [
    "SCHEMA_VERSION",
    "STAGE_OUTPUTS",
    "AnalystsOutput",
    "ContextOutput",
    "DebateCalibration",
    "DebateOutput",
    "DirectiveSeen",
    "FeaturesOutput",
    "RiskCheckOutput",
    "RiskDecisionOutput",
    "RiskOutput",
    "RunOutputs",
    "RunSnapshot",
    "StageOutput",
    "StageOutputUnreadable",
    "StageSchema",
    "StageSchemas",
    "TraderOutput",
    "read_stage_output",
    "stage_schemas",
]

# The version every stage writes today. One number for all stages keeps "what did this desk
# write" a single answer; a stage whose shape changes moves all of them on together.
SCHEMA_VERSION = 1

# Money is a Decimal in memory and a plain (never scientific) string in JSON, as the risk engine
# writes it: "1234.50", not "1.2345E+3".
PlainDecimal = Annotated[Decimal, PlainSerializer(lambda value: f"{value:f}", return_type=str, when_used="json")]


class StageOutputUnreadable(ValueError):
    """A stored stage output that does not fit its shape: a newer desk's row, or a damaged one."""


class StageOutput(BaseModel):
    """One stage's stored output. ``extra="forbid"``: a key nobody reads is a typo or a newer
    shape, and either must be seen rather than dropped."""

    model_config = ConfigDict(extra="forbid")

    stage: ClassVar[str]
    version: Literal[1] = Field(default=1, description="the shape's version; rows written before versions read as 1")

    def stored(self) -> dict[str, Any]:
        """The JSON written to ``StageRun.output``."""
        return self.model_dump(mode="json")


class FeaturesOutput(StageOutput):
    """Stage 1: the FeatureBundle every later stage reads, exactly as the run saw it."""

    stage: ClassVar[str] = "features"
    bundle: FeatureBundle


class ContextOutput(StageOutput):
    """Stage 2: the memory (and the strategy's mandate) shown to every agent, and the playbook."""

    stage: ClassVar[str] = "context"
    memory_block: str = Field(default="", description="the text every agent read before the evidence")
    memory_ids: list[int] = Field(default_factory=list, description="the memory entries recalled")
    mandate: str = Field(default="", description="the strategy's mandate, as written; empty for a run of no strategy")
    playbook: list[PlaybookRule] = Field(
        default_factory=list,
        description="the active heuristics the agents were shown and their citations are checked against",
    )
    research_signals: list[dict[str, Any]] = Field(
        default_factory=list,
        description="research signals a person attached to the run's strategy: each one's reading on the run's "
        "instrument as of its date (computed by code from stored bars) and the research session's figures",
    )


class AnalystsOutput(StageOutput):
    """Stage 3: the four notes, the failures, the quorum, and code's check of every cited number."""

    stage: ClassVar[str] = "analysts"
    notes: dict[str, AnalystNote] = Field(default_factory=dict, description="by role; a failed analyst has none")
    failures: dict[str, str] = Field(default_factory=dict, description="by role: why that analyst gave no note")
    quorum: bool
    citations: dict[str, CitationCheck] = Field(
        default_factory=dict, description="by role: each indicator value the note cites, checked against the bundle"
    )
    citation_mismatches: int = Field(default=0, ge=0, description="cited values the bundle contradicts, all notes")


class DebateCalibration(BaseModel):
    """How code turned the manager's conviction into the one the desk acts on."""

    model_config = ConfigDict(extra="forbid")

    proposed: float = Field(description="the manager's own number, before calibration")
    conviction: float = Field(description="after the haircut for the panel's disagreement")
    opposing: int = Field(ge=0, description="side-taking analysts whose stance opposed the winner")
    side_taking: int = Field(ge=0, description="analysts that took a side (not abstaining, outside the neutral band)")
    haircut: float = Field(ge=0, le=1)
    cap: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="the most conviction a critique directive in force allows (its max_conviction), if any",
    )
    capped_by: int | None = Field(default=None, description="that directive's critique sequence number")

    @property
    def opposing_share(self) -> float:
        """The share of side-taking analysts that opposed the winner (0 when none took a side)."""
        return self.opposing / self.side_taking if self.side_taking else 0.0


class DebateOutput(StageOutput):
    """Stages 4-5: both cases before and after the rebuttal, and the manager's verdict as calibrated."""

    stage: ClassVar[str] = "debate"
    bull_initial: BullCase
    bear_initial: BearCase
    bull: BullCase = Field(description="the bull case after its rebuttal")
    bear: BearCase = Field(description="the bear case after its rebuttal")
    result: DebateResult = Field(description="conviction is the calibrated one; proposed_conviction the model's")
    calibration: DebateCalibration


class TraderOutput(StageOutput):
    """Stage 6: the trader's reply as given (audit) and the thesis code made of it."""

    stage: ClassVar[str] = "trader"
    proposed: TradeThesis = Field(description="the trader's reply, kept for audit and never acted on")
    thesis: TradeThesis = Field(description="direction and conviction from the debate, prices anchored to ATR")
    warnings: list[str] = Field(default_factory=list, description="what the reply said that code overruled")


class RiskCheckOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    passed: bool
    detail: str


class RiskDecisionOutput(BaseModel):
    """The risk engine's size and checks (``RiskDecision.to_dict()``), amounts in the instrument's currency."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    quantity: int = Field(ge=0)
    risk_amount: PlainDecimal
    notional: PlainDecimal
    stop_distance: PlainDecimal
    sizing: str = Field(default="", description="how the size was fitted to the limits, when it was")
    rejections: list[str] = Field(default_factory=list)
    checks: list[RiskCheckOutput]


class RiskOutput(StageOutput):
    """Stage 7: the decision, or why the run held (a live idea in the instrument already)."""

    stage: ClassVar[str] = "risk"
    decision: RiskDecisionOutput | None = Field(default=None, description="absent when the run held")
    held: str = Field(default="", description="why the run proposes nothing; empty when it was sized")


STAGE_OUTPUTS: dict[str, type[StageOutput]] = {
    cls.stage: cls for cls in (FeaturesOutput, ContextOutput, AnalystsOutput, DebateOutput, TraderOutput, RiskOutput)
}


def read_stage_output(stage: str, stored: Mapping[str, Any]) -> StageOutput:
    """A stored output as its stage's model. A row of no version is version 1 (written before
    versions were stored); a row that fits no known shape raises ``StageOutputUnreadable``."""
    try:
        shape = STAGE_OUTPUTS[stage]
    except KeyError:
        raise StageOutputUnreadable(f"no stage is named {stage!r}; the stages are {', '.join(STAGE_OUTPUTS)}") from None
    try:
        return shape.model_validate(dict(stored))
    except ValidationError as error:
        version = stored.get("version", SCHEMA_VERSION)
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in error.errors()[:5])
        raise StageOutputUnreadable(
            f"the stored {stage} output (version {version}) does not read as this desk's version "
            f"{SCHEMA_VERSION}: {problems}"
        ) from None


class RunOutputs(BaseModel):
    """A run's finished stages, typed: a stage that has not finished is None."""

    model_config = ConfigDict(extra="forbid")

    features: FeaturesOutput | None = None
    context: ContextOutput | None = None
    analysts: AnalystsOutput | None = None
    debate: DebateOutput | None = None
    trader: TraderOutput | None = None
    risk: RiskOutput | None = None

    @classmethod
    def from_stored(cls, stored: Mapping[str, Mapping[str, Any]]) -> RunOutputs:
        """From ``{stage: StageRun.output}`` of the finished stages."""
        outputs = cls()
        for stage, data in stored.items():
            outputs.record(read_stage_output(stage, data))
        return outputs

    def record(self, output: StageOutput) -> None:
        setattr(self, output.stage, output)

    def has(self, stage: str) -> bool:
        return getattr(self, stage, None) is not None

    def stored(self) -> dict[str, dict[str, Any]]:
        """``{stage: output}`` of the finished stages, each in the current version's JSON."""
        return {stage: output.stored() for stage in STAGE_OUTPUTS if (output := getattr(self, stage)) is not None}


class DirectiveSeen(BaseModel):
    """A critique directive in force when the run started (``trading.StrategyDirective``)."""

    model_config = ConfigDict(extra="forbid")

    id: int = Field(description="the StrategyDirective id")
    sequence: int = Field(description="the critique's sequence number for the strategy")
    severity: Literal["advisory", "directive"]
    blocking: bool = Field(default=False, description="whether it held the strategy (required actions incomplete)")


class RunSnapshot(BaseModel):
    """What a run used, written once when it starts executing and never changed: the limits and
    mandate in force then, whatever the account or strategy says later."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    account: str = Field(description="the account the run sized against")
    account_id: int
    currency: str
    strategy: str = Field(default="", description="the strategy that made the run; empty for a run started by hand")
    mandate: str = Field(default="", description="that strategy's mandate, as written when the run started")
    risk_limits: dict[str, str | bool | None] = Field(
        description="RiskLimits as in force for this run (account tightened by the strategy); numbers as strings"
    )
    provider: str
    models: dict[str, str] = Field(description="the model per tier: default and deep")
    directives: list[DirectiveSeen] = Field(
        default_factory=list,
        description=(
            "the critique directives in force when the run started, which its agents were shown: id, sequence, "
            "severity and whether it blocked; empty for rows written before the critique existed"
        ),
    )


def stage_schemas() -> dict[str, dict[str, Any]]:
    """``{stage: {"version": n, "schema": JSON schema}}`` for every stage, as published by the API."""
    return {
        stage: {"version": SCHEMA_VERSION, "schema": shape.model_json_schema(mode="serialization")}
        for stage, shape in STAGE_OUTPUTS.items()
    }


class StageSchema(BaseModel):
    """One stage's published shape."""

    version: int = Field(description="the version this desk writes")
    json_schema: dict[str, Any] = Field(alias="schema", description="JSON Schema of the stored output")


class StageSchemas(BaseModel):
    """The shapes of every stage's stored output, by stage."""

    features: StageSchema
    context: StageSchema
    analysts: StageSchema
    debate: StageSchema
    trader: StageSchema
    risk: StageSchema
