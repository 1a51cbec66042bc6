"""The critique's pages: a strategy's critique archive (``/reviews/strategies/<id>/critiques/``),
one critique (``/reviews/critiques/<id>/``), and an approver's attestation of a free-form action.

Everything shown was stored by the critique service (evidence, findings, directive, grounding,
escalations) or by the gate (each action's status and check); nothing is computed here but the
links from the ids a critique cites to the pages of those rows. The attestation goes through the
same service as the API's, so a forged POST meets the same rules as a click."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from reviews import charts
from reviews.critique.actions import action_attest
from reviews.domain.critique_grounding import ID_KINDS
from reviews.models import Critique, CritiqueAction
from trading import edge
from trading.models import Strategy, StrategyDirective
from trading.refusals import refused
from vocabulary.refusals import InputRefused, NotAllowed, Refusal

__all__ = ["critique_action_attest", "critique_detail", "critique_list", "linked_text"]

APPROVE_PERMISSION = "trading.approve_thesis"
MAX_LINKED_IDS = 12  # a finding's source rows listed by id; the rest are counted (the API has them all)
# The pages a cited id opens: a pipeline run, a thesis, a closed position's lifecycle, a heuristic.
ID_PAGES = {
    "runs": "run_detail",
    "theses": "thesis_detail",
    "positions": "position_lifecycle",
    "heuristics": "heuristic_detail",
}


def id_url(kind: str, value: str) -> str:
    """The page of a cited row, or "" when the desk has no page for that kind."""
    name = ID_PAGES.get(kind)
    if name is None:
        return ""
    return reverse(name, args=[value if kind == "heuristics" else int(value)])


# A cited id as the grounding check reads one ("run 123", "positions 45 and 46", "H-3"), kept with
# where it stands so it can be linked in place.
_KIND_WORDS = "|".join(rf"{re.escape(word)}(?:e?s)?" for word in sorted(ID_KINDS, key=lambda word: (-len(word), word)))
_ONE_ID = r"#?\d+(?![\d,.]?\d)"
_REFERENCE = re.compile(
    rf"(?<![\w-])(?P<kind>{_KIND_WORDS})\s+(?P<ids>{_ONE_ID}(?:\s*(?:,|and|&|or)\s*{_ONE_ID})*)|(?<![\w-])(?P<code>H-\d+)(?!\w)",
    re.IGNORECASE,
)


def _kind_key(word: str) -> str:
    lowered = " ".join(word.lower().split())
    for candidate in (lowered, lowered.removesuffix("es"), lowered.removesuffix("s")):
        if candidate in ID_KINDS:
            return ID_KINDS[candidate]
    return lowered


def _cited_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, url) of each cited id that has a page, in reading order."""
    spans = []
    for match in _REFERENCE.finditer(text):
        if match.group("code"):
            spans.append((match.start("code"), match.end("code"), id_url("heuristics", match.group("code").upper())))
            continue
        kind, offset = _kind_key(match.group("kind")), match.start("ids")
        numbers = list(re.finditer(r"\d+", match.group("ids")))
        if len(numbers) == 1:  # "run 7": the whole reference is the link
            spans.append((match.start(), match.end(), id_url(kind, numbers[0].group(0))))
            continue
        for number in numbers:
            spans.append((offset + number.start(), offset + number.end(), id_url(kind, number.group(0))))
    return [span for span in spans if span[2]]


def linked_text(text: str) -> list[dict[str, str]]:
    """``text`` cut into pieces, each ``{"text", "url"}``: each id it cites ("run 7") carries its
    page's url. The template escapes every piece; nothing here is marked safe."""
    pieces: list[dict[str, str]] = []
    position = 0
    for start, end, url in _cited_spans(text):
        if start > position:
            pieces.append({"text": text[position:start], "url": ""})
        pieces.append({"text": text[start:end], "url": url})
        position = end
    if position < len(text):
        pieces.append({"text": text[position:], "url": ""})
    return pieces


def _point_text(point: object) -> str:
    """A directive's evidence point as one line: its claim (whatever the schema calls it)."""
    if isinstance(point, Mapping):
        for key in ("claim", "text", "point", "summary"):
            if isinstance(point.get(key), str):
                return str(point[key])
        return "; ".join(f"{key}: {value}" for key, value in point.items())
    return str(point)


def _finding_rows(findings: object) -> list[dict[str, Any]]:
    """Each detector's finding with the ids it came from, each linked to its page when it has one."""
    rows = []
    for finding in findings if isinstance(findings, list) else []:
        if not isinstance(finding, Mapping):
            continue
        stored_ids = finding.get("ids")
        ids: Mapping[str, Any] = stored_ids if isinstance(stored_ids, Mapping) else {}
        stored_figures = finding.get("figures")
        figures: Mapping[str, Any] = stored_figures if isinstance(stored_figures, Mapping) else {}
        links = [
            {"kind": kind, "value": str(value), "url": id_url(kind, str(value))}
            for kind, values in ids.items()
            for value in (values if isinstance(values, list) else [])
        ]
        rows.append(
            {
                **finding,
                "figure_items": sorted(figures.items()),
                "id_links": links[:MAX_LINKED_IDS],
                "more_ids": max(0, len(links) - MAX_LINKED_IDS),
            }
        )
    return rows


def _plain(value: object) -> str:
    """A stored grounding value as words: a list as its items, none as a dash."""
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(_plain_item(item) for item in value) or "none"
    return str(value)


def _plain_item(item: object) -> str:
    """``{"id": "run 999", "where": "diagnosis"}`` as "run 999 (diagnosis)"."""
    if isinstance(item, Mapping) and item:
        first, *rest = (str(value) for value in item.values())
        return f"{first} ({', '.join(rest)})" if rest else first
    return str(item)


def critique_list(request: HttpRequest, strategy_id: int) -> HttpResponse:
    """A strategy's critiques over time (``?replay=1``: those of its history replays), with the
    status of each action and each detector's score across them. A fixed number of queries."""
    strategy = get_object_or_404(Strategy, pk=strategy_id)
    status = 200
    try:
        replay = edge.parse_flag(request.GET.get("replay"), "replay")
    except edge.InputInvalid as problem:
        messages.error(request, f"{problem}; showing live critiques.")
        replay, status = False, 400
    critiques = list(
        Critique.objects.filter(strategy=strategy, is_replay=replay)
        .prefetch_related(Prefetch("actions", queryset=CritiqueAction.objects.order_by("number")))
        .order_by("sequence")
    )
    done = [critique for critique in critiques if critique.status == Critique.Status.DONE]
    chart_points = [{"sequence": c.sequence, "as_of": c.as_of.isoformat(), "findings": c.findings} for c in done]
    in_force = StrategyDirective.objects.filter(strategy=strategy, is_replay=replay, lifted_at__isnull=True)
    return render(
        request,
        "reviews/critique_list.html",
        {
            "strategy": strategy,
            "replay": replay,
            "critiques": list(reversed(critiques)),
            "directives": list(in_force.order_by("-sequence")),
            "chart": charts.findings_trajectory(chart_points) if done else None,
            "here": "critiques",
        },
        status=status,
    )


def critique_detail(request: HttpRequest, critique_id: int) -> HttpResponse:
    critique = get_object_or_404(Critique.objects.select_related("strategy", "strategy_run"), pk=critique_id)
    actions = list(critique.actions.select_related("attested_by").order_by("number"))
    directive = critique.directive if isinstance(critique.directive, Mapping) else {}
    stored_evidence = directive.get("evidence")
    evidence: list[Any] = stored_evidence if isinstance(stored_evidence, list) else []
    issued = StrategyDirective.objects.filter(
        strategy_id=critique.strategy_id, is_replay=critique.is_replay, source_ref=critique.pk
    ).first()
    grounding = critique.grounding if isinstance(critique.grounding, Mapping) else {}
    stored_escalations = critique.escalations if isinstance(critique.escalations, list) else []
    return render(
        request,
        "reviews/critique_detail.html",
        {
            "critique": critique,
            "strategy": critique.strategy,
            "actions": actions,
            "can_attest": request.user.has_perm(APPROVE_PERMISSION),
            "diagnosis": linked_text(critique.diagnosis),
            "evidence": [linked_text(_point_text(point)) for point in evidence],
            "prohibitions": directive.get("prohibited_patterns") or [],
            "findings": _finding_rows(critique.findings),
            "escalations": [item for item in stored_escalations if isinstance(item, Mapping)],
            "grounding": [(key, _plain(value)) for key, value in sorted(grounding.items())],
            "issued": issued,
            "here": "critiques",
        },
    )


@require_POST
def critique_action_attest(request: HttpRequest, action_id: int) -> HttpResponse:
    """An approver says a free-form action is done, in a comment. The role is checked first (a
    viewer's forged POST is a 403 whatever else is wrong with it); an empty comment is refused
    with a message and changes nothing; every other rule (the kind, an action already complete, the
    directive's update) is the gate's service's, the same the API calls."""
    action = get_object_or_404(CritiqueAction.objects.select_related("critique"), pk=action_id)
    back = redirect(f"{reverse('critique_detail', args=[action.critique_id])}#action-{action.number}")
    comment = request.POST.get("comment", "").strip()
    try:
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise NotAllowed("only approvers attest a critique's action")
        if not comment:
            raise InputRefused("an attestation needs a comment: say what was done and where to see it")
        edge.check_comment(comment)
        attested = action_attest(action, user=request.user, comment=comment)
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(request, f"Action {attested.number} attested.")
    return back
