"""How fast the hybrid memory index builds and answers, against ``rank_bm25``.

Run from the project root:

    .venv/bin/python bench/memory.py [--sizes 10000 100000] [--queries 200] [--rank-bm25-queries 200 20]

Builds seeded synthetic trade reviews and notes (NSE symbols, directions, outcomes, setups such as
"breakout", "RSI divergence" and "earnings gap", model-style critiques and lessons), then for each
corpus size:

- times building ``HybridIndex`` by incremental ``add`` calls, and p50/p95 of ``search`` (k=5,
  with a symbol boost; a quarter of the queries also carry ``as_of``);
- times ``rank_bm25.BM25Okapi`` on the same tokens (tokenised records; query text plus symbol),
  its build and ``get_scores``. rank_bm25 walks every document in Python for every query term, so
  at large sizes it gets fewer queries (``--rank-bm25-queries``, one count per size);
- reports how far the two BM25 top-10s agree. They are not expected to match exactly: rank_bm25
  uses idf = ln((N - n + .5) / (n + .5)) floored at a fraction of the mean idf, ours uses
  ln(1 + (N - n + .5) / (n + .5)), which stays positive for terms in over half the records
  (LONG and SHORT here).

Note the comparison is generous to rank_bm25: ``get_scores`` only scores, while ``search`` also
computes the dense ranking, fuses, filters and sorts. rank_bm25 is a bench-only dependency
(bench/requirements.txt).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from agents.domain.memory import (  # noqa: E402 - needs the project root on sys.path
    HybridIndex,
    MemoryRecord,
    query_fields,
    record_fields,
)

# One string reads better than fifty quoted words.
SYMBOLS = (  # noqa: SIM905
    "RELIANCE TCS INFY HDFCBANK ICICIBANK SBIN ITC LT AXISBANK KOTAKBANK BHARTIARTL HINDUNILVR MARUTI "
    "TATAMOTORS TATASTEEL SUNPHARMA WIPRO ASIANPAINT BAJFINANCE ADANIENT ADANIPORTS ULTRACEMCO TITAN "
    "NESTLEIND POWERGRID NTPC ONGC COALINDIA JSWSTEEL HINDALCO GRASIM TECHM HCLTECH DRREDDY CIPLA "
    "DIVISLAB EICHERMOT HEROMOTOCO BAJAJ-AUTO M&M BPCL IOC INDUSINDBK SBILIFE HDFCLIFE BRITANNIA "
    "APOLLOHOSP TATACONSUM UPL DLF"
).split()
SETUPS = (
    "breakout",
    "RSI divergence",
    "earnings gap",
    "pullback to the 20-day EMA",
    "MACD crossover",
    "support bounce",
    "range breakdown",
    "volume climax",
    "52-week high breakout",
    "gap fill",
    "sector rotation",
    "results beat",
    "guidance cut",
    "block deal",
    "FII buying",
    "refinery margins",
    "double bottom",
    "head and shoulders breakdown",
)
TIMINGS = (
    "at the open",
    "into the close",
    "after a two-day consolidation",
    "on the retest",
    "before the results",
    "a day after the RBI policy",
    "with India VIX above 20",
    "on expiry week",
)
WIN_STORIES = (
    "the move followed through and hit target in {n} sessions",
    "momentum held above VWAP and the trail stop locked in gains",
    "volume confirmed the move and the thesis played out",
    "the bull thesis on margins held and price reached the target",
)
LOSS_STORIES = (
    "the stock reversed and hit the stop in {n} sessions",
    "a gap down on weak results erased the setup",
    "we chased the breakout and price failed at resistance",
    "the divergence was early; the trend kept going against us",
    "broad market selling dragged it through support",
)
SCRATCH_STORIES = (
    "price chopped sideways for {n} sessions and we exited flat",
    "the setup stalled below resistance; closed at entry",
    "no follow-through after the signal; scratched the trade",
)
LESSONS = (
    "wait for volume confirmation",
    "avoid entries the day before earnings",
    "size down when India VIX is above 20",
    "respect the broader market trend",
    "trail the stop after the first target",
    "do not fade a strong sector",
    "check delivery percentage before trusting a breakout",
    "let the RSI divergence confirm with a higher low",
    "treat earnings gaps on heavy volume as continuation",
    "keep the stop below the swing low, not at a round number",
)
NOTE_TEMPLATES = (
    "Watch {symbol} ahead of results; {lesson}.",
    "{symbol} is near its 52-week high; {lesson}.",
    "Sector note: {setup} setups in {symbol} have been unreliable this quarter.",
)
OUTCOMES = {
    "win": ("realized", WIN_STORIES),
    "loss": ("falsified", LOSS_STORIES),
    "scratch": ("weakened", SCRATCH_STORIES),
}
FIRST_DAY = date(2022, 1, 3)
DAYS_SPANNED = 3 * 365


@dataclass(frozen=True)
class Query:
    text: str
    symbol: str
    as_of: date | None


def synthetic_records(count: int, seed: int) -> list[MemoryRecord]:
    """Trade reviews (nine in ten) and notes, ids ascending, dates spread over three years."""
    rng = random.Random(seed)
    return [_synthetic_record(record_id, rng) for record_id in range(1, count + 1)]


def _synthetic_record(record_id: int, rng: random.Random) -> MemoryRecord:
    symbol = rng.choice(SYMBOLS)
    created_on = FIRST_DAY + timedelta(days=rng.randrange(DAYS_SPANNED))
    if rng.random() < 0.1:
        text = rng.choice(NOTE_TEMPLATES).format(symbol=symbol, lesson=rng.choice(LESSONS), setup=rng.choice(SETUPS))
        return MemoryRecord(record_id, "note", symbol, text, {}, created_on)
    direction = rng.choice(("LONG", "SHORT"))
    outcome = rng.choices(("win", "loss", "scratch"), weights=(45, 40, 15))[0]
    signal, stories = OUTCOMES[outcome]
    story = rng.choice(stories).format(n=rng.randint(1, 12))
    entry = round(rng.uniform(100, 5000), 1)
    move = {"win": rng.uniform(2, 12), "loss": -rng.uniform(1, 6), "scratch": rng.uniform(-0.5, 0.5)}[outcome]
    text = (
        f"{'Bought' if direction == 'LONG' else 'Shorted'} on a {rng.choice(SETUPS)} {rng.choice(TIMINGS)} "
        f"at {entry}, closed {move:+.1f}%; {story}. Lesson: {rng.choice(LESSONS)}."
    )
    tags = {"direction": direction, "outcome": outcome, "signal": signal}
    return MemoryRecord(record_id, "review", symbol, text, tags, created_on)


def synthetic_queries(count: int, seed: int) -> list[Query]:
    """What an agent would ask before a new thesis: direction, setup, a few words of context."""
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        symbol = rng.choice(SYMBOLS)
        words = f"{rng.choice(('LONG', 'SHORT'))} {rng.choice(SETUPS)} {rng.choice(LESSONS).split()[-2]}"
        as_of = FIRST_DAY + timedelta(days=rng.randrange(DAYS_SPANNED)) if rng.random() < 0.25 else None
        queries.append(Query(f"{symbol} {words}", symbol, as_of))
    return queries


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def time_calls(calls: list, run) -> list[float]:
    """Milliseconds per call."""
    timings = []
    for call in calls:
        started = time.perf_counter()
        run(call)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def build_hybrid(records: list[MemoryRecord]) -> tuple[HybridIndex, float]:
    index = HybridIndex()
    started = time.perf_counter()
    for record in records:
        index.add(record)
    return index, time.perf_counter() - started


def query_tokens(query: Query) -> list[str]:
    return [token for run in query_fields(query.text, query.symbol) for token in run]


def top_ids(scores: dict[int, float], count: int) -> list[int]:
    return [record_id for record_id, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:count]]


def bench_size(size: int, queries: list[Query], rank_bm25_queries: int, seed: int) -> None:
    from rank_bm25 import BM25Okapi

    records = synthetic_records(size, seed)
    index, build_seconds = build_hybrid(records)
    index.search(queries[0].text, symbol=queries[0].symbol)  # first use converts the postings to numpy
    ours = time_calls(queries, lambda query: index.search(query.text, k=5, symbol=query.symbol, as_of=query.as_of))

    started = time.perf_counter()
    corpus = [[token for run in record_fields(record) for token in run] for record in records]
    okapi = BM25Okapi(corpus)
    okapi_build_seconds = time.perf_counter() - started
    theirs_queries = queries[:rank_bm25_queries]
    theirs = time_calls(theirs_queries, lambda query: okapi.get_scores(query_tokens(query)))

    overlaps = []
    for query in theirs_queries:
        mine = top_ids(index.bm25_scores(query.text, symbol=query.symbol), 10)
        scores = okapi.get_scores(query_tokens(query))
        theirs_top = top_ids({records[row].id: float(score) for row, score in enumerate(scores) if score > 0}, 10)
        overlaps.append(len(set(mine) & set(theirs_top)) / 10)

    distinct_tokens = len({token for tokens in corpus for token in tokens})
    print(f"\n{size:,} records ({distinct_tokens:,} distinct tokens)")
    per_record = build_seconds / size * 1e6
    print(f"  HybridIndex build, incremental add   {build_seconds:7.2f} s  ({per_record:.1f} µs/record)")
    print(f"  rank_bm25   build, BM25Okapi(corpus) {okapi_build_seconds:7.2f} s")
    print_latency(f"HybridIndex search k=5, {len(ours)} queries", ours)
    print_latency(f"rank_bm25   get_scores, {len(theirs)} queries", theirs)
    slower_p50 = percentile(theirs, 0.5) / percentile(ours, 0.5)
    slower_p95 = percentile(theirs, 0.95) / percentile(ours, 0.95)
    print(f"  rank_bm25 / HybridIndex              p50 {slower_p50:6.1f}×      p95 {slower_p95:6.1f}×")
    overlap = statistics.mean(overlaps)
    print(f"  BM25 top-10 overlap with rank_bm25   {overlap:.0%} (the idf variants differ: see the docstring)")


def print_latency(label: str, milliseconds: list[float]) -> None:
    p50, p95 = percentile(milliseconds, 0.5), percentile(milliseconds, 0.95)
    print(f"  {label:<36} p50 {p50:8.3f} ms  p95 {p95:8.3f} ms")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--rank-bm25-queries", type=int, nargs="+", default=[200, 20], help="queries timed for rank_bm25, per size"
    )
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def main() -> None:
    arguments = parse_arguments()
    queries = synthetic_queries(arguments.queries, arguments.seed)
    budgets = arguments.rank_bm25_queries + [arguments.rank_bm25_queries[-1]] * len(arguments.sizes)
    print(f"Hybrid memory index vs rank_bm25; seed {arguments.seed}; a quarter of the queries carry as_of.")
    print("rank_bm25 scans every document per query term, so it is timed on fewer queries at large sizes.")
    for size, budget in zip(arguments.sizes, budgets, strict=False):
        bench_size(size, queries, min(budget, len(queries)), arguments.seed)


if __name__ == "__main__":
    main()
