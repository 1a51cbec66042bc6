"""The bulk calibration path resolves and bins exactly as the one it replaced.

The previous implementation is kept here as the reference: rows read through Django's converters
(dates as ``dt.date``), one ``_Row`` per call and ``_Closes.move`` per row, and reliability bins
grouped as lists of (confidence, outcome) pairs. Random books (gaps in the bars longer than the
reader's slack, flat moves, missing and zero horizons, zero stances, abstentions, out-of-range
confidences) and small pages exercise every branch and the page-by-page reading of the bars."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from django.db.models import FloatField
from django.db.models.functions import Cast
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews import calibration_service
from reviews.calibration_service import DEBATE, SUBJECTS, CalibrationSettings, Call, _Closes, _runs_of
from reviews.domain.calibration import ReliabilityBin, reliability_bins
from tests.factories import InstrumentFactory, PipelineRunFactory, ThesisFactory, bars_for
from trading.models import AnalystNoteRecord, DailyBar, DebateRecord, Instrument, PipelineRun

# ---------------------------------------------------------------------------------------------
# The reference: the previous implementation, unchanged in substance
# ---------------------------------------------------------------------------------------------


def reference_reliability_bins(confidences: Sequence[float], outcomes: Sequence[int], n_bins: int) -> tuple:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    checked, results = list(confidences), list(outcomes)
    indices = np.searchsorted(edges[1:-1], np.asarray(checked, dtype=float))
    order = np.argsort(indices, kind="stable").tolist()
    bounds = np.searchsorted(indices[order], np.arange(n_bins + 1)).tolist()
    members = [[(checked[i], results[i]) for i in order[bounds[index] : bounds[index + 1]]] for index in range(n_bins)]
    rows = []
    for index, pairs in enumerate(members):
        count = len(pairs)
        positives = sum(outcome for _, outcome in pairs)
        rows.append(
            ReliabilityBin(
                index=index,
                low=float(edges[index]),
                high=float(edges[index + 1]),
                count=count,
                positives=positives,
                mean_confidence=math.fsum(c for c, _ in pairs) / count if count else None,
                observed_rate=positives / count if count else None,
            )
        )
    return tuple(rows)


def _reference_rows(subject: str, end: dt.date) -> Any:
    runs = _runs_of(None, "run__")
    tail = ("run__as_of", "run__instrument_id", "run__thesis__horizon_sessions")
    if subject == DEBATE:
        rows = DebateRecord.objects.filter(runs, run__as_of__lte=end)
        columns = (Cast("conviction", FloatField()), "winner", *tail)
    else:
        rows = AnalystNoteRecord.objects.filter(runs, role=subject, abstained=False, run__as_of__lte=end).exclude(
            stance=0
        )
        columns = (Cast("confidence", FloatField()), Cast("stance", FloatField()), *tail)
    return rows.order_by("-run__as_of", "-id").values_list(*columns)


def _reference_pages(rows: Any, size: int) -> Iterator[list[Any]]:
    page: list[Any] = []
    for values in rows.iterator(chunk_size=size):
        page.append(values)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def reference_resolved_calls(
    subject: str, *, end: dt.date, limit: int, page_size: int, closes: _Closes | None = None
) -> tuple[list[Call], int]:
    rows = _reference_rows(subject, end)
    closes = closes or _Closes(end)
    calls: list[Call] = []
    read = 0
    for page in _reference_pages(rows, page_size):
        read += len(page)
        parsed = [
            (
                float(confidence),
                (1 if side == "LONG" else -1) if subject == DEBATE else _sign(side),
                as_of,
                instrument_id,
                int(horizon) if horizon else calibration_service.DEFAULT_HORIZON_SESSIONS,
            )
            for confidence, side, as_of, instrument_id, horizon in page
        ]
        closes.load((row[3] for row in parsed), min(row[2] for row in parsed))
        for confidence, direction, as_of, instrument_id, horizon in parsed:
            move = closes.move(instrument_id, as_of, horizon)
            if not move or not 0.0 <= confidence <= 1.0:
                continue
            calls.append(Call(confidence=confidence, right=direction == move, as_of=as_of))
        if len(calls) >= limit:
            return calls[:limit], len(calls) + rows.count() - read
    return calls, len(calls)


# ---------------------------------------------------------------------------------------------
# Bins
# ---------------------------------------------------------------------------------------------

confidences = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0]),  # the bin edges themselves
)


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(st.tuples(confidences, st.integers(0, 1)), min_size=1, max_size=300),
    n_bins=st.integers(1, 15),
)
def test_reliability_bins_equal_the_reference(pairs: list[tuple[float, int]], n_bins: int) -> None:
    stated = [confidence for confidence, _ in pairs]
    outcomes = [outcome for _, outcome in pairs]

    assert reliability_bins(stated, outcomes, n_bins) == reference_reliability_bins(stated, outcomes, n_bins)


# ---------------------------------------------------------------------------------------------
# Resolution from stored rows
# ---------------------------------------------------------------------------------------------

START = dt.date(2025, 1, 6)


def _random_book(seed: int) -> tuple[list[Instrument], list[dt.date]]:
    """Three instruments' bars (random walks with flat sessions), one with a three-week hole, and
    runs on random days (holidays and hole days included) carrying notes of every kind and a debate."""
    chance = random.Random(seed)
    instruments = [InstrumentFactory() for _ in range(3)]
    for instrument in instruments:
        level = Decimal(100)
        closes = []
        for _ in range(90):
            level += chance.choice([Decimal(0), Decimal(0), Decimal(1), Decimal(-1), Decimal("2.5")])
            closes.append(max(level, Decimal(1)))
        bars_for(instrument, closes, start=START)
    days = sorted(set(DailyBar.objects.values_list("date", flat=True)))
    hole = days[30:45]
    DailyBar.objects.filter(instrument=instruments[0], date__in=hole).delete()
    calendar = [START + dt.timedelta(days=offset) for offset in range((days[-1] - START).days + 1)]
    for instrument in instruments:
        for day in chance.sample(calendar, 40):
            horizon = chance.choice([None, 0, 1, 3, 10, 25])
            if horizon is None:
                run = PipelineRunFactory(instrument=instrument, as_of=day)
            else:
                run = ThesisFactory(instrument=instrument, run__as_of=day, horizon_sessions=horizon).run
            _notes(run, chance)
    return instruments, days


def _notes(run: PipelineRun, chance: random.Random) -> None:
    def confidence() -> Decimal:
        return chance.choice([Decimal("0.05"), Decimal("0.5"), Decimal("0.7"), Decimal("0.95"), Decimal("1.5")])

    for role in calibration_service.ANALYST_ROLES:
        if chance.random() < 0.2:
            continue
        AnalystNoteRecord.objects.create(
            run=run,
            role=role,
            stance=chance.choice([Decimal("-0.6"), Decimal("-0.1"), Decimal(0), Decimal("0.3"), Decimal("0.8")]),
            confidence=confidence(),
            abstained=chance.random() < 0.1,
            summary="a note",
        )
    if chance.random() < 0.8:
        DebateRecord.objects.create(
            run=run,
            winner=chance.choice(["LONG", "SHORT"]),
            proposed_conviction=Decimal("0.5"),
            conviction=min(confidence(), Decimal("0.99")),
            opposing=0,
            side_taking=2,
            opposing_share=Decimal(0),
            rationale="a debate",
        )


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("page_size", [3, 7, 2_000])
def test_resolved_calls_equal_the_reference(seed: int, page_size: int, monkeypatch) -> None:
    _, days = _random_book(seed)
    monkeypatch.setattr(calibration_service, "_PAGE", page_size)
    for end in (days[40], days[-1]):
        for subject in SUBJECTS:
            for limit in (5, 17, 10_000):
                expected = reference_resolved_calls(subject, end=end, limit=limit, page_size=page_size)

                assert calibration_service.resolved_calls(subject, end=end, limit=limit) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("page_size", [7, 2_000])
@pytest.mark.parametrize("buffer_size", [12, 100])  # 12: each role stops early, while the others' rows wait
def test_the_summary_equals_the_one_built_from_the_reference(
    page_size: int, buffer_size: int, monkeypatch, settings
) -> None:
    """The summary reads all the analyst roles in one query and splits it; the reference reads one
    query per role, as before."""
    _, days = _random_book(4)
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "BUFFER_SIZE": buffer_size, "CALIBRATION_MIN_SAMPLES": 5}
    monkeypatch.setattr(calibration_service, "_PAGE", page_size)
    config = CalibrationSettings.from_settings()
    end = days[-1]

    computed = calibration_service._computed_summary(None, end, config)

    closes = _Closes(end)  # shared between the subjects, in the same order, as the summary shares it
    calls = {
        subject: reference_resolved_calls(
            subject, end=end, limit=config.buffer_size, page_size=page_size, closes=closes
        )[0]
        for subject in SUBJECTS
    }
    monkeypatch.setattr(
        calibration_service,
        "reliability_bins",
        lambda stated, outcomes, n_bins: reference_reliability_bins(stated, outcomes, n_bins),
    )
    expected = calibration_service.summarise(calls, threshold=config.threshold, min_samples=config.min_samples)
    assert computed == expected
    assert computed["samples"] > min(50, buffer_size * len(SUBJECTS) - 1)  # enough calls to fill the bins
