"""FATE > Reviews: the latest daily, weekly and epoch reviews of a book side by side, each report in
full, and a report against the previous one of its horizon.

The pages read each report's stored hard part (computed by code when the review ran), its
narrative and the grounding check's flags; the figures are never recomputed here, and the diff
is ``reviews.domain.diff``'s. Any desk user may read them (the login is the desk's middleware).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse

from reviews import report_selectors as selectors
from reviews.charts import attribution_waterfall
from reviews.models import RetrospectiveReport
from trading import edge
from trading.models import Account, Position

HOME_TEMPLATE = "reviews/reviews.html"
REPORT_TEMPLATE = "reviews/report.html"
DIFF_TEMPLATE = "reviews/diff.html"
TITLES = {"daily": "Daily review", "weekly": "Weekly review", "epoch": "Epoch review"}


# --- links to pages other modules serve --------------------------------------------------------


def heuristic_url(code: str) -> str:
    """A heuristic's page (the playbook's); by path until its URL name exists."""
    try:
        return reverse("heuristic_detail", args=[code])
    except NoReverseMatch:
        return f"/reviews/heuristics/{code}/"


def playbook_url() -> str:
    try:
        return reverse("heuristic_list")
    except NoReverseMatch:
        return "/reviews/heuristics/"


def lifecycle_url(position_id: int) -> str:
    return reverse("position_lifecycle", args=[position_id])


# --- what a page shows of a report ------------------------------------------------------------


@dataclass(frozen=True)
class NarrativeLine:
    text: str
    flags: tuple[str, ...] = ()  # numbers the line cites that the hard part does not hold
    factor: str = ""
    heuristic: str = ""


@dataclass(frozen=True)
class NarrativeSection:
    title: str
    key: str
    lines: tuple[NarrativeLine, ...]


@dataclass(frozen=True)
class Narrative:
    sections: tuple[NarrativeSection, ...]
    stray_flags: tuple[tuple[str, str], ...]  # (where, number) flags that match no line shown
    confidence: Any

    @property
    def flag_count(self) -> int:
        return sum(len(line.flags) for section in self.sections for line in section.lines) + len(self.stray_flags)

    @property
    def is_empty(self) -> bool:
        return not any(section.lines for section in self.sections)


@dataclass(frozen=True)
class Accuracy:
    """The period's calls summed over the analysts (each role's own rate is in the report)."""

    analyst_calls: int
    analyst_right: int
    analyst_rate: Decimal | None
    debate: Mapping[str, Any]
    levels: Mapping[str, Any]
    forecast: Mapping[str, Any]


@dataclass
class ReportView:
    """A READY report as a page reads it: its hard part, chart, narrative and links."""

    report: RetrospectiveReport
    hard: Mapping[str, Any]
    currency: str
    chart: dict[str, Any] | None
    chart_id: str
    narrative: Narrative
    accuracy: Accuracy
    linked_positions: set[int] = field(default_factory=set)

    @property
    def chart_data_id(self) -> str:
        return f"{self.chart_id}-data"

    @property
    def heuristics(self) -> list[dict[str, Any]]:
        return [
            {**row, "url": heuristic_url(str(row.get("code", "")))}
            for row in _rows(self.hard.get("heuristics"))
            if row.get("code")
        ]

    @property
    def positions(self) -> list[dict[str, Any]]:
        return [linked for row in _rows(self.hard.get("positions")) if (linked := self._linked(row)) is not None]

    @property
    def best(self) -> dict[str, Any] | None:
        return self._linked(self.hard.get("best_position"))

    @property
    def worst(self) -> dict[str, Any] | None:
        return self._linked(self.hard.get("worst_position"))

    @property
    def costs(self) -> list[tuple[str, Any]]:
        costs = _mapping(_mapping(self.hard.get("attribution")).get("costs"))
        return [(name.replace("_", " "), amount) for name, amount in costs.items()]

    @property
    def exits_by_reason(self) -> list[tuple[str, Any]]:
        return list(_mapping(_mapping(self.hard.get("actions")).get("exits_by_reason")).items())

    @property
    def calibration(self) -> Mapping[str, Any]:
        return _mapping(self.hard.get("calibration"))

    @property
    def by_subject(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [(name, _mapping(row)) for name, row in _mapping(self.calibration.get("by_subject")).items()]

    @property
    def report_url(self) -> str:
        return reverse("review_report", args=[self.report.pk])

    @property
    def diff_url(self) -> str:
        return reverse("review_diff", args=[self.report.pk])

    @property
    def heuristic_key_url(self) -> str:
        """H: the first heuristic of the audit, or the playbook when the audit is empty."""
        first = next(iter(self.heuristics), None)
        return str(first["url"]) if first else playbook_url()

    @property
    def position_key_url(self) -> str:
        """P: the worst position's lifecycle, else the best's, else the report's own position."""
        for row in (self.worst, self.best):
            if row and row.get("url"):
                return str(row["url"])
        if self.report.position_id:
            return lifecycle_url(self.report.position_id)
        return ""

    @property
    def lifecycle(self) -> Mapping[str, Any]:
        return _mapping(self.hard.get("lifecycle"))

    def _linked(self, row: object) -> dict[str, Any] | None:
        if not isinstance(row, Mapping):
            return None
        position_id = row.get("id")
        linked = isinstance(position_id, int) and position_id in self.linked_positions
        return {**row, "url": lifecycle_url(position_id) if linked and isinstance(position_id, int) else ""}


def report_view(report: RetrospectiveReport, *, linked: set[int] | None = None) -> ReportView:
    hard = report.hard if isinstance(report.hard, Mapping) else {}
    currency = str(hard.get("currency") or report.account.currency)
    waterfall = _rows(hard.get("waterfall"))
    return ReportView(
        report=report,
        hard=hard,
        currency=currency,
        chart=_waterfall(waterfall, currency) if hard else None,
        chart_id=f"waterfall-{report.pk}",
        narrative=narrative_of(report.narrative, report.ungrounded),
        accuracy=accuracy_of(_mapping(hard.get("accuracy"))),
        linked_positions=linked if linked is not None else existing_positions([report]),
    )


def _waterfall(rows: list[Mapping[str, Any]], currency: str) -> dict[str, Any] | None:
    try:
        return attribution_waterfall(rows, currency=currency)
    except (KeyError, ValueError):
        return None  # a damaged row: the attribution table below still shows what is stored


def existing_positions(reports: Iterable[RetrospectiveReport]) -> set[int]:
    """Positions the reports name that are rows of the book (one query), so only those are linked
    to a lifecycle: a report can outlive a replay's cleared positions."""
    wanted: set[int] = set()
    for report in reports:
        hard = report.hard if isinstance(report.hard, Mapping) else {}
        rows = [*_rows(hard.get("positions")), hard.get("best_position"), hard.get("worst_position")]
        wanted.update(row["id"] for row in rows if isinstance(row, Mapping) and isinstance(row.get("id"), int))
    if not wanted:
        return set()
    return set(Position.objects.filter(pk__in=wanted, status=Position.Status.CLOSED).values_list("pk", flat=True))


def narrative_of(narrative: object, ungrounded: object) -> Narrative:
    """The narrative's parts, each line with the flags the grounding check put on it; a flag
    whose place matches no line is kept apart so it is still shown."""
    story = _mapping(narrative)
    places = selectors.flags_by_place(ungrounded)
    used: set[str] = set()

    def lines(key: str) -> tuple[NarrativeLine, ...]:
        value = story.get(key)
        items = value if isinstance(value, list) else ([value] if value else [])
        shown = []
        for index, item in enumerate(items):
            wheres = [f"{key}[{index}]", f"{key}[{index}].text"] + ([key] if not isinstance(value, list) else [])
            used.update(wheres)
            flags = tuple(number for where in wheres for number in places.get(where, []))
            if isinstance(item, Mapping):
                shown.append(
                    NarrativeLine(
                        str(item.get("text", "")),
                        flags,
                        str(item.get("factor") or ""),
                        str(item.get("heuristic") or ""),
                    )
                )
            else:
                shown.append(NarrativeLine(str(item), flags))
        return tuple(shown)

    sections = (
        NarrativeSection("What worked", "what_worked", lines("what_worked")),
        NarrativeSection("What failed", "what_failed", lines("what_failed")),
        NarrativeSection("Hindsight", "hindsight", lines("hindsight")),
        NarrativeSection("Playbook proposals", "proposals", lines("proposals")),
    )
    stray = tuple((where, number) for where, numbers in places.items() if where not in used for number in numbers)
    return Narrative(sections, stray, story.get("confidence"))


def accuracy_of(accuracy: Mapping[str, Any]) -> Accuracy:
    analysts = _rows(accuracy.get("analysts"))
    calls = sum(_count(row.get("calls")) for row in analysts)
    right = sum(_count(row.get("right")) for row in analysts)
    rate = (Decimal(right) / Decimal(calls)).quantize(Decimal("0.0001")) if calls else None
    return Accuracy(
        analyst_calls=calls,
        analyst_right=right,
        analyst_rate=rate,
        debate=_mapping(accuracy.get("debate")),
        levels=_mapping(accuracy.get("levels")),
        forecast=_mapping(accuracy.get("forecast")),
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _rows(value: object) -> list[Mapping[str, Any]]:
    return [row for row in value if isinstance(row, Mapping)] if isinstance(value, list) else []


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- the pages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Card:
    horizon: str
    title: str
    view: ReportView | None
    schedule: selectors.ScheduledReview | None


def reviews(request: HttpRequest) -> HttpResponse:
    """The latest ready review of each horizon for the chosen book (``?account=<id>``; the live
    paper book by default). An unknown account is answered 400 with the reason, over the live book."""
    wanted = request.GET.get("account", "")
    account, accounts, unknown = selectors.book_choice(wanted)
    status = 200
    if unknown:
        messages.error(request, f"There is no such account: {edge.short(wanted.strip())!r}; showing the live book.")
        status = 400
    latest = selectors.latest_reviews(account)
    ready = [report for report in latest.values() if report is not None]
    linked = existing_positions(ready)
    schedule = {entry.horizon: entry for entry in selectors.scheduled_reviews()}
    cards = [
        Card(horizon, TITLES[horizon], report_view(report, linked=linked) if report else None, schedule.get(horizon))
        for horizon, report in latest.items()
    ]
    alarm = _calibration_alarm(ready)
    return render(
        request,
        HOME_TEMPLATE,
        {
            "account": account,
            "accounts": accounts,
            "cards": cards,
            "has_reviews": bool(ready),
            "alarm": alarm,
            "events": [EventRow(report) for report in selectors.recent_event_reviews(account)],
            "flagged": selectors.flagged_strategies(account),
            "schedule": list(schedule.values()),
            "playbook_url": playbook_url(),
            "epoch_days": settings.RETROSPECTIVE["EPOCH_INTERVAL_DAYS"],
            "charts": any(card.view and card.view.chart for card in cards),
        },
        status=status,
    )


@dataclass(frozen=True)
class EventRow:
    """A position retrospective, loss review or testament in the list: its result is the period's
    net, or the position's final profit when only the lifecycle holds one."""

    report: RetrospectiveReport

    @property
    def result(self) -> object:
        hard = _mapping(self.report.hard)
        net = _mapping(hard.get("attribution")).get("net")
        return net if net is not None else _mapping(hard.get("lifecycle")).get("final_pnl")


def _calibration_alarm(reports: Sequence[RetrospectiveReport]) -> dict[str, Any] | None:
    """The newest of the reports whose calibration rang the alarm, with its figures."""
    for report in sorted(reports, key=lambda r: (r.period_end, r.pk), reverse=True):
        calibration = _mapping(_mapping(report.hard).get("calibration"))
        if calibration.get("alarm") is True:
            return {"report": report, **calibration}
    return None


def review_report(request: HttpRequest, report_id: int) -> HttpResponse:
    """One report in full. A review still running or that failed is shown with its state (and its
    error), not as an empty report."""
    report = get_object_or_404(
        RetrospectiveReport.objects.select_related("account", "strategy", "position__instrument"), pk=report_id
    )
    view = report_view(report) if report.status == RetrospectiveReport.Status.READY else None
    return render(
        request,
        REPORT_TEMPLATE,
        {
            "report": report,
            "view": view,
            "back_url": _back_url(report.account),
            "charts": bool(view and view.chart),
        },
    )


def review_diff(request: HttpRequest, report_id: int) -> HttpResponse:
    """The report against the previous ready one of its horizon, account and strategy. Without one
    (the first review, or a report not ready) the page says why, with a 409 for a report not ready."""
    report = get_object_or_404(RetrospectiveReport.objects.select_related("account", "strategy"), pk=report_id)
    compared = selectors.report_diff(report)
    status = 409 if report.status != RetrospectiveReport.Status.READY else 200
    return render(
        request,
        DIFF_TEMPLATE,
        {
            "report": report,
            "compared": compared,
            "diff": compared.diff,
            "currency": compared.diff.currency if compared.diff and compared.diff.currency else report.account.currency,
            "back_url": _back_url(report.account),
        },
        status=status,
    )


def _back_url(account: Account) -> str:
    return f"{reverse('reviews')}?account={account.pk}"
