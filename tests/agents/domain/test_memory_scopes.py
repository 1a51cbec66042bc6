"""Memory scopes: a live run reads live lessons only; a replay reads the live ones and its own."""

from __future__ import annotations

from datetime import date, timedelta

from agents.domain.memory import LIVE_SCOPE, HybridIndex, MemoryRecord, replay_scope

DAY = date(2025, 1, 6)


def note(record_id: int, text: str, *, scope: str = LIVE_SCOPE, on: date = DAY) -> MemoryRecord:
    return MemoryRecord(id=record_id, kind="review", symbol="TCS", text=text, tags={}, created_on=on, scope=scope)


def test_a_search_reads_only_the_scopes_it_is_given() -> None:
    index = HybridIndex()
    index.add_many(
        [
            note(1, "Breakout failed on weak volume."),
            note(2, "Breakout failed in the replay.", scope=replay_scope(7)),
            note(3, "Breakout failed in another replay.", scope=replay_scope(8)),
        ]
    )

    def ids(scopes) -> list[int]:
        return [hit.record.id for hit in index.search("breakout failed", scopes=scopes)]

    assert ids([LIVE_SCOPE]) == [1]
    assert sorted(ids([LIVE_SCOPE, replay_scope(7)])) == [1, 2]
    assert ids([replay_scope(9)]) == []
    assert sorted(ids(None)) == [1, 2, 3]  # no scope given: the whole index (benchmarks, tools)


def test_a_scoped_search_scores_as_if_the_other_scopes_had_never_been_added() -> None:
    texts = ["breakout held with volume", "breakout failed at resistance", "earnings gap faded", "support bounce"]
    records = [
        note(i, texts[i % len(texts)], scope=LIVE_SCOPE if i % 3 else replay_scope(1), on=DAY + timedelta(days=i))
        for i in range(1, 60)
    ]
    full = HybridIndex()
    full.add_many(records)
    live_only = HybridIndex()
    live_only.add_many(r for r in records if r.scope == LIVE_SCOPE)
    cutoff = DAY + timedelta(days=40)

    scoped = full.search("breakout volume", k=6, scopes=[LIVE_SCOPE], as_of=cutoff)

    assert scoped and all(hit.record.scope == LIVE_SCOPE for hit in scoped)
    expected = live_only.search("breakout volume", k=6, as_of=cutoff)
    assert [(h.record.id, h.score) for h in scoped] == [(h.record.id, h.score) for h in expected]
