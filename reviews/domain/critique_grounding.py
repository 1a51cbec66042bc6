"""Does a critique cite only figures and ids its evidence pack holds? Pure; no Django.

The critic's directive is words about figures code computed. Every reference it writes is read
back from its text fields (the diagnosis, each action's and prohibited pattern's text and value,
each evidence point) and looked up:

- **ids**: a kind word followed by a number or a list of them ("run 123", "positions 45 and 46",
  "thesis #9", "strategy run 7", "note 3", "debate 2", "memory 8", "critique 4", "loop 5") is an
  id of that kind and must be among the pack's ids of that kind (``ids`` maps a kind's plural,
  ``runs``, ``positions``, … to the ids it holds); a heuristic code ("H-3") must be among
  ``ids["heuristics"]``. One that is not is *invented*.
- **figures**: every other number, read exactly as ``reviews.domain.grounding`` reads a
  retrospective's narrative (grouping, signs, ``%``, ``k``, lakh and crore; ISO dates and the
  digits of ids are not figures), must match a figure of the pack within its own rounding.

A threshold the directive itself sets in an action's params ("below 10% of capital" with
``max_pct`` 10) may be quoted: it is the directive's demand, not a claim about the record.

The result (``GroundingCheck``) counts cited and found figures and ids; its ``share`` (found over
cited, 1 when nothing is cited) is the critique's quality score, and ``problem`` names each
ungrounded figure and invented id for the single repair request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reviews.domain.grounding import cited_numbers, hard_figures, is_grounded

__all__ = [
    "ID_KINDS",
    "CitedId",
    "GroundingCheck",
    "check_grounding",
    "cited_ids",
    "directive_texts",
]

# A kind word as prose writes it → the key of the pack's ids it must be found under.
ID_KINDS: Mapping[str, str] = {
    "strategy run": "strategy_runs",
    "pipeline run": "runs",
    "run": "runs",
    "position": "positions",
    "thesis": "theses",
    "theses": "theses",
    "note": "notes",
    "debate": "debates",
    "memory": "memories",
    "memories": "memories",
    "critique": "critiques",
    "loop": "loops",
}
_KIND_WORDS = "|".join(rf"{re.escape(word)}(?:e?s)?" for word in sorted(ID_KINDS, key=lambda word: (-len(word), word)))
_ONE_ID = r"#?\d+(?![\d,.]?\d)"
_REFERENCE = re.compile(
    rf"(?<![\w-])(?P<kind>{_KIND_WORDS})\s+(?P<ids>{_ONE_ID}(?:\s*(?:,|and|&|or)\s*{_ONE_ID})*)",
    re.IGNORECASE,
)
_SINGULAR = {key: word for word, key in ID_KINDS.items() if word not in ("pipeline run", "theses", "memories")}
_ID_NUMBER = re.compile(r"\d+")
_HEURISTIC = re.compile(r"(?<![\w-])H-(?P<number>\d+)(?!\w)")
MAX_NAMED = 8  # how many ungrounded references the repair request names


@dataclass(frozen=True)
class CitedId:
    """An id as the directive cited it: its kind (a key of the pack's ids), value and where."""

    kind: str
    value: str
    where: str

    @property
    def label(self) -> str:
        """As a person would write it: "run 999", "H-3"."""
        return self.value if self.kind == "heuristics" else f"{_SINGULAR.get(self.kind, self.kind)} {self.value}"


@dataclass(frozen=True)
class GroundingCheck:
    figures_cited: int
    figures_found: int
    ids_cited: int
    ids_found: int
    ungrounded_figures: tuple[tuple[str, str], ...]  # (number as written, where)
    invented_ids: tuple[tuple[str, str], ...]  # (id as "run 999", where)

    @property
    def ok(self) -> bool:
        return not self.ungrounded_figures and not self.invented_ids

    @property
    def share(self) -> float:
        cited = self.figures_cited + self.ids_cited
        return 1.0 if cited == 0 else round((self.figures_found + self.ids_found) / cited, 4)

    def problem(self) -> str:
        """The repair request's reason: each ungrounded figure and invented id, and where."""
        parts = []
        if self.ungrounded_figures:
            named = ", ".join(f"{number} ({where})" for number, where in self.ungrounded_figures[:MAX_NAMED])
            parts.append(f"figures that are not in the evidence pack: {named}")
        if self.invented_ids:
            named = ", ".join(f"{label} ({where})" for label, where in self.invented_ids[:MAX_NAMED])
            parts.append(f"ids that are not in the evidence pack: {named}")
        if not parts:
            return ""
        return (
            "the critique cites "
            + "; and ".join(parts)
            + ". Quote figures exactly as the pack writes them and cite only ids it holds."
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "figures_cited": self.figures_cited,
            "figures_found": self.figures_found,
            "ids_cited": self.ids_cited,
            "ids_found": self.ids_found,
            "share": self.share,
            "ungrounded_figures": [{"number": number, "where": where} for number, where in self.ungrounded_figures],
            "invented_ids": [{"id": label, "where": where} for label, where in self.invented_ids],
        }


def directive_texts(directive: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, text) for each text of a directive, in reading order: ``diagnosis``,
    ``required_actions[0].text``, ``prohibited_patterns[1].value``, ``evidence[2]`` …"""
    texts: list[tuple[str, str]] = []
    if isinstance(directive.get("diagnosis"), str):
        texts.append(("diagnosis", directive["diagnosis"]))
    for field, keys in (("required_actions", ("text",)), ("prohibited_patterns", ("text", "value"))):
        for index, item in enumerate(_items(directive.get(field))):
            if isinstance(item, Mapping):
                texts.extend((f"{field}[{index}].{key}", str(item.get(key) or "")) for key in keys)
    texts.extend((f"evidence[{index}]", str(point)) for index, point in enumerate(_items(directive.get("evidence"))))
    return texts


def _items(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def cited_ids(text: str, where: str = "") -> list[CitedId]:
    """Every id ``text`` cites (see the module), in order."""
    found: list[CitedId] = []
    for match in _REFERENCE.finditer(text):
        kind = _kind_key(match.group("kind"))
        found.extend(CitedId(kind, number, where) for number in _ID_NUMBER.findall(match.group("ids")))
    found.extend(CitedId("heuristics", f"H-{match.group('number')}", where) for match in _HEURISTIC.finditer(text))
    return found


def _kind_key(word: str) -> str:
    lowered = " ".join(word.lower().split())
    if lowered in ID_KINDS:
        return ID_KINDS[lowered]
    for suffix in ("es", "s"):
        if lowered.endswith(suffix) and lowered[: -len(suffix)] in ID_KINDS:
            return ID_KINDS[lowered[: -len(suffix)]]
    return lowered


def _without_ids(text: str) -> str:
    """The text with its id references blanked, so their digits are not read as figures."""
    return _REFERENCE.sub(lambda match: " " * len(match.group(0)), text)


def _id_sets(ids: Mapping[str, Iterable[object]]) -> dict[str, set[str]]:
    return {str(kind): {str(value) for value in values} for kind, values in ids.items()}


def _param_figures(directive: Mapping[str, Any]) -> list[object]:
    values: list[object] = []
    for action in _items(directive.get("required_actions")):
        params = action.get("params") if isinstance(action, Mapping) else None
        if isinstance(params, Mapping):
            values.extend(params.values())
    return values


def check_grounding(
    directive: Mapping[str, Any],
    *,
    figures: Mapping[str, object] | Sequence[object],
    ids: Mapping[str, Iterable[object]],
) -> GroundingCheck:
    """The grounding of ``directive`` against the pack's ``figures`` and ``ids`` (see the module)."""
    reference = hard_figures([figures, _param_figures(directive)])
    known = _id_sets(ids)
    ungrounded: list[tuple[str, str]] = []
    invented: list[tuple[str, str]] = []
    figures_cited = ids_cited = 0
    for where, text in directive_texts(directive):
        for cited in cited_ids(text, where):
            ids_cited += 1
            if cited.value not in known.get(cited.kind, set()):
                invented.append((cited.label, where))
        for number in cited_numbers(_without_ids(text)):
            figures_cited += 1
            if not is_grounded(number, reference):
                ungrounded.append((number.text, where))
    return GroundingCheck(
        figures_cited=figures_cited,
        figures_found=figures_cited - len(ungrounded),
        ids_cited=ids_cited,
        ids_found=ids_cited - len(invented),
        ungrounded_figures=tuple(ungrounded),
        invented_ids=tuple(invented),
    )
