"""Retrieval uses a memory record's weight: the fused score is multiplied by it, so hindsight
(weight 1.5) lifts a lesson above an equally relevant one, and the desk's index sees a weight
that changes after it was built."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from agents import recording
from agents.domain.memory import RRF_K, HybridIndex, MemoryRecord, fuse_rankings
from agents.models import MemoryEntry

DAY = dt.date(2025, 3, 3)


def record(record_id: int, text: str, *, weight: float = 1.0) -> MemoryRecord:
    return MemoryRecord(
        id=record_id, kind="review", symbol="TCS", text=text, tags={"outcome": "win"}, created_on=DAY, weight=weight
    )


def test_a_weighted_record_outranks_an_equal_unweighted_one() -> None:
    index = HybridIndex()
    index.add_many([record(1, "Breakout on volume held the trend."), record(2, "Breakout on volume held the trend.")])
    assert [hit.record.id for hit in index.search("breakout volume", k=2)] == [1, 2]  # a tie goes to the lower id

    weighted = HybridIndex()
    weighted.add_many(
        [record(1, "Breakout on volume held the trend."), record(2, "Breakout on volume held the trend.", weight=1.5)]
    )
    hits = weighted.search("breakout volume", k=2)

    assert [hit.record.id for hit in hits] == [2, 1]
    # Ranks stay unweighted (the tie put id 2 second in both lists); the weight multiplies the fusion.
    assert (hits[0].bm25_rank, hits[0].dense_rank) == (2, 2)
    assert hits[0].score == pytest.approx(1.5 * (1 / (RRF_K + hits[0].bm25_rank) + 1 / (RRF_K + hits[0].dense_rank)))


def test_a_weight_does_not_lift_a_record_that_shares_no_query_term() -> None:
    index = HybridIndex()
    index.add_many([record(1, "Gap fill after results."), record(2, "Breakout on volume.", weight=5.0)])

    assert [hit.record.id for hit in index.search("gap results", k=5)] == [1]


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf")])
def test_a_record_weight_must_be_a_positive_number(weight: float) -> None:
    with pytest.raises(ValueError, match="weight"):
        record(1, "anything", weight=weight)


def fuse_by_hand(first: np.ndarray, second: np.ndarray, ids: np.ndarray, weights: np.ndarray, k: int) -> list[int]:
    def ranks(scores: np.ndarray) -> dict[int, int]:
        order = sorted(range(len(ids)), key=lambda position: (-scores[position], ids[position]))
        return {position: rank for rank, position in enumerate(order, start=1)}

    first_ranks, second_ranks = ranks(first), ranks(second)
    fused = {
        position: weights[position] * (1 / (RRF_K + first_ranks[position]) + 1 / (RRF_K + second_ranks[position]))
        for position in range(len(ids))
    }
    return [int(ids[position]) for position in sorted(fused, key=lambda p: (-fused[p], ids[p]))[:k]]


@pytest.mark.parametrize("k", [1, 5, 12])
@pytest.mark.parametrize("spread", [1.5, 3.0])
def test_weighted_fusion_over_many_candidates_equals_ranking_every_candidate(k: int, spread: float) -> None:
    rng = np.random.default_rng(k)
    count = 4000  # far more than four heads: the pruned path
    ids = rng.permutation(count) * 3 + 1
    first = np.round(rng.random(count), 2)
    second = 1 - first + rng.normal(0, 0.05, count)
    weights = np.where(rng.random(count) < 0.1, spread, 1.0)

    fused = fuse_rankings(first, second, ids, k, weights=weights)

    assert [int(ids[rank.position]) for rank in fused] == fuse_by_hand(first, second, ids, weights, k)


def test_weights_must_pair_with_the_candidates() -> None:
    with pytest.raises(ValueError, match="weights"):
        fuse_rankings(np.array([1.0, 2.0]), np.array([2.0, 1.0]), np.array([1, 2]), 1, weights=np.array([1.0]))


@pytest.mark.django_db
def test_the_desk_index_sees_a_weight_raised_after_it_was_built() -> None:
    recording.memory_cache.reset()
    first, second = (
        MemoryEntry.objects.create(kind="review", symbol="TCS", text="Breakout on volume held.", created_on=DAY)
        for _ in range(2)
    )
    before = recording.memory_search("breakout volume", symbol="TCS", as_of=DAY)
    assert [hit.record.id for hit in before] == [first.pk, second.pk]

    MemoryEntry.objects.filter(pk=second.pk).update(weight=1.5, tags={"final_pnl": "120.00"})
    after = recording.memory_search("breakout volume", symbol="TCS", as_of=DAY)

    assert [hit.record.id for hit in after] == [second.pk, first.pk]
    assert after[0].record.weight == 1.5 and after[0].record.tags == {"final_pnl": "120.00"}
    recording.memory_cache.reset()
