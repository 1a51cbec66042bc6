from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from agents.domain.memory import (
    BM25_B,
    BM25_K1,
    RRF_K,
    HybridIndex,
    MemoryHit,
    MemoryRecord,
    format_memory_block,
    fuse_rankings,
    tokenize,
)

ROOT = Path(__file__).resolve().parents[3]
DAY = date(2025, 1, 6)


def note(record_id: int, text: str, *, symbol: str | None = None, on: date = DAY, **tags: str) -> MemoryRecord:
    return MemoryRecord(id=record_id, kind="review", symbol=symbol, text=text, tags=tags, created_on=on)


def index_of(*records: MemoryRecord) -> HybridIndex:
    index = HybridIndex()
    index.add_many(records)
    return index


def hit_ids(hits: list[MemoryHit]) -> list[int]:
    return [hit.record.id for hit in hits]


def summary(hits: list[MemoryHit]) -> list[tuple[int, float, int, int]]:
    return [(hit.record.id, hit.score, hit.bm25_rank, hit.dense_rank) for hit in hits]


def desk_records(count: int, seed: int) -> list[MemoryRecord]:
    """A small seeded mix of reviews; ids shuffled so row order is not id order."""
    rng = random.Random(seed)
    setups = ["breakout", "RSI divergence", "earnings gap", "support bounce", "volume climax", "gap fill"]
    stories = ["hit target", "reversed at resistance", "stopped out on weak results", "chopped sideways"]
    lessons = ["wait for volume confirmation", "avoid entries before earnings", "respect the market trend"]
    ids = rng.sample(range(1, 10 * count), count)
    records = []
    for record_id in ids:
        text = f"Entered on a {rng.choice(setups)}; {rng.choice(stories)}. Lesson: {rng.choice(lessons)}."
        records.append(
            note(
                record_id,
                text,
                symbol=rng.choice(["RELIANCE", "TCS", "INFY", "SBIN"]),
                on=DAY + timedelta(days=rng.randrange(60)),
                direction=rng.choice(["LONG", "SHORT"]),
                outcome=rng.choice(["win", "loss", "scratch"]),
            )
        )
    return records


QUERIES = [
    ("breakout volume confirmation", None),
    ("RSI divergence reversed", "TCS"),
    ("earnings gap loss", "RELIANCE"),
    ("short resistance", None),
    ("long", "SBIN"),
]


def test_tokenize_lowercases_splits_punctuation_and_drops_stop_words() -> None:
    assert tokenize("The RSI-divergence was NOT confirmed, at ₹2,450.") == [
        "rsi",
        "divergence",
        "not",
        "confirmed",
        "2",
        "450",
    ]


def test_a_record_sharing_no_query_term_never_surfaces_even_when_it_is_the_only_one() -> None:
    index = index_of(note(1, "Chased a breakout; the stock reversed.", symbol="RELIANCE", direction="LONG"))

    assert index.search("earnings gap on heavy volume") == []
    assert index.search("the of and") == []  # nothing left after stop words
    assert index.bm25_scores("earnings gap on heavy volume") == {}


def test_only_records_sharing_a_query_term_are_candidates() -> None:
    index = index_of(
        note(1, "Chased a breakout; the stock reversed."),
        note(2, "Earnings gap held for four sessions."),
        note(3, "Refinery margins improved."),
    )

    assert set(hit_ids(index.search("breakout earnings", k=10))) == {1, 2}


def test_symbol_and_tag_values_are_indexed_as_tokens() -> None:
    index = index_of(
        note(1, "Chased a breakout.", symbol="RELIANCE", direction="LONG", outcome="loss", signal="falsified"),
        note(2, "Held the trend.", symbol="TCS", direction="SHORT", outcome="win", signal="realized"),
    )

    assert hit_ids(index.search("reliance")) == [1]
    assert hit_ids(index.search("falsified")) == [1]
    assert hit_ids(index.search("short win")) == [2]
    assert index.search("outcome signal direction") == []  # tag keys are not indexed


def okapi(term_count: int, documents_with_term: int, length: int, *, documents: int, average_length: float) -> float:
    idf = math.log(1 + (documents - documents_with_term + 0.5) / (documents_with_term + 0.5))
    return idf * term_count * (BM25_K1 + 1) / (term_count + BM25_K1 * (1 - BM25_B + BM25_B * length / average_length))


def test_bm25_scores_match_a_hand_computation_and_the_rarer_term_ranks_higher() -> None:
    index = index_of(
        note(1, "breakout volume confirmation"),  # 3 tokens, has the rare "volume"
        note(2, "breakout failed reversal"),  # 3 tokens, has the commoner "reversal"
        note(3, "breakout reversal"),  # 2 tokens
    )
    corpus = {"documents": 3, "average_length": 8 / 3}

    scores = index.bm25_scores("volume reversal")

    assert scores == pytest.approx(
        {
            1: okapi(1, 1, 3, **corpus),
            2: okapi(1, 2, 3, **corpus),
            3: okapi(1, 2, 2, **corpus),
        }
    )
    assert scores[1] > scores[2]  # same length, one match each: the rarer term wins
    ranks = {hit.record.id: hit.bm25_rank for hit in index.search("volume reversal")}
    assert ranks == {1: 1, 3: 2, 2: 3}


def test_a_repeated_query_term_counts_once_per_occurrence() -> None:
    index = index_of(note(1, "breakout volume"), note(2, "gap fill"))

    once = index.bm25_scores("breakout")[1]

    assert index.bm25_scores("breakout breakout")[1] == pytest.approx(2 * once)


def test_rrf_fuses_two_hand_built_rankings() -> None:
    first = np.array([3.0, 2.0, 1.0])  # ranks ids 10, 20, 30 as 1, 2, 3
    second = np.array([1.0, 3.0, 2.0])  # ranks ids 20, 30, 10 as 1, 2, 3
    ids = np.array([10, 20, 30])

    fused = fuse_rankings(first, second, ids, k=3)

    assert [(int(ids[rank.position]), rank.first_rank, rank.second_rank) for rank in fused] == [
        (20, 2, 1),
        (10, 1, 3),
        (30, 3, 2),
    ]
    assert fused[0].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused[1].score == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 3))


def test_rrf_breaks_score_and_rank_ties_by_the_lower_id() -> None:
    ids = np.array([7, 5])

    fused = fuse_rankings(np.array([2.0, 1.0]), np.array([1.0, 2.0]), ids, k=2)
    ranked_by_equal_scores = fuse_rankings(np.array([1.0, 1.0]), np.array([0.5, 0.5]), ids, k=2)

    assert fused[0].score == fused[1].score
    assert [int(ids[rank.position]) for rank in fused] == [5, 7]
    assert [(rank.first_rank, rank.second_rank) for rank in ranked_by_equal_scores] == [(1, 1), (2, 2)]
    assert [int(ids[rank.position]) for rank in ranked_by_equal_scores] == [5, 7]


def fuse_by_hand(first: np.ndarray, second: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[int, int, int]]:
    def ranks(scores: np.ndarray) -> dict[int, int]:
        order = sorted(range(len(ids)), key=lambda position: (-scores[position], ids[position]))
        return {position: rank for rank, position in enumerate(order, start=1)}

    first_ranks, second_ranks = ranks(first), ranks(second)
    fused = {
        position: 1 / (RRF_K + first_ranks[position]) + 1 / (RRF_K + second_ranks[position])
        for position in range(len(ids))
    }
    best = sorted(fused, key=lambda position: (-fused[position], ids[position]))[:k]
    return [(int(ids[position]), first_ranks[position], second_ranks[position]) for position in best]


@pytest.mark.parametrize("k", [1, 5, 12])
@pytest.mark.parametrize("agreement", ["agree", "disagree", "tied"])
def test_rrf_over_many_candidates_equals_ranking_every_candidate(k: int, agreement: str) -> None:
    rng = np.random.default_rng(k)
    count = 3000
    ids = rng.permutation(count) * 3 + 1
    first = rng.random(count)
    second = {
        "agree": first + rng.normal(0, 0.05, count),
        "disagree": 1 - first + rng.normal(0, 0.05, count),
        "tied": np.round(rng.random(count), 1),  # ten distinct values: ties everywhere
    }[agreement]
    first = np.round(first, 2)  # ties at the head boundary too

    fused = fuse_rankings(first, second, ids, k)

    assert [(int(ids[rank.position]), rank.first_rank, rank.second_rank) for rank in fused] == fuse_by_hand(
        first, second, ids, k
    )


def test_search_scores_are_the_rrf_of_the_reported_ranks() -> None:
    index = index_of(*desk_records(200, seed=3))

    hits = index.search("breakout volume confirmation", k=5, symbol="TCS")

    assert len(hits) == 5
    for hit in hits:
        assert hit.score == pytest.approx(1 / (RRF_K + hit.bm25_rank) + 1 / (RRF_K + hit.dense_rank))
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_the_dense_ranking_rewards_a_shared_phrase() -> None:
    index = index_of(
        note(1, "Confirmation came late, without volume."),
        note(2, "Wait for volume confirmation."),
    )

    ranks = {hit.record.id: hit.dense_rank for hit in index.search("volume confirmation")}

    assert ranks == {2: 1, 1: 2}


def test_adding_records_one_by_one_equals_building_all_at_once() -> None:
    records = desk_records(120, seed=11)
    grown = HybridIndex()
    for position, record in enumerate(records, start=1):
        grown.add(record)
        if position % 25 == 0:  # searching in between must not freeze stale postings
            grown.search("breakout volume", symbol="INFY")
    built = index_of(*records)

    for query, symbol in QUERIES:
        assert summary(grown.search(query, k=8, symbol=symbol)) == summary(built.search(query, k=8, symbol=symbol))
        assert grown.bm25_scores(query, symbol=symbol) == built.bm25_scores(query, symbol=symbol)


def test_as_of_excludes_later_records() -> None:
    index = index_of(
        note(1, "Breakout failed.", on=date(2025, 1, 6)),
        note(2, "Breakout held.", on=date(2025, 1, 7)),
        note(3, "Breakout ran to target.", on=date(2025, 1, 8)),
    )

    assert hit_ids(index.search("breakout", as_of=date(2025, 1, 7))) == [1, 2]
    assert hit_ids(index.search("breakout", as_of=date(2025, 1, 5))) == []
    assert hit_ids(index.search("breakout")) == [1, 2, 3]


def test_as_of_scores_as_if_later_records_had_never_been_added() -> None:
    records = desk_records(150, seed=5)
    cutoff = DAY + timedelta(days=30)
    full = index_of(*records)
    back_then = index_of(*(record for record in records if record.created_on <= cutoff))

    for query, symbol in QUERIES:
        replayed = full.search(query, k=8, symbol=symbol, as_of=cutoff)
        assert replayed
        assert all(hit.record.created_on <= cutoff for hit in replayed)
        assert summary(replayed) == summary(back_then.search(query, k=8, symbol=symbol))


def test_symbol_boosts_that_symbols_records_without_filtering_others() -> None:
    index = index_of(
        note(1, "Chased a breakout.", symbol="TCS"),
        note(2, "Chased a breakout.", symbol="INFY"),
        note(3, "Chased a breakout.", symbol="SBIN"),
    )

    assert hit_ids(index.search("breakout")) == [1, 2, 3]  # a three-way tie goes by id
    boosted = index.search("breakout", symbol="INFY")
    assert hit_ids(boosted) == [2, 1, 3]
    assert (boosted[0].bm25_rank, boosted[0].dense_rank) == (1, 1)


def test_a_symbols_own_records_are_candidates_through_the_symbol_alone() -> None:
    # The symbol's tokens join the query, so a past note on the same stock counts as sharing a term.
    index = index_of(note(1, "Refinery margins improved.", symbol="RELIANCE"), note(2, "Gap fill.", symbol="TCS"))

    assert hit_ids(index.search("breakout", symbol="RELIANCE")) == [1]
    assert index.search("breakout", symbol="INFY") == []


def test_two_fresh_indexes_answer_identically() -> None:
    first, second = index_of(*desk_records(100, seed=9)), index_of(*desk_records(100, seed=9))

    for query, symbol in QUERIES:
        assert summary(first.search(query, symbol=symbol)) == summary(second.search(query, symbol=symbol))


SEARCH_IN_A_FRESH_PROCESS = """
import json, sys
from tests.agents.domain.test_memory import QUERIES, desk_records, index_of, summary
index = index_of(*desk_records(100, seed=9))
json.dump([summary(index.search(query, symbol=symbol)) for query, symbol in QUERIES], sys.stdout)
"""


def test_results_do_not_depend_on_the_python_hash_seed() -> None:
    index = index_of(*desk_records(100, seed=9))
    expected = json.loads(json.dumps([summary(index.search(query, symbol=symbol)) for query, symbol in QUERIES]))

    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", SEARCH_IN_A_FRESH_PROCESS],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert json.loads(result.stdout) == expected


def test_a_record_id_can_only_be_indexed_once() -> None:
    index = index_of(note(1, "Breakout."))

    with pytest.raises(ValueError, match="already indexed"):
        index.add(note(1, "Another breakout."))


def test_k_below_one_and_an_empty_index_return_nothing() -> None:
    assert HybridIndex().search("breakout") == []
    assert index_of(note(1, "Breakout.")).search("breakout", k=0) == []


def test_the_memory_block_lists_hits_with_deterministic_tags() -> None:
    loss = note(
        1,
        "Chased a breakout; stock reversed.\nLesson: wait for volume confirmation.",
        symbol="RELIANCE",
        signal="falsified",
        outcome="loss",
        direction="long",
    )
    plain = MemoryRecord(id=2, kind="note", symbol=None, text="Markets shut for Diwali.", tags={}, created_on=DAY)
    hits = [MemoryHit(loss, 0.03, 1, 1), MemoryHit(plain, 0.02, 2, 2)]

    assert format_memory_block(hits) == (
        "Relevant past notes:\n"
        "- [review] RELIANCE: Chased a breakout; stock reversed. Lesson: wait for volume confirmation."
        " [LONG RELIANCE | outcome=loss | signal=falsified]\n"
        "- [note] Markets shut for Diwali.\n"
    )


def test_the_memory_block_is_empty_without_hits() -> None:
    assert format_memory_block([]) == ""
