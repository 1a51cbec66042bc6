"""The research loop: goal → propose → hygiene gate → walk-forward → keep or discard, until a budget
or dryness stops it; then the probability of backtest overfitting, the holdout scored once on the
shortlist, and a config per candidate for a person.

Two steps with a wall between them. ``run_search`` receives only the ``SearchData`` (bars before the
holdout) and a proposer, and returns every trial it judged. ``finish`` receives the search's result
and the ``Holdout`` and is the one place the holdout is read (``Holdout.score_once``). Nothing the
search returns depends on the holdout; the holdout test proves it.

What code decides, never a proposer:
- a proposal without a rationale, with more than five parameters or values out of range, or code
  that breaks the contract, is rejected unevaluated (``research.sandbox``);
- fitness is the walk-forward's out-of-sample aggregate, nothing in-sample;
- a trial is promotable when its deflated Sharpe reaches ``min_dsr``, it made ``min_trades`` trades
  out of sample and its OOS drawdown is no worse than ``max_drawdown``; it is kept only if it is
  promotable and beats the incumbent's OOS Sharpe with a drawdown no worse than the incumbent's by
  more than ``drawdown_guard``;
- ``n_trials`` (for the deflated Sharpe) counts every evaluated trial of the session, so each new one
  must clear a higher bar;
- the session stops at the trial budget, the token budget (for a proposer that spends tokens), after
  ``dry_rounds`` rounds in a row with no new incumbent, when the proposer has nothing more, or when
  cancelled.

Pure where it can be: persistence and progress are callbacks (``on_event`` for the journal,
``on_trial`` for rows and progress, ``should_stop`` for cancellation). No Django.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from research.backtest import BacktestConfig
from research.holdout import Holdout, HoldoutEntry, SearchData
from research.metrics import probability_of_backtest_overfitting
from research.proposers import Proposal, ProposalContext, Proposer
from research.sandbox import SandboxRefused, hygiene_reasons, load_strategy_from_code
from research.signals.base import SignalStrategy
from research.walkforward import WalkForwardResult, WalkForwardSettings, evaluate_config, param_grid, walk_forward

__all__ = [
    "Budgets",
    "Gates",
    "SearchResult",
    "SearchSpec",
    "SessionOutcome",
    "TrialRecord",
    "finish",
    "run_search",
]

REJECTED, KEPT, DISCARDED, FAILED = "rejected", "kept", "discarded", "failed"
CODE_GRID_LIMIT = 400


@dataclass(frozen=True)
class Gates:
    min_dsr: float = 0.95
    min_trades: int = 10
    max_drawdown: float = 0.25  # a positive fraction: an OOS drawdown of -0.30 fails a 0.25 gate
    drawdown_guard: float = 0.05

    @classmethod
    def from_mapping(cls, research: Mapping[str, Any]) -> Gates:
        return cls(
            min_dsr=float(research.get("MIN_DSR", 0.95)),
            min_trades=int(research.get("MIN_TRADES", 10)),
            max_drawdown=float(research.get("MAX_DRAWDOWN", 0.25)),
            drawdown_guard=float(research.get("DRAWDOWN_GUARD", 0.05)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_dsr": self.min_dsr,
            "min_trades": self.min_trades,
            "max_drawdown": self.max_drawdown,
            "drawdown_guard": self.drawdown_guard,
        }


@dataclass(frozen=True)
class Budgets:
    max_trials: int = 50
    max_tokens: int = 200_000
    dry_rounds: int = 8

    def to_dict(self) -> dict[str, Any]:
        return {"max_trials": self.max_trials, "max_tokens": self.max_tokens, "dry_rounds": self.dry_rounds}


@dataclass(frozen=True)
class SearchSpec:
    goal: str
    strategies: Mapping[str, type[SignalStrategy]]
    walkforward: WalkForwardSettings
    backtest: BacktestConfig
    gates: Gates = field(default_factory=Gates)
    budgets: Budgets = field(default_factory=Budgets)
    allow_code_gen: bool = False
    shortlist_size: int = 5
    pbo_splits: int = 8


@dataclass
class TrialRecord:
    """One round: the proposal, code's decision and why, and the figures the decision was made on."""

    number: int
    proposal: Proposal | None
    proposer: str
    tokens: int
    decision: str
    reason: str
    n_trials_at_eval: int = 0
    promotable: bool = False
    result: WalkForwardResult | None = None
    strategy_class: type[SignalStrategy] | None = field(default=None, repr=False)

    @property
    def oos_sharpe(self) -> float | None:
        return None if self.result is None else self.result.oos_sharpe

    @property
    def dsr(self) -> float | None:
        return None if self.result is None else self.result.dsr

    @property
    def trades(self) -> int | None:
        return None if self.result is None else self.result.trades

    @property
    def max_drawdown(self) -> float | None:
        return None if self.result is None else self.result.max_drawdown

    def summary(self) -> dict[str, Any]:
        """The trial as plain data: what proposers read, the journal stores and the replay compares."""
        proposal = self.proposal
        return {
            "number": self.number,
            "proposer": self.proposer,
            "kind": proposal.kind if proposal else "tune",
            "strategy": proposal.strategy if proposal else "",
            "params": dict(proposal.params) if proposal else {},
            "rationale": proposal.rationale if proposal else "",
            "decision": self.decision,
            "reason": self.reason,
            "oos_sharpe": self.oos_sharpe,
            "dsr": self.dsr,
            "trades": self.trades,
            "max_drawdown": self.max_drawdown,
            "n_trials_at_eval": self.n_trials_at_eval,
            "promotable": self.promotable,
            "tokens": self.tokens,
        }


@dataclass
class SearchResult:
    trials: list[TrialRecord]
    stop_reason: str
    n_trials: int
    tokens_used: int
    incumbent: int | None = None

    def trial(self, number: int) -> TrialRecord:
        return next(record for record in self.trials if record.number == number)


EventSink = Callable[[dict[str, Any]], None]
TrialSink = Callable[[TrialRecord, "SearchState"], None]


@dataclass
class SearchState:
    trials: list[TrialRecord] = field(default_factory=list)
    n_trials: int = 0
    tokens_used: int = 0
    dry: int = 0
    incumbent: TrialRecord | None = None

    def sharpes(self) -> list[float]:
        return [record.oos_sharpe for record in self.trials if record.oos_sharpe is not None]


# --- one round -----------------------------------------------------------------------------------


def _refusal(proposal: Proposal, spec: SearchSpec) -> str:
    """Why a proposal is rejected unevaluated, or "" when it passes the gate."""
    if proposal.kind == "code" and not spec.allow_code_gen:
        return "code proposals need --allow-code-gen"
    return "; ".join(dict.fromkeys(hygiene_reasons(proposal, strategies=spec.strategies)))


def _strategy_class(proposal: Proposal, spec: SearchSpec) -> type[SignalStrategy]:
    if proposal.kind == "code":
        return load_strategy_from_code(proposal.code)
    return spec.strategies[proposal.strategy]


def _evaluate(
    proposal: Proposal, strategy: type[SignalStrategy], spec: SearchSpec, data: SearchData, state: SearchState
) -> WalkForwardResult:
    options = {"n_trials_offset": state.n_trials, "prior_sharpes": state.sharpes()}
    if proposal.kind == "code":
        grid = param_grid(strategy, CODE_GRID_LIMIT)
        return walk_forward(strategy, grid, data.bars, spec.walkforward, spec.backtest, **options)  # type: ignore[arg-type]
    return evaluate_config(strategy, proposal.params, data.bars, spec.walkforward, spec.backtest, **options)  # type: ignore[arg-type]


def _gate_failures(result: WalkForwardResult, gates: Gates) -> list[str]:
    failures = []
    if not result.dsr >= gates.min_dsr:
        failures.append(f"DSR {result.dsr:.3f} is below {gates.min_dsr}")
    if result.trades < gates.min_trades:
        failures.append(f"{result.trades} OOS trades are fewer than {gates.min_trades}")
    if result.max_drawdown < -gates.max_drawdown:
        failures.append(f"OOS drawdown {result.max_drawdown:.3f} is worse than -{gates.max_drawdown}")
    return failures


def _against_incumbent(result: WalkForwardResult, incumbent: TrialRecord | None, gates: Gates) -> str:
    """Why a promotable trial does not replace the incumbent, or "" when it does."""
    if incumbent is None or incumbent.result is None:
        return ""
    best = incumbent.result
    if not result.oos_sharpe > best.oos_sharpe:
        return (
            f"OOS Sharpe {result.oos_sharpe:.4f} does not beat the incumbent's (trial {incumbent.number}, "
            f"{best.oos_sharpe:.4f})"
        )
    if result.max_drawdown < best.max_drawdown - gates.drawdown_guard:
        return (
            f"OOS drawdown {result.max_drawdown:.3f} is worse than the incumbent's {best.max_drawdown:.3f} by more "
            f"than {gates.drawdown_guard}"
        )
    return ""


def _judged(record: TrialRecord, result: WalkForwardResult, state: SearchState, gates: Gates) -> TrialRecord:
    record.result = result
    record.n_trials_at_eval = result.n_trials
    failures = _gate_failures(result, gates)
    record.promotable = not failures
    figures = f"OOS Sharpe {result.oos_sharpe:.4f}, DSR {result.dsr:.3f} at n_trials={result.n_trials}"
    if failures:
        record.decision, record.reason = DISCARDED, f"not promotable: {'; '.join(failures)} ({figures})"
        return record
    losing = _against_incumbent(result, state.incumbent, gates)
    if losing:
        record.decision, record.reason = DISCARDED, f"promotable but {losing}"
        return record
    previous = f"replaces trial {state.incumbent.number}" if state.incumbent else "the first incumbent"
    record.decision, record.reason = KEPT, f"promotable and {previous} ({figures})"
    return record


def _round(
    proposed_proposal: Proposal, record: TrialRecord, spec: SearchSpec, data: SearchData, state: SearchState
) -> TrialRecord:
    refusal = _refusal(proposed_proposal, spec)
    if refusal:
        record.decision, record.reason = REJECTED, refusal
        return record
    try:
        strategy = _strategy_class(proposed_proposal, spec)
    except SandboxRefused as refused:
        record.decision, record.reason = REJECTED, f"the sandbox refused the code: {refused}"
        return record
    record.strategy_class = strategy
    try:
        result = _evaluate(proposed_proposal, strategy, spec, data, state)
    except (ValueError, SandboxRefused) as error:
        record.decision, record.reason = FAILED, f"evaluation failed: {error}"
        return record
    state.n_trials = result.n_trials
    return _judged(record, result, state, spec.gates)


def _stop_reason(spec: SearchSpec, state: SearchState, proposer: Proposer, should_stop: Callable[[], bool]) -> str:
    budgets = spec.budgets
    if should_stop():
        return "cancelled"
    if len(state.trials) >= budgets.max_trials:
        return f"trial budget: {budgets.max_trials} trials"
    if proposer.spends_tokens and state.tokens_used >= budgets.max_tokens:
        return f"token budget: {state.tokens_used} of {budgets.max_tokens} tokens used"
    if state.dry >= budgets.dry_rounds:
        return f"dry: {state.dry} rounds in a row without an OOS improvement"
    return ""


def _context(spec: SearchSpec, state: SearchState) -> ProposalContext:
    return ProposalContext(
        goal=spec.goal,
        strategies=spec.strategies,
        trials=[record.summary() for record in state.trials],
        allow_code_gen=spec.allow_code_gen,
        gates=spec.gates.to_dict(),
    )


def _noop(*args: Any) -> None:
    return None


def run_search(
    spec: SearchSpec,
    data: SearchData,
    proposer: Proposer,
    *,
    on_event: EventSink = _noop,
    on_trial: TrialSink = _noop,
    should_stop: Callable[[], bool] = lambda: False,
) -> SearchResult:
    """Propose and judge until a stop; every proposal and trial goes to ``on_event`` (the journal)
    and each judged trial to ``on_trial`` (rows, progress) as soon as it is decided."""
    state = SearchState()
    while True:
        stop = _stop_reason(spec, state, proposer, should_stop)
        if stop:
            break
        proposed = proposer.propose(_context(spec, state))
        state.tokens_used += proposed.tokens
        if proposed.proposal is None and not proposed.error:
            stop = "the proposer has nothing more to propose"
            break
        record = TrialRecord(len(state.trials) + 1, proposed.proposal, proposer.name, proposed.tokens, FAILED, "")
        if proposed.proposal is not None:
            record.proposer = proposed.proposal.proposer or proposer.name
        on_event(
            {
                "event": "proposal",
                "number": record.number,
                "proposal": proposed.proposal.model_dump(mode="json") if proposed.proposal else None,
                "tokens": proposed.tokens,
                "error": proposed.error,
            }
        )
        if proposed.proposal is None:
            record.reason = f"the proposer failed: {proposed.error}"
        else:
            _round(proposed.proposal, record, spec, data, state)
            proposer.tell(proposed.proposal, record.oos_sharpe)
        state.trials.append(record)
        if record.decision == KEPT:
            state.incumbent, state.dry = record, 0
        else:
            state.dry += 1
        on_event({"event": "trial", **record.summary(), "folds": record.result.folds if record.result else []})
        on_trial(record, state)
    incumbent = state.incumbent.number if state.incumbent else None
    on_event({"event": "stop", "reason": stop, "n_trials": state.n_trials, "tokens_used": state.tokens_used})
    return SearchResult(state.trials, stop, state.n_trials, state.tokens_used, incumbent)


# --- after the search ----------------------------------------------------------------------------


@dataclass
class SessionOutcome:
    pbo: float | None
    shortlist: list[TrialRecord]
    holdout: list[dict[str, Any]]
    candidates: list[dict[str, Any]]


def trial_matrix(trials: Sequence[TrialRecord]) -> np.ndarray:
    """Periods × configurations: each evaluated trial's OOS returns as a column."""
    columns = [record.result.oos_returns for record in trials if record.result is not None]
    if not columns:
        return np.zeros((0, 0))
    return np.column_stack(columns)


def session_pbo(trials: Sequence[TrialRecord], n_splits: int) -> float | None:
    """The probability of backtest overfitting over the session's trial matrix (None below two
    configurations or when the matrix is too short to split)."""
    matrix = trial_matrix(trials)
    if matrix.ndim != 2 or matrix.shape[1] < 2:
        return None
    try:
        value = float(probability_of_backtest_overfitting(matrix, n_splits))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def shortlist(trials: Sequence[TrialRecord], size: int) -> list[TrialRecord]:
    """The kept trials, best OOS Sharpe first (the earlier on a tie), at most ``size``."""
    kept = [record for record in trials if record.decision == KEPT and record.result is not None]
    return sorted(kept, key=lambda record: (-(record.oos_sharpe or 0.0), record.number))[:size]


def final_params(record: TrialRecord) -> dict[str, Any]:
    """The parameters a candidate runs with: a tune proposal's own; for code, optimised per fold,
    those the latest fold chose (the most recent in-sample window)."""
    assert record.proposal is not None
    if record.proposal.kind == "code" and record.result is not None and record.result.chosen:
        return dict(record.result.chosen[-1])
    return dict(record.proposal.params)


def candidate_config(
    rank: int,
    record: TrialRecord,
    holdout_metrics: Mapping[str, Any],
    *,
    pbo: float | None,
    provenance: Mapping[str, Any],
) -> dict[str, Any]:
    """A candidate's config file: what to run and where it came from. A proposal for a person."""
    proposal = record.proposal
    assert proposal is not None and record.result is not None
    config: dict[str, Any] = {
        "rank": rank,
        "kind": proposal.kind,
        "strategy": proposal.strategy,
        "params": final_params(record),
        "provenance": {
            **provenance,
            "trial": record.number,
            "proposer": record.proposer,
            "rationale": proposal.rationale,
        },
        "oos_metrics": record.result.oos_metrics,
        "holdout_metrics": dict(holdout_metrics),
        "dsr": record.result.dsr,
        "n_trials_at_eval": record.n_trials_at_eval,
        "pbo": pbo,
        "folds": [
            {key: fold[key] for key in ("fold", "params", "in_sample", "out_of_sample")} for fold in record.result.folds
        ],
        "note": "A research candidate for a person to review. Nothing is promoted or traded by code.",
    }
    if proposal.kind == "code":
        config["code"] = proposal.code
    return config


def finish(
    spec: SearchSpec,
    search: SearchResult,
    holdout: Holdout,
    *,
    provenance: Mapping[str, Any] | None = None,
    on_event: EventSink = _noop,
) -> SessionOutcome:
    """PBO over the trial matrix, the shortlist scored once on the holdout, the candidates' configs."""
    pbo = session_pbo(search.trials, spec.pbo_splits)
    chosen = shortlist(search.trials, spec.shortlist_size)
    entries = [
        HoldoutEntry(record.number, record.strategy_class, final_params(record))
        for record in chosen
        if record.strategy_class is not None and record.proposal is not None
    ]
    scores = holdout.score_once(entries)
    on_event({"event": "holdout", "pbo": pbo, "shortlist": [record.number for record in chosen], "scores": scores})
    candidates = [
        candidate_config(rank, record, score, pbo=pbo, provenance=provenance or {})
        for rank, (record, score) in enumerate(zip(chosen, scores, strict=True), start=1)
    ]
    return SessionOutcome(pbo, chosen, scores, candidates)
