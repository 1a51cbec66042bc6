"""``bench/replay.py --baseline``: an earlier commit's replay is read back from what its own bench
printed, so the lines it reads must stay the lines every version of the bench prints."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal

import pytest

from bench.replay import ReplayRecord, ReplayResult, StepTimes, baseline_read, print_outcome

# What the bench of commit 1bfb5b4 printed for 30 sessions (the lines around its outcome).
EARLIER_BENCH = """\
Demo seeded in 0.9 s (not counted)

Replayed 30 sessions (2026-10-12 to 2026-11-20) in 35.7 s: 0.84 sessions/second, 10.1 pipeline runs/second
  pipeline runs         360  by status {'completed': 241, 'held': 119}
  theses                241  risk-approved 70; by status {'risk_rejected': 171, 'approved': 31, 'expired': 39}
  approvals              31  refused 39 {'the book has moved since this thesis was sized': 39}
  positions opened       20  closed 15 (exits {'horizon': 9, 'stop': 4, 'target': 2}), still open 5; \
orders still working 0
  reviews written        15
  realised PnL       ₹8,676.88 net of costs

Where the 35.7 s go (inclusive; indented lines are inside the line above):
"""


def test_an_earlier_benchs_replay_is_read_from_what_it_printed() -> None:
    baseline = baseline_read("1bfb5b4", EARLIER_BENCH, cpu_s=42.3)

    assert baseline is not None
    assert (baseline.first, baseline.last) == ("2026-10-12", "2026-11-20")
    assert baseline.wall_s == pytest.approx(35.7)
    assert baseline.runs == 360
    assert baseline.realised == "₹8,676.88"
    assert baseline.cpu_s == pytest.approx(42.3)


@pytest.mark.parametrize("missing", ["Replayed 30 sessions", "  pipeline runs", "  realised PnL"])
def test_a_bench_whose_outcome_lacks_a_line_reads_as_nothing(missing: str) -> None:
    printed = "\n".join(line for line in EARLIER_BENCH.splitlines() if not line.startswith(missing))

    assert baseline_read("1bfb5b4", printed, cpu_s=1.0) is None


def test_this_benchs_own_outcome_reads_back_as_a_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    """A later commit, given to ``--baseline`` by a later bench, is read from these very lines."""
    result = ReplayResult(
        wall_s=12.5,
        cpu_s=12.1,
        day_seconds=[0.4] * 21,
        approved=3,
        refused=Counter({"the book has moved since this thesis was sized": 2}),
        decisions=Counter({"rebalance": 2, "hold": 1}),
        steps=StepTimes(),
        budget_before_ms=0.5,
    )
    record = ReplayRecord(
        runs=Counter({"completed": 20, "held": 4}),
        theses=20,
        risk_approved=5,
        theses_by_status=Counter({"risk_rejected": 15, "approved": 3, "expired": 2}),
        working_orders=1,
        opened=3,
        closed=2,
        still_open=1,
        exits=Counter({"stop": 1, "target": 1}),
        reviews=2,
        realised=Decimal("-1234.5"),
        stages_by_run={},
    )

    print_outcome(result, record, [dt.date(2026, 11, 2), dt.date(2026, 11, 20)])
    baseline = baseline_read("later", capsys.readouterr().out, cpu_s=13.0)

    assert baseline is not None
    assert (baseline.first, baseline.last, baseline.runs) == ("2026-11-02", "2026-11-20", 24)
    assert baseline.wall_s == pytest.approx(12.5)
    assert baseline.realised == "₹-1,234.50"
