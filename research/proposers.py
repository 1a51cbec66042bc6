"""Who proposes the next trial: a model (``LLMProposer``), a fixed list (``FixedProposer``) or an
optimiser baseline (``OptunaProposer``).

The loop and its guardrails do not care which: each proposer answers ``propose(context)`` with a
``Proposal`` (or none: it has nothing more to say) and the tokens it spent, and hears back each
trial's out-of-sample fitness through ``tell``. The same budgets, hygiene gate, walk-forward and
promotion gates judge them all, so a session can set "agent versus optimiser" side by side.

- ``LLMProposer`` asks the ``research_proposer`` role (``agents.roles.research_proposer``) through any
  of the agents' model clients: Anthropic, OpenAI, Ollama, or the offline rules model. Its proposal's
  words are kept as the rationale; none of its figures is ever read.
- ``FixedProposer`` replays a list (deterministic tests; a journal's replay).
- ``OptunaProposer`` samples the same space with Optuna's TPE sampler, seeded, so it is reproducible.

Pure: no Django (the model client is handed in).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.domain.llm import ModelChoice, NullRecorder, StageFailed
from agents.roles.research_proposer import propose as ask_research_proposer
from research.signals.base import SignalStrategy

__all__ = [
    "FixedProposer",
    "LLMProposer",
    "OptunaProposer",
    "Proposal",
    "ProposalContext",
    "Proposed",
    "Proposer",
    "describe_strategies",
]


class Proposal(BaseModel):
    """One hypothesis: a known strategy's parameters (``tune``) or a new strategy's source (``code``,
    ``strategy`` then names its class), with the rationale the proposer gave and the proposer's name."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["tune", "code"] = "tune"
    strategy: str = Field(min_length=1, max_length=64)
    params: dict[str, int | float] = Field(default_factory=dict)
    code: str = ""
    rationale: str = ""
    proposer: str = ""


@dataclass(frozen=True)
class ProposalContext:
    """What a proposer may read: the goal, the strategies it may tune, the session's trials so far
    (code's figures; never the holdout's), whether code is allowed, and the promotion gates."""

    goal: str
    strategies: Mapping[str, type[SignalStrategy]]
    trials: Sequence[Mapping[str, Any]] = ()
    allow_code_gen: bool = False
    gates: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Proposed:
    """A proposer's answer: a proposal, or none with ``error`` (the model failed) or without (the
    proposer has run out); and the tokens it spent."""

    proposal: Proposal | None
    tokens: int = 0
    error: str = ""


class Proposer(Protocol):
    name: str
    # Whether the token budget applies: a model's proposals cost tokens, a list's or an optimiser's do not.
    spends_tokens: bool

    def propose(self, context: ProposalContext) -> Proposed: ...

    def tell(self, proposal: Proposal, fitness: float | None) -> None:
        """The trial's out-of-sample fitness (per-period Sharpe), or None when it was not evaluated."""
        ...


def describe_strategies(strategies: Mapping[str, type[SignalStrategy]]) -> dict[str, dict[str, Any]]:
    """The strategies as plain data for a prompt: a one-line summary and each parameter's range."""
    described = {}
    for key, strategy in strategies.items():
        doc = (strategy.__doc__ or "").strip().splitlines()
        described[key] = {
            "summary": doc[0] if doc else key,
            "params": {name: spec.describe() for name, spec in strategy.PARAM_RANGES.items()},
            "allows_short": bool(strategy.ALLOWS_SHORT),
        }
    return described


# --- a fixed list --------------------------------------------------------------------------------


class FixedProposer:
    """Replays ``proposals`` in order (with ``tokens`` spent for each, when replaying a journal), then
    has nothing more."""

    spends_tokens = False

    def __init__(
        self, proposals: Iterable[Proposal | Mapping[str, Any]], *, tokens: Sequence[int] = (), name: str = "fixed"
    ) -> None:
        self.name = name
        self._proposals = [
            proposal if isinstance(proposal, Proposal) else Proposal.model_validate(proposal) for proposal in proposals
        ]
        self._tokens = list(tokens)
        self._next = 0
        self.spends_tokens = any(self._tokens)
        self.told: list[tuple[Proposal, float | None]] = []

    def propose(self, context: ProposalContext) -> Proposed:
        if self._next >= len(self._proposals):
            return Proposed(None)
        index, self._next = self._next, self._next + 1
        proposal = self._proposals[index]
        if not proposal.proposer:
            proposal = proposal.model_copy(update={"proposer": self.name})
        return Proposed(proposal, self._tokens[index] if index < len(self._tokens) else 0)

    def tell(self, proposal: Proposal, fitness: float | None) -> None:
        self.told.append((proposal, fitness))


def sweep_proposals(strategies: Mapping[str, type[SignalStrategy]], limit: int = 500) -> list[Proposal]:
    """A plain grid sweep as a fixed list: every valid point of each strategy's ranges, in order."""
    from research.walkforward import param_grid

    proposals: list[Proposal] = []
    for key, strategy in strategies.items():
        grid = param_grid(strategy, limit)
        for number, params in enumerate(grid, start=1):
            proposals.append(
                Proposal(
                    strategy=key,
                    params=params,
                    rationale=f"Grid sweep: point {number} of {len(grid)} of {key}'s ranges, in order.",
                    proposer="fixed",
                )
            )
    return proposals[:limit]


# --- a model -------------------------------------------------------------------------------------


def _trial_view(trial: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("number", "kind", "strategy", "params", "decision", "reason", "oos_sharpe", "dsr", "trades")
    view = {key: trial.get(key) for key in keys}
    view["max_drawdown"] = trial.get("max_drawdown")
    view["rationale"] = str(trial.get("rationale", ""))[:300]
    return view


class LLMProposer:
    """Asks the ``research_proposer`` role through ``choice`` (any provider). A reply that fails its
    schema twice is a failed proposal with the reason, never a guess."""

    spends_tokens = True

    def __init__(self, choice: ModelChoice, *, symbol: str = "", name: str = "llm") -> None:
        self.choice = choice
        self.symbol = symbol
        self.name = name

    def propose(self, context: ProposalContext) -> Proposed:
        recorder = NullRecorder()
        try:
            output, model = ask_research_proposer(
                self.choice,
                goal=context.goal,
                strategies=describe_strategies(context.strategies),
                trials=[_trial_view(trial) for trial in context.trials],
                allow_code_gen=context.allow_code_gen,
                gates=context.gates,
                recorder=recorder,
                symbol=self.symbol,
            )
        except StageFailed as failure:
            return Proposed(None, _tokens(recorder), error=failure.reason)
        proposal = Proposal(
            kind=output.kind,
            strategy=output.strategy,
            params=dict(output.params),
            code=output.code,
            rationale=output.rationale,
            proposer=f"{self.name}:{model}" if model else self.name,
        )
        return Proposed(proposal, _tokens(recorder))

    def tell(self, proposal: Proposal, fitness: float | None) -> None:
        """The model reads the session's figures afresh with each request; nothing to keep here."""


def _tokens(recorder: NullRecorder) -> int:
    return sum(call.input_tokens + call.output_tokens for call in recorder.calls)


# --- the optimiser baseline ----------------------------------------------------------------------

# How many invalid samples (e.g. a fast average not shorter than the slow one) are refused and
# told as failures before a proposal is made anyway; they cost no evaluation.
MAX_INVALID_SAMPLES = 50
# The fitness told for a sample the strategy refuses to construct with: far below any real
# per-period Sharpe ratio.
INVALID_FITNESS = -10.0


class OptunaProposer:
    """Optuna's TPE sampler over the strategies' ranges, seeded: the same seed and the same fitness
    told back give the same proposals. Told each trial's OOS fitness; a trial not evaluated is told
    as failed."""

    spends_tokens = False

    def __init__(self, seed: int, strategies: Mapping[str, type[SignalStrategy]], *, name: str = "optuna") -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.name = name
        self.seed = seed
        self.strategies = dict(strategies)
        if not self.strategies:
            raise ValueError("the optimiser needs at least one strategy to search")
        self._optuna = optuna
        self.study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
        self._pending: dict[int, Any] = {}
        self._counter = itertools.count(1)

    def _sample(self) -> tuple[Any, str, dict[str, int | float]]:
        trial = self.study.ask()
        keys = list(self.strategies)
        key = trial.suggest_categorical("strategy", keys) if len(keys) > 1 else keys[0]
        params: dict[str, int | float] = {}
        for name, spec in self.strategies[key].PARAM_RANGES.items():
            label = f"{key}.{name}"
            if spec.kind == "int":
                params[name] = trial.suggest_int(label, int(spec.low), int(spec.high), step=int(spec.step))
            else:
                params[name] = trial.suggest_float(label, float(spec.low), float(spec.high), step=float(spec.step))
        return trial, str(key), params

    def _valid_sample(self) -> tuple[Any, str, dict[str, int | float]]:
        for _ in range(MAX_INVALID_SAMPLES):
            trial, key, params = self._sample()
            try:
                self.strategies[key](**params)
            except ValueError:
                # Told as a very poor result, not as a failure: TPE learns nothing from failures and
                # would keep sampling the same invalid corner.
                self.study.tell(trial, INVALID_FITNESS)
                continue
            return trial, key, params
        # Every sample refused: the first strategy's defaults, on a trial that suggests nothing.
        key = next(iter(self.strategies))
        return (
            self.study.ask(),
            key,
            {name: spec.default_value() for name, spec in self.strategies[key].PARAM_RANGES.items()},
        )

    def propose(self, context: ProposalContext) -> Proposed:
        trial, key, params = self._valid_sample()
        number = next(self._counter)
        proposal = Proposal(
            strategy=key,
            params=params,
            rationale=(
                f"Optimiser baseline: TPE sample {number} (seed {self.seed}) over {key}'s ranges, after "
                f"{len(context.trials)} trials; the sampler's choice, not a hypothesis."
            ),
            proposer=self.name,
        )
        self._pending[id(proposal)] = trial
        return Proposed(proposal)

    def tell(self, proposal: Proposal, fitness: float | None) -> None:
        trial = self._pending.pop(id(proposal), None)
        if trial is None:
            return
        if fitness is None or not math.isfinite(fitness):
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, fitness)
