"""The research proposer: reads a research session's goal and its trials so far and proposes the next
hypothesis to test, a parameter set of a known signal strategy or (when allowed) a new one's code.

A proposal is words and parameter values only. Whether it is any good is decided by code afterwards:
the hygiene gate, a walk-forward validation whose out-of-sample aggregate is the only fitness, the
deflated Sharpe and the promotion gates (``research.loop``). The schema has no figure field on
purpose: a model that writes "OOS Sharpe 9.9" in its rationale moves nothing, because every figure
the session keeps is recomputed from the bars.

The trials so far (code's figures next to earlier proposals' rationales, which models wrote) reach
the prompt inside the fence, as data. The offline rules (``proposal_draft``) reason over the same
trials as JSON evidence: they try each strategy the session has not tried yet, then move one grid
step at a time from the best out-of-sample region in the direction the figures say improved, and
explain the step with the figures they read.

Pure: this module knows no research code (``agents`` sits below ``research``); the strategies and
their parameter ranges arrive as plain data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.domain.hygiene import fence, fence_guard
from agents.domain.llm import Budget, ModelChoice, ModelRequest, Recorder, RetryPolicy, Tier
from agents.roles._base import Evidence, RoleOutput, ask, build_request, short

__all__ = ["ROLE", "ResearchProposal", "proposal_draft", "proposal_request", "propose"]

ROLE = "research_proposer"
JOB = (
    "You are the research proposer of a trading desk's research agent. Given a research goal, the signal "
    "strategies available with their parameter ranges, and the session's trials so far with the figures "
    "code computed for them out of sample, propose ONE next hypothesis to test: a strategy and its parameter "
    "values inside the ranges, with a rationale that says why this is worth testing, from the figures. Code "
    "validates every proposal walk-forward and judges it; you never grade a proposal or state its result."
)
MAX_RATIONALE_CHARS = 1500
MAX_CODE_CHARS = 20_000
FENCE_ITEM_CHARS = 1200
HISTORY_LINES = 40
# Words of a goal that point at a strategy family, so the first untried strategy follows the goal.
GOAL_WORDS: Mapping[str, tuple[str, ...]] = {
    "trend": ("sma_crossover", "macd_momentum", "donchian_breakout"),
    "momentum": ("macd_momentum", "sma_crossover"),
    "breakout": ("donchian_breakout",),
    "revers": ("rsi_reversion", "bollinger_reversion"),
    "mean": ("rsi_reversion", "bollinger_reversion"),
    "oversold": ("rsi_reversion",),
    "band": ("bollinger_reversion",),
    "crossover": ("sma_crossover",),
}


class ResearchProposal(RoleOutput):
    """One hypothesis. ``params`` is any mapping the model writes (the hygiene gate, not the schema,
    refuses too many knobs or values out of range, so a refusal has a reason on the record);
    ``rationale`` may be empty in the schema for the same reason: the gate rejects it unevaluated."""

    kind: Literal["tune", "code"] = "tune"
    strategy: str = Field(min_length=1, max_length=64)
    params: dict[str, int | float] = Field(default_factory=dict)
    code: str = Field(default="", max_length=MAX_CODE_CHARS)
    rationale: str = Field(default="", max_length=MAX_RATIONALE_CHARS)


# --- the request ---------------------------------------------------------------------------------


def _range_text(spec: Mapping[str, Any]) -> str:
    return f"{spec.get('kind', 'int')} {spec.get('low')}..{spec.get('high')} step {spec.get('step')}"


def _strategy_lines(strategies: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = []
    for key, info in strategies.items():
        ranges = ", ".join(f"{name}: {_range_text(spec)}" for name, spec in (info.get("params") or {}).items())
        lines.append(f"{key} ({info.get('summary', '')}) — {ranges}")
    return lines


def _trial_line(trial: Mapping[str, Any]) -> str:
    figures = " ".join(
        f"{name}={trial.get(name)}"
        for name in ("oos_sharpe", "dsr", "trades", "max_drawdown")
        if trial.get(name) is not None
    )
    return (
        f"trial {trial.get('number')}: {trial.get('kind')} {trial.get('strategy')} "
        f"{json.dumps(trial.get('params') or {}, sort_keys=True)} → {trial.get('decision')} "
        f"{figures} reason: {trial.get('reason', '')} | rationale: {trial.get('rationale', '')}"
    )


def proposal_request(
    *,
    goal: str,
    strategies: Mapping[str, Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
    allow_code_gen: bool,
    gates: Mapping[str, Any],
    tier: Tier = "default",
    symbol: str = "",
) -> ModelRequest:
    """The proposer's call: the goal and the earlier trials fenced as data (a person and earlier
    models wrote them), the strategies and their ranges, the gates, and the task."""
    history = [_trial_line(trial) for trial in list(trials)[-HISTORY_LINES:]]
    code_line = (
        "You may instead propose kind=code: a new strategy's Python source (a concrete SignalStrategy subclass "
        "with a docstring and PARAM_RANGES of at most 5 parameters); it runs in a sandbox."
        if allow_code_gen
        else "Only kind=tune proposals are allowed in this session."
    )
    sections = [
        "research goal (written by a person):\n" + fence([goal], max_item_chars=FENCE_ITEM_CHARS),
        "strategies and their parameter ranges:\n" + "\n".join(_strategy_lines(strategies)),
        "promotion gates (code applies them): " + json.dumps(dict(gates), sort_keys=True),
        "trials so far (figures computed by code out of sample; per-period Sharpe; drawdown a negative fraction):\n"
        + (fence(history, max_item_chars=FENCE_ITEM_CHARS) if history else "(none yet)"),
        "Task: propose one next trial that the figures above make worth testing and that has not been tried. "
        "Keep to at most 5 parameters, every value inside its range. The rationale is required: the hypothesis "
        f"and the figures that motivate it, quoted as written. {code_line}",
    ]
    evidence = {
        "goal": goal,
        "strategies": {key: dict(info) for key, info in strategies.items()},
        "trials": [dict(trial) for trial in trials],
        "allow_code_gen": allow_code_gen,
        "gates": dict(gates),
    }
    return build_request(ROLE, JOB, symbol, ResearchProposal, sections, evidence, memory_block="", tier=tier)


def _validate(output: BaseModel) -> None:
    fence_guard(output)


def propose(
    choice: ModelChoice,
    *,
    goal: str,
    strategies: Mapping[str, Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
    allow_code_gen: bool,
    gates: Mapping[str, Any],
    recorder: Recorder,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
    symbol: str = "",
) -> tuple[ResearchProposal, str]:
    """The model's proposal and the model that wrote it; ``StageFailed`` when no valid one came
    after one repair. The recorder sees every attempt (its token counts are the session's spend)."""
    request = proposal_request(
        goal=goal, strategies=strategies, trials=trials, allow_code_gen=allow_code_gen, gates=gates, symbol=symbol
    )
    return ask(choice, request, ResearchProposal, recorder=recorder, budget=budget, retry=retry, validate=_validate)


# --- the offline rules ---------------------------------------------------------------------------

Params = dict[str, int | float]


def _grid_value(spec: Mapping[str, Any], value: float) -> int | float:
    low, high, step = float(spec["low"]), float(spec["high"]), float(spec["step"])
    steps = round((min(max(value, low), high) - low) / step) if step > 0 else 0
    snapped = min(low + steps * step, high)
    return round(snapped) if spec.get("kind", "int") == "int" else round(snapped, 10)


def _midpoint(ranges: Mapping[str, Mapping[str, Any]]) -> Params:
    return {name: _grid_value(spec, (float(spec["low"]) + float(spec["high"])) / 2) for name, spec in ranges.items()}


def _key(strategy: str, params: Mapping[str, Any]) -> str:
    return f"{strategy}:{json.dumps({k: float(v) for k, v in params.items()}, sort_keys=True)}"


def _figure(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.4f}"


def _evaluated(trials: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [
        trial
        for trial in trials
        if isinstance(trial.get("oos_sharpe"), int | float) and math.isfinite(float(trial["oos_sharpe"]))
    ]


def _goal_order(goal: str, keys: Sequence[str]) -> list[str]:
    """The strategies in the order the goal's words point at them, then the rest as declared."""
    words = goal.lower()
    preferred = [key for word, named in GOAL_WORDS.items() if word in words for key in named if key in keys]
    return list(dict.fromkeys([*preferred, *keys]))


def _untried_strategy(evidence: Evidence) -> str | None:
    strategies: Mapping[str, Any] = evidence.get("strategies") or {}
    tried = {trial.get("strategy") for trial in evidence.get("trials") or []}
    untried = [key for key in _goal_order(str(evidence.get("goal", "")), list(strategies)) if key not in tried]
    return untried[0] if untried else None


def _leader_text(best: Mapping[str, Any] | None) -> str:
    if best is None:
        return "no trial has an out-of-sample figure yet"
    return (
        f"the leader so far is trial {best.get('number')} ({best.get('strategy')} "
        f"{json.dumps(best.get('params') or {}, sort_keys=True)}) with OOS Sharpe {_figure(best.get('oos_sharpe'))}"
    )


def _explore(key: str, evidence: Evidence, best: Mapping[str, Any] | None) -> ResearchProposal:
    ranges = (evidence["strategies"][key].get("params")) or {}
    params = _midpoint(ranges)
    rationale = (
        f"Hypothesis: {key} may suit the goal; it has no trial in this session yet. Start at the middle of its "
        f"ranges {json.dumps(params, sort_keys=True)} to place it against the others: {_leader_text(best)}."
    )
    return ResearchProposal(kind="tune", strategy=key, params=params, rationale=short(rationale, MAX_RATIONALE_CHARS))


def _direction(best: Mapping[str, Any], others: Sequence[Mapping[str, Any]], name: str) -> tuple[int, str]:
    """Which way along ``name`` the figures point: away from the closest worse trial of the same
    strategy that differs in ``name`` (+1 when none), and the sentence that says so."""
    best_value = float(best["params"][name])
    worse = [
        trial for trial in others if name in (trial.get("params") or {}) and float(trial["params"][name]) != best_value
    ]
    if not worse:
        return 1, ""
    nearest = min(worse, key=lambda trial: (abs(float(trial["params"][name]) - best_value), trial.get("number", 0)))
    sign = 1 if best_value > float(nearest["params"][name]) else -1
    because = (
        f"trial {nearest.get('number')} at {name}={nearest['params'][name]} scored OOS Sharpe "
        f"{_figure(nearest.get('oos_sharpe'))}, below the leader, so keep moving {name} away from it"
    )
    return sign, because


def _neighbours(
    best: Mapping[str, Any], ranges: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
) -> Iterator[tuple[str, Params, str]]:
    """Grid neighbours of the leader's parameters, one parameter moved one or two steps, the step the
    figures favour first."""
    params: Mapping[str, Any] = best.get("params") or {}
    for distance in (1, 2):
        for name, spec in ranges.items():
            if name not in params:
                continue
            sign, because = _direction(best, others, name)
            for direction in (sign, -sign):
                moved = _grid_value(spec, float(params[name]) + direction * distance * float(spec["step"]))
                if float(moved) != float(params[name]):
                    yield name, {**params, name: moved}, because if direction == sign else ""


def _exploit(evidence: Evidence, evaluated: Sequence[Mapping[str, Any]]) -> ResearchProposal | None:
    strategies: Mapping[str, Any] = evidence.get("strategies") or {}
    tried = {_key(str(trial.get("strategy")), trial.get("params") or {}) for trial in evidence.get("trials") or []}
    ranked = sorted(evaluated, key=lambda trial: (-float(trial["oos_sharpe"]), trial.get("number", 0)))
    for leader in ranked:
        key = str(leader.get("strategy"))
        if key not in strategies:
            continue
        others = [trial for trial in ranked if trial is not leader and trial.get("strategy") == key]
        for name, params, because in _neighbours(leader, strategies[key].get("params") or {}, others):
            if _key(key, params) in tried:
                continue
            rationale = (
                f"Hypothesis: the region around trial {leader.get('number')} ({key} "
                f"{json.dumps(leader.get('params') or {}, sort_keys=True)}; OOS Sharpe "
                f"{_figure(leader.get('oos_sharpe'))}, DSR {_figure(leader.get('dsr'))}, {leader.get('trades')} "
                f"trades, drawdown {_figure(leader.get('max_drawdown'))}) holds a better out-of-sample edge. "
                f"Move {name} from {leader['params'][name]} to {params[name]}"
                + (f": {because}." if because else ", the neighbour not yet tested.")
            )
            return ResearchProposal(
                kind="tune", strategy=key, params=params, rationale=short(rationale, MAX_RATIONALE_CHARS)
            )
    return None


def _sweep(evidence: Evidence) -> ResearchProposal:
    """Every neighbour of every evaluated trial is tried: the first untried point of the first
    strategy's grid, in order (a plain sweep is the honest fallback)."""
    strategies: Mapping[str, Any] = evidence.get("strategies") or {}
    tried = {_key(str(trial.get("strategy")), trial.get("params") or {}) for trial in evidence.get("trials") or []}
    for key in _goal_order(str(evidence.get("goal", "")), list(strategies)):
        ranges = strategies[key].get("params") or {}
        for params in _grid(ranges):
            if _key(key, params) not in tried:
                rationale = (
                    f"Hypothesis: an untested corner of {key}'s grid; every neighbour of the evaluated trials has "
                    f"been tried, so sweep on to {json.dumps(params, sort_keys=True)}."
                )
                return ResearchProposal(kind="tune", strategy=key, params=params, rationale=rationale)
    key = next(iter(strategies))
    params = _midpoint(strategies[key].get("params") or {})
    return ResearchProposal(
        kind="tune", strategy=key, params=params, rationale="Every grid point has been tried; repeat the midpoint."
    )


def _grid(ranges: Mapping[str, Any], limit: int = 5000) -> Iterator[Params]:
    points: list[Params] = [{}]
    for name, spec in ranges.items():
        low, high, step = float(spec["low"]), float(spec["high"]), float(spec["step"])
        count = math.floor((high - low) / step + 1e-9) + 1 if step > 0 else 1
        values = [_grid_value(spec, low + index * step) for index in range(count)]
        points = [{**point, name: value} for point in points for value in values][:limit]
    yield from points


# The new family the offline rules write when code generation is allowed and tuning has stalled:
# time-series momentum, which none of the built-ins is (they cross averages, bands or channels).
MOMENTUM_CODE = '''import numpy as np
from research.signals.base import ParamRange, SignalStrategy


class TimeSeriesMomentum(SignalStrategy):
    """Time-series momentum: long while the close is above its level ``lookback`` sessions ago by
    more than ``threshold`` per cent, flat otherwise."""

    key = "ts_momentum"
    PARAM_RANGES = {
        "lookback": ParamRange(20, 120, 20),
        "threshold": ParamRange(0.0, 4.0, 2.0, "float"),
    }

    def positions(self, bars):
        lookback = int(self.params["lookback"])
        close = bars.close
        change = np.zeros(len(close))
        if len(close) > lookback:
            change[lookback:] = close[lookback:] / close[:-lookback] - 1.0
        return (change * 100.0 > self.params["threshold"]).astype(np.int8)
'''
STALL_ROUNDS = 3


def _stalled(trials: Sequence[Mapping[str, Any]]) -> int:
    """How many trials in a row, at the end, kept nothing."""
    count = 0
    for trial in reversed(trials):
        if trial.get("decision") == "kept":
            break
        count += 1
    return count


def _new_family(evidence: Evidence, best: Mapping[str, Any] | None) -> ResearchProposal | None:
    """With code allowed, tuning stalled for ``STALL_ROUNDS`` trials and no code tried yet: a new family."""
    trials = evidence.get("trials") or []
    if not evidence.get("allow_code_gen") or any(trial.get("kind") == "code" for trial in trials):
        return None
    stalled = _stalled(trials)
    if stalled < STALL_ROUNDS:
        return None
    rationale = (
        f"Hypothesis: the built-in families have been tuned without an out-of-sample improvement for {stalled} "
        f"trials ({_leader_text(best)}). Time-series momentum, a family none of them covers, may capture the "
        "persistence of a large cap's multi-week moves; its lookback and threshold are optimised per fold."
    )
    return ResearchProposal(kind="code", strategy="TimeSeriesMomentum", code=MOMENTUM_CODE, rationale=rationale)


def proposal_draft(symbol: str, evidence: Evidence) -> ResearchProposal:
    """The offline proposer: an untried strategy first (in the order the goal points at); a new
    family in code when that is allowed and tuning has stalled; then one grid step from the best
    out-of-sample trial toward where its figures improved; then a sweep."""
    evaluated = _evaluated(evidence.get("trials") or [])
    best = max(evaluated, key=lambda trial: float(trial["oos_sharpe"]), default=None)
    untried = _untried_strategy(evidence)
    if untried is not None:
        return _explore(untried, evidence, best)
    return _new_family(evidence, best) or _exploit(evidence, evaluated) or _sweep(evidence)
