"""What each agent role returns, and what a model call looks like. Pure pydantic; no Django.

A model's reply is parsed into these and validated; anything out of range fails the stage.
Fields a model must not own (prices, calibrated conviction, sizes) are overwritten by code
after validation, never trusted.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from vocabulary.trade import Direction, Outcome, SignalEvolution

Stance = Annotated[float, Field(ge=-1.0, le=1.0)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
AnalystRole = Literal["news", "sentiment", "technical", "fundamental"]
Tier = Literal["default", "deep"]
ShortText = Annotated[str, Field(min_length=1, max_length=1000)]
Point = Annotated[str, Field(min_length=1, max_length=400)]


class _Output(BaseModel):
    # NaN or Infinity in a model's reply is garbage, never a number to act on.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AnalystNote(_Output):
    role: AnalystRole
    symbol: str = Field(min_length=1, max_length=32)
    stance: Stance = Field(description="-1 bearish … +1 bullish")
    confidence: Unit
    summary: ShortText = Field(description="one-sentence conclusion")
    key_points: list[Point] = Field(default_factory=list, max_length=8)
    subscores: dict[str, Stance] = Field(default_factory=dict, description="per-factor scores that fed the stance")
    evidence: list[Point] = Field(default_factory=list, max_length=12, description="the exact values cited")
    expectation_gap: float | None = None
    time_horizon: str = Field(default="", max_length=100)
    model_used: str = Field(default="", max_length=100)
    abstained: bool = False


class BullCase(_Output):
    symbol: str = Field(min_length=1, max_length=32)
    argument: ShortText = Field(description="the case for LONG")
    supporting_points: list[Point] = Field(min_length=1, max_length=8)
    risks: list[Point] = Field(default_factory=list, max_length=8, description="risks acknowledged even as a bull")


class BearCase(_Output):
    symbol: str = Field(min_length=1, max_length=32)
    argument: ShortText = Field(description="the case for SHORT")
    supporting_points: list[Point] = Field(min_length=1, max_length=8)
    risks: list[Point] = Field(default_factory=list, max_length=8, description="upside risks acknowledged as a bear")


class DebateResult(_Output):
    symbol: str = Field(min_length=1, max_length=32)
    winner: Direction
    conviction: Unit = Field(description="after calibration by code")
    proposed_conviction: Unit | None = Field(default=None, description="the model's own number, kept for audit")
    manager_rationale: ShortText
    key_disagreements: list[Point] = Field(default_factory=list, max_length=8)
    falsifiers: list[Point] = Field(default_factory=list, max_length=8)
    rebuttals: list[Point] = Field(default_factory=list, max_length=4, description="the rebutted cases judged")


class TradeThesis(_Output):
    symbol: str = Field(min_length=1, max_length=32)
    direction: Direction
    conviction: Unit
    entry: float = Field(gt=0)
    target: float = Field(gt=0)
    stop: float = Field(gt=0)
    horizon_sessions: int = Field(ge=1, le=250)
    rationale: ShortText
    invalidation_conditions: list[Point] = Field(default_factory=list, max_length=8)
    key_risks: list[Point] = Field(default_factory=list, max_length=8)
    expected_horizon: str = Field(default="", max_length=100)
    levels_source: Literal["model", "atr-anchor"] = Field(
        default="model", description="atr-anchor once code has overwritten the prices"
    )


class ModelRequest(BaseModel):
    """One call to a model. ``evidence`` is the structured data the prompt was built from: real
    providers see only the prompt text; the offline model reasons over the evidence directly."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    role: str
    symbol: str
    system: str
    prompt: str
    output_schema: type[BaseModel]
    tier: Tier = "default"
    evidence: dict[str, Any] = Field(default_factory=dict)


class ModelReply(BaseModel):
    text: str = Field(description="the raw reply: a JSON object as text")
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0


# --- stage 12: the reviewer ------------------------------------------------------------------------


class TradeReviewDraft(_Output):
    """All a model may author about a closed trade. No outcome, P&L or signal field on purpose:
    those are facts, and ``extra="forbid"`` rejects a reply that tries to supply them."""

    symbol: str = Field(min_length=1, max_length=32)
    critique: ShortText = Field(description="what the thesis got right and wrong, against the given outcome")
    lessons: list[Point] = Field(min_length=1, max_length=5, description="short, actionable takeaways")


class TradeReview(_Output):
    """The review as code assembles it: facts copied from code, critique and lessons from the draft."""

    symbol: str = Field(min_length=1, max_length=32)
    direction: Direction
    outcome: Outcome
    realised_pnl: str = Field(min_length=1, max_length=32, description="rupees, as a decimal string")
    signal_evolution: SignalEvolution
    thesis_vs_outcome: dict[str, str] = Field(default_factory=dict)
    critique: ShortText
    lessons: list[Point] = Field(min_length=1, max_length=5)
    memory_text: str = Field(min_length=1, max_length=1500, description="the one line written to memory")
    memory_tags: dict[str, str] = Field(default_factory=dict)
    model_used: str = Field(default="", max_length=200)
