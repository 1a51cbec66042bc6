"""What changed between two retrospectives of the same horizon: each money figure of the
attribution, the actions taken, the accuracy rates and the heuristics whose recommendation moved.
Pure; no Django.

Both sides are the reports' hard parts as stored (``RetrospectiveReport.hard``): money as decimal
strings, rates as decimal strings from 0 to 1 or null, counts as whole numbers. A section or a
figure one side lacks (a report written before the section existed, a heuristic first cited in
the later period) reads as ``None`` on that side and its change is ``None``: the diff says "not
there" rather than inventing a zero. A value that is there but is not a number of its kind (an
amount that does not parse, a rate above 1, a negative count) is refused with the field named,
so a damaged report cannot pass for a change. Two reports in different currencies are refused:
their money cannot be subtracted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from reviews.domain.attribution import COST_LABELS

__all__ = [
    "ACTION_LABELS",
    "MONEY_LABELS",
    "CountChange",
    "DiffInputError",
    "HardDiff",
    "MoneyChange",
    "RateChange",
    "RecommendationChange",
    "diff_hard_parts",
]

# The attribution's figures in the waterfall's reading order; the cost lines come after slippage.
MONEY_LABELS: dict[str, str] = {
    "gains": "Trading gains",
    "losses": "Trading losses",
    "slippage": "Slippage",
    "costs_total": "Charges (all lines)",
    "dividends": "Dividends",
    "manual": "Closed by hand",
    "unrealised": "Unrealised change",
    "inference": "Inference",
    "net": "Net result",
    "operational_cost": "Operational cost",
}
ACTION_LABELS: dict[str, str] = {
    "entries": "Entries",
    "exits": "Exits",
    "holds": "Holds",
    "rejected": "Rejected",
}
RATE_ONE = Decimal(1)
_HEURISTIC_NUMBER = re.compile(r"(\d+)$")


class DiffInputError(ValueError):
    """A hard part the diff cannot read: the message names the side and the field at fault."""


@dataclass(frozen=True)
class MoneyChange:
    """One money figure on both sides; ``change`` is after − before, None when a side lacks it."""

    key: str
    label: str
    before: Decimal | None
    after: Decimal | None

    @property
    def change(self) -> Decimal | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


@dataclass(frozen=True)
class CountChange:
    key: str
    label: str
    before: int | None
    after: int | None

    @property
    def change(self) -> int | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


@dataclass(frozen=True)
class RateChange:
    """A rate (a share from 0 to 1) or, when ``is_share`` is False, a plain ratio or score. The
    change of a share is in shares too (0.0500 = five percentage points)."""

    key: str
    label: str
    before: Decimal | None
    after: Decimal | None
    is_share: bool = True

    @property
    def change(self) -> Decimal | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


@dataclass(frozen=True)
class RecommendationChange:
    """A heuristic whose recommendation is not the same on both sides; ``before`` is None when the
    earlier audit did not list it, ``after`` None when the later one no longer does."""

    code: str
    before: str | None
    after: str | None
    citations_before: int | None
    citations_after: int | None


@dataclass(frozen=True)
class HardDiff:
    currency: str
    money: tuple[MoneyChange, ...]
    actions: tuple[CountChange, ...]
    rates: tuple[RateChange, ...]
    heuristics: tuple[RecommendationChange, ...]

    @property
    def net(self) -> MoneyChange:
        return next(change for change in self.money if change.key == "net")


def diff_hard_parts(before: Mapping[str, object], after: Mapping[str, object]) -> HardDiff:
    """The difference from the earlier hard part ``before`` to the later ``after``."""
    sides = (_Side("earlier", before), _Side("later", after))
    currencies = {side.text("currency") or "" for side in sides}
    if len(currencies) > 1:
        first, second = (side.text("currency") for side in sides)
        raise DiffInputError(f"the reports are in different currencies ({first} and {second}): no diff of their money")
    return HardDiff(
        currency=currencies.pop(),
        money=_money(*sides),
        actions=_actions(*sides),
        rates=_rates(*sides),
        heuristics=_heuristics(*sides),
    )


class _Side:
    """One hard part, read field by field with the side's name in every refusal."""

    def __init__(self, name: str, hard: Mapping[str, object]) -> None:
        if not isinstance(hard, Mapping):
            raise DiffInputError(f"the {name} hard part is not an object")
        self.name = name
        self.hard = hard

    def text(self, key: str) -> str | None:
        value = self.hard.get(key)
        return value if isinstance(value, str) else None

    def section(self, *path: str) -> Mapping[str, object]:
        value: object = self.hard
        for key in path:
            if not isinstance(value, Mapping):
                return {}
            value = value.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise DiffInputError(f"the {self.name} hard part's {'.'.join(path)} is not an object")
        return value

    def items(self, *path: str) -> Sequence[Mapping[str, object]]:
        parent = self.section(*path[:-1])
        value = parent.get(path[-1])
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
            raise DiffInputError(f"the {self.name} hard part's {'.'.join(path)} is not a list of objects")
        return value

    def amount(self, section: Mapping[str, object], where: str, key: str) -> Decimal | None:
        number = self._decimal(section.get(key), f"{where}.{key}", "an amount")
        return number

    def rate(self, section: Mapping[str, object], where: str, key: str, *, share: bool = True) -> Decimal | None:
        number = self._decimal(section.get(key), f"{where}.{key}", "a rate" if share else "a number")
        if share and number is not None and not 0 <= number <= RATE_ONE:
            raise DiffInputError(f"the {self.name} hard part's {where}.{key} is {number}, not a rate from 0 to 1")
        return number

    def count(self, section: Mapping[str, object], where: str, key: str) -> int | None:
        value = section.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DiffInputError(f"the {self.name} hard part's {where}.{key} is {value!r}, not a count")
        return value

    def _decimal(self, value: object, field: str, kind: str) -> Decimal | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
            raise DiffInputError(f"the {self.name} hard part's {field} is {value!r}, not {kind}")
        try:
            number = Decimal(value)
        except InvalidOperation:
            raise DiffInputError(f"the {self.name} hard part's {field} is {value!r}, not {kind}") from None
        if not number.is_finite():
            raise DiffInputError(f"the {self.name} hard part's {field} is {value!r}, not {kind}")
        return number


def _money(before: _Side, after: _Side) -> tuple[MoneyChange, ...]:
    sections = (before.section("attribution"), after.section("attribution"))
    costs = (before.section("attribution", "costs"), after.section("attribution", "costs"))
    changes = []
    for key, label in MONEY_LABELS.items():
        changes.append(
            MoneyChange(
                key,
                label,
                before.amount(sections[0], "attribution", key),
                after.amount(sections[1], "attribution", key),
            )
        )
        if key == "slippage":
            changes.extend(_cost_lines(before, after, costs))
    return tuple(changes)


def _cost_lines(
    before: _Side, after: _Side, costs: tuple[Mapping[str, object], Mapping[str, object]]
) -> list[MoneyChange]:
    """Each charge line either side has, the cost model's lines first in their own order."""
    names = _ordered(list(COST_LABELS), [*costs[0], *costs[1]])
    return [
        MoneyChange(
            f"costs.{name}",
            COST_LABELS.get(name, name.replace("_", " ").capitalize()),
            before.amount(costs[0], "attribution.costs", name),
            after.amount(costs[1], "attribution.costs", name),
        )
        for name in names
        if name in costs[0] or name in costs[1]
    ]


def _actions(before: _Side, after: _Side) -> tuple[CountChange, ...]:
    sections = (before.section("actions"), after.section("actions"))
    changes = [
        CountChange(key, label, before.count(sections[0], "actions", key), after.count(sections[1], "actions", key))
        for key, label in ACTION_LABELS.items()
    ]
    reasons = (before.section("actions", "exits_by_reason"), after.section("actions", "exits_by_reason"))
    for reason in _ordered([], [*reasons[0], *reasons[1]]):
        changes.append(
            CountChange(
                f"exits_by_reason.{reason}",
                f"Exits by {reason}",
                before.count(reasons[0], "actions.exits_by_reason", reason),
                after.count(reasons[1], "actions.exits_by_reason", reason),
            )
        )
    return tuple(changes)


def _rates(before: _Side, after: _Side) -> tuple[RateChange, ...]:
    changes = _analyst_rates(before, after)
    for path, key, label in (
        (("accuracy", "debate"), "rate", "Debate winner right"),
        (("accuracy", "levels"), "hit_rate", "Target or stop hit"),
        (("accuracy", "forecast"), "coverage", "Forecast band coverage"),
        (("inaction",), "superiority", "Inaction superiority"),
    ):
        where = ".".join(path)
        changes.append(
            RateChange(
                f"{where}.{key}",
                label,
                before.rate(before.section(*path), where, key),
                after.rate(after.section(*path), where, key),
            )
        )
    for path, key, label in (
        (("attribution",), "risk_adjusted", "Risk-adjusted return"),
        (("effectiveness",), "score", "Effectiveness score"),
    ):
        where = ".".join(path)
        changes.append(
            RateChange(
                f"{where}.{key}",
                label,
                before.rate(before.section(*path), where, key, share=False),
                after.rate(after.section(*path), where, key, share=False),
                is_share=False,
            )
        )
    return tuple(changes)


def _analyst_rates(before: _Side, after: _Side) -> list[RateChange]:
    by_role = [_by_key(side.items("accuracy", "analysts"), "role", side) for side in (before, after)]
    roles = _ordered([], [*by_role[0], *by_role[1]])
    return [
        RateChange(
            f"accuracy.analysts.{role}.rate",
            f"{role.replace('_', ' ').capitalize()} analyst right",
            before.rate(by_role[0].get(role, {}), f"accuracy.analysts[{role}]", "rate"),
            after.rate(by_role[1].get(role, {}), f"accuracy.analysts[{role}]", "rate"),
        )
        for role in roles
    ]


def _heuristics(before: _Side, after: _Side) -> tuple[RecommendationChange, ...]:
    by_code = [_by_key(side.items("heuristics"), "code", side) for side in (before, after)]
    codes = sorted({*by_code[0], *by_code[1]}, key=_code_order)
    changes = []
    for code in codes:
        earlier, later = by_code[0].get(code), by_code[1].get(code)
        was = _recommendation(earlier, before, code)
        now = _recommendation(later, after, code)
        if was == now:
            continue
        changes.append(
            RecommendationChange(
                code=code,
                before=was,
                after=now,
                citations_before=None if earlier is None else before.count(earlier, f"heuristics[{code}]", "citations"),
                citations_after=None if later is None else after.count(later, f"heuristics[{code}]", "citations"),
            )
        )
    return tuple(changes)


def _recommendation(row: Mapping[str, object] | None, side: _Side, code: str) -> str | None:
    if row is None:
        return None
    value = row.get("recommendation")
    if not isinstance(value, str) or not value:
        raise DiffInputError(f"the {side.name} hard part's heuristics[{code}] has no recommendation")
    return value


def _by_key(rows: Iterable[Mapping[str, object]], key: str, side: _Side) -> dict[str, Mapping[str, object]]:
    keyed: dict[str, Mapping[str, object]] = {}
    for row in rows:
        name = row.get(key)
        if not isinstance(name, str) or not name:
            raise DiffInputError(f"the {side.name} hard part has a row without its {key}")
        keyed[name] = row
    return keyed


def _ordered(first: list[str], names: Iterable[str]) -> list[str]:
    """``first`` in its order, then every other name once, in the order met."""
    seen = dict.fromkeys(first)
    for name in names:
        seen.setdefault(name)
    return list(seen)


def _code_order(code: str) -> tuple[int, str]:
    """H-2 before H-10: by number, then by text for anything else."""
    match = _HEURISTIC_NUMBER.search(code)
    return (int(match.group(1)) if match else 10**9, code)
