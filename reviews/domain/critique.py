"""When a strategy run is critiqued: the trigger's draw, and its adaptive probability. Pure; no Django.

A critique is an independent look at a strategy's trajectory, so it must not be predictable by
the strategy (a fixed schedule is one more pattern a desk learns to pass) and must not be
arbitrary to whoever audits it afterwards. Both at once: a random draw from a source seeded by
(desk seed, strategy id, run count), so the same run of the same strategy draws the same number
in a test, a history replay or a rerun, and a different one on the next run.

The first ``min_runs`` runs are exempt: there is no trajectory to judge yet. After that a run fires
with ``probability`` (10% by default). The adaptive mode moves that probability with what the
trajectory shows (a volatile market, findings left unresolved, a drawdown getting deeper raise it;
clean reviews lower it), always between a floor and a ceiling, and says why in words.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = [
    "AdaptiveSettings",
    "TrajectorySignals",
    "TriggerDecision",
    "adaptive_probability",
    "decide",
    "draw_source",
    "should_run_critique",
]

# How much each sign moves the probability (a multiplier on it). A volatile market or a deepening
# drawdown each make a review half as likely again; findings left open double it, since a review
# is how they get closed; each clean review in a row (up to three) takes a quarter off.
VOLATILE_FACTOR = 1.5
UNRESOLVED_FACTOR = 2.0
DRAWDOWN_FACTOR = 1.5
CLEAN_FACTOR = 0.75
MAX_CLEAN_STREAK = 3
# Recent volatility at least this multiple of the longer-run volatility is "volatile".
VOLATILE_RATIO = 1.5


def draw_source(seed: int, strategy_id: int, run_count: int) -> random.Random:
    """The random source of one run's draw. Seeded with a string: Python hashes it with SHA-512, so
    the draw is the same in every process (no ``PYTHONHASHSEED`` dependence)."""
    return random.Random(f"critique:{seed}:{strategy_id}:{run_count}")


def should_run_critique(run_count: int, rng: random.Random, probability: float = 0.10, min_runs: int = 10) -> bool:
    """Whether the strategy's ``run_count``-th run (counted from 1, this run included) is critiqued.

    Runs 1..``min_runs`` never are. After that one uniform draw from ``rng`` below ``probability``
    fires; the exempt runs draw nothing, so exemption does not shift any later run's draw."""
    if run_count <= min_runs:
        return False
    return rng.random() < probability


@dataclass(frozen=True)
class TrajectorySignals:
    """What the trajectory shows, measured by code from stored rows (``reviews.critique.trigger``).

    ``volatility_ratio``: recent realised volatility of the universe over its longer-run one (None
    without enough bars). ``unresolved``: required actions of earlier critiques still open.
    ``drawdown_now`` and ``drawdown_before``: the strategy's drawdown from its peak realised profit,
    as a share of capital, now and at its last critique. ``clean_streak``: its latest critiques in a
    row that found nothing."""

    volatility_ratio: float | None = None
    unresolved: int = 0
    drawdown_now: float = 0.0
    drawdown_before: float = 0.0
    clean_streak: int = 0

    @property
    def volatile(self) -> bool:
        return self.volatility_ratio is not None and self.volatility_ratio >= VOLATILE_RATIO

    @property
    def drawdown_deepening(self) -> bool:
        return self.drawdown_now > self.drawdown_before and self.drawdown_now > 0


@dataclass(frozen=True)
class AdaptiveSettings:
    """``settings.CRITIQUE``, typed for this module."""

    probability: float = 0.10
    min_runs: int = 10
    adaptive: bool = False
    floor: float = 0.05
    ceiling: float = 0.50
    seed: int = 0

    @classmethod
    def from_mapping(cls, values: dict[str, object]) -> AdaptiveSettings:
        def number(key: str, default: float) -> float:
            value = values.get(key, default)
            return float(value) if isinstance(value, int | float | str) else default

        return cls(
            probability=number("PROBABILITY", 0.10),
            min_runs=int(number("MIN_RUNS", 10)),
            adaptive=bool(values.get("ADAPTIVE", False)),
            floor=number("PROBABILITY_FLOOR", 0.05),
            ceiling=number("PROBABILITY_CEILING", 0.50),
            seed=int(number("SEED", 0)),
        )


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def adaptive_probability(
    base: float, signals: TrajectorySignals, *, floor: float, ceiling: float
) -> tuple[float, list[str]]:
    """The probability moved by the trajectory's signs, clamped to [floor, ceiling], and the reasons.

    A ceiling below the floor is read as the floor (the narrower setting wins): the result is
    always inside both."""
    probability, reasons = base, [f"base {_pct(base)}"]
    if signals.volatile:
        probability *= VOLATILE_FACTOR
        reasons.append(
            f"volatile: recent volatility {signals.volatility_ratio:.2f}× the longer-run (×{VOLATILE_FACTOR:g})"
        )
    if signals.unresolved > 0:
        probability *= UNRESOLVED_FACTOR
        reasons.append(
            f"{signals.unresolved} required action(s) of earlier critiques still open (×{UNRESOLVED_FACTOR:g})"
        )
    if signals.drawdown_deepening:
        probability *= DRAWDOWN_FACTOR
        reasons.append(
            f"drawdown deepening: {_pct(signals.drawdown_now)} of capital, from {_pct(signals.drawdown_before)} "
            f"at the last critique (×{DRAWDOWN_FACTOR:g})"
        )
    streak = min(signals.clean_streak, MAX_CLEAN_STREAK)
    if streak:
        factor = CLEAN_FACTOR**streak
        probability *= factor
        reasons.append(f"{signals.clean_streak} clean review(s) in a row (×{factor:.3g})")
    low, high = floor, max(floor, ceiling)
    clamped = min(max(probability, low), high)
    if clamped != probability:
        side = "floor" if clamped == low else "ceiling"
        reasons.append(f"clamped to the {side} {_pct(clamped)}")
    return clamped, reasons


@dataclass(frozen=True)
class TriggerDecision:
    """Whether a run fired, and everything needed to show why: the mode, the probability in force,
    the draw (None when exempt or switched off) and the reasons, in words."""

    fired: bool
    exempt: bool
    probability: float
    draw: float | None
    run_count: int
    adaptive: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """One sentence for the strategy run's ``critique_reason``."""
        if self.exempt:
            return self.reasons[0] if self.reasons else f"run {self.run_count}: exempt"
        verdict = "fired" if self.fired else "not drawn"
        mode = "adaptive" if self.adaptive else "fixed"
        because = f"; {'; '.join(self.reasons)}" if self.adaptive and self.reasons else ""
        return (
            f"run {self.run_count}: draw {self.draw:.4f} {'<' if self.fired else '≥'} {mode} probability "
            f"{_pct(self.probability)}: {verdict}{because}"
        )

    def as_json(self) -> dict[str, object]:
        """``Critique.trigger``: the mode, probability, draw and reasons."""
        return {
            "mode": "adaptive" if self.adaptive else "fixed",
            "fired": self.fired,
            "exempt": self.exempt,
            "probability": round(self.probability, 6),
            "draw": None if self.draw is None else round(self.draw, 6),
            "run_count": self.run_count,
            "reasons": list(self.reasons),
        }


def decide(
    run_count: int, *, strategy_id: int, config: AdaptiveSettings, signals: TrajectorySignals | None = None
) -> TriggerDecision:
    """The trigger for one run: exempt, or one seeded draw against the probability in force."""
    if run_count <= config.min_runs:
        return TriggerDecision(
            fired=False,
            exempt=True,
            probability=0.0,
            draw=None,
            run_count=run_count,
            adaptive=config.adaptive,
            reasons=[f"run {run_count} of the first {config.min_runs}: exempt (no trajectory to judge yet)"],
        )
    if config.adaptive:
        probability, reasons = adaptive_probability(
            config.probability, signals or TrajectorySignals(), floor=config.floor, ceiling=config.ceiling
        )
    else:
        probability, reasons = config.probability, [f"fixed {_pct(config.probability)}"]
    # The same draw should_run_critique takes: one uniform number from the run's own source.
    draw = draw_source(config.seed, strategy_id, run_count).random()
    return TriggerDecision(
        fired=draw < probability,
        exempt=False,
        probability=probability,
        draw=draw,
        run_count=run_count,
        adaptive=config.adaptive,
        reasons=reasons,
    )
