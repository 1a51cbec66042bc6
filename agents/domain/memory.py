"""The default memory store: a hybrid retriever over past reviews and notes. Pure; no Django.

Every agent may ask for the past records most relevant to its current prompt. Two rankings are
computed over the same candidates and fused:

- BM25 (Okapi, k1=1.5, b=0.75) over word tokens, served from an inverted index so a query only
  touches the postings of its own terms;
- cosine similarity of hashed dense vectors (signed feature hashing of unigrams and bigrams,
  L2-normalised), which rewards shared phrasing such as "volume confirmation" over loose words.

The rankings are fused with Reciprocal Rank Fusion, ``1/(60 + bm25_rank) + 1/(60 + dense_rank)``,
and the fused score is multiplied by the record's ``weight`` (1.0 unless hindsight raised it: a
position retrospective sets 1.5 on the lesson it re-read), so of two equally relevant records the
weightier comes first. The ranks themselves are unweighted.

Rules the callers rely on:

- Relevance floor: a record is a candidate only if it shares at least one query token after
  stop-word removal, so an unrelated note can never reach a prompt however close its vector is.
- ``as_of`` replays see the index exactly as it stood at the end of that day: later records are
  excluded and the BM25 statistics (document count, document frequencies, average length) are
  counted over the visible records only, so a replay scores like an index built back then.
- ``scopes`` filters: a record belongs to one scope ("live", or "replay:<account id>" for the
  lessons of one history replay) and a search given scopes reads those only, with BM25 statistics
  counted over them, exactly as ``as_of`` does. No scopes means the whole index.
- ``symbol`` boosts, it does not filter: the symbol's tokens are appended to the query. Records of
  that symbol (whose symbol is indexed as a token) therefore become candidates, gain BM25 weight
  and usually cosine too; records of other symbols still surface when they share other terms.
- Deterministic: every tie is broken by record id, and hashing uses blake2b, never ``hash()``,
  so results do not depend on PYTHONHASHSEED or on whether records were added one by one.

The index only grows (the reviewer appends a record per closed position) and is not thread-safe:
each worker process keeps its own.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

import numpy as np

BM25_K1 = 1.5
BM25_B = 0.75
RRF_K = 60
DEFAULT_DIMENSIONS = 256
LIVE_SCOPE = "live"
MEMORY_BLOCK_HEADING = "Relevant past notes:"

# Small on purpose: words a trader uses to mean something ("up", "down", "above", "below",
# "not", "no", "against") are kept. One string reads better than seventy quoted words.
STOP_WORDS = frozenset(
    """
    a an and are as at be been but by did do does for from had has have he her his i if in into
    is it its me my of on or our s she so t than that the their them then there these they this
    those to too us was we were what when where which while who will with would you your
    """.split()  # noqa: SIM905
)

# Letters and digits in any script; punctuation, symbols such as ₹ and underscores split words.
_WORD = re.compile(r"[^\W_]+")
_INITIAL_CAPACITY = 1024


@dataclass(frozen=True)
class MemoryRecord:
    id: int
    kind: str
    symbol: str | None
    text: str
    tags: dict[str, str] = field(hash=False)  # a dict cannot be hashed; the id identifies the record
    created_on: date
    scope: str = LIVE_SCOPE  # "live", or replay_scope(account id) for a replay's own lessons
    weight: float = 1.0  # retrieval weight: multiplies the fused score; hindsight raises it

    def __post_init__(self) -> None:
        if not (isinstance(self.weight, int | float) and math.isfinite(self.weight) and self.weight > 0):
            raise ValueError(f"memory record {self.id}: weight must be a positive number, got {self.weight!r}")


def replay_scope(account_id: int) -> str:
    """The scope of the lessons one replay account writes: only that replay reads them."""
    return f"replay:{account_id}"


@dataclass(frozen=True)
class MemoryHit:
    record: MemoryRecord
    score: float  # the fused RRF score times the record's weight
    bm25_rank: int  # 1-based, among this query's candidates
    dense_rank: int  # 1-based, among this query's candidates


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens in order, stop words removed."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOP_WORDS]


def record_fields(record: MemoryRecord) -> list[list[str]]:
    """The record's token runs: its text, its symbol, then each tag value in key order.

    Kept as separate runs so bigrams never span two fields (a tag value followed by the next
    tag's value is not a phrase anyone wrote). Tag keys and the kind are not indexed: a query
    says "loss", not "outcome", and "review" would match nearly every record.
    """
    tag_runs = [tokenize(value) for _, value in sorted(record.tags.items())]
    return [tokenize(record.text), tokenize(record.symbol or ""), *tag_runs]


def query_fields(query: str, symbol: str | None) -> list[list[str]]:
    return [tokenize(query), tokenize(symbol or "")]


def format_memory_block(hits: Iterable[MemoryHit]) -> str:
    """The prompt prefix listing the hits, one line each, or "" when there are none."""
    lines = [_memory_line(hit.record) for hit in hits]
    if not lines:
        return ""
    return "\n".join([MEMORY_BLOCK_HEADING, *lines]) + "\n"


def _memory_line(record: MemoryRecord) -> str:
    # Newlines inside a model-written critique would break the one-line-per-note layout.
    text = " ".join(record.text.split())
    subject = f" {record.symbol}:" if record.symbol else ""
    line = f"- [{record.kind}]{subject} {text}"
    labels = _tag_labels(record)
    return f"{line} [{' | '.join(labels)}]" if labels else line


def _tag_labels(record: MemoryRecord) -> list[str]:
    """Direction and symbol first ("LONG RELIANCE"), then the other tags as key=value by key."""
    direction = record.tags.get("direction", "").upper()
    headline = " ".join(part for part in (direction, record.symbol or "") if part)
    others = [f"{key}={value}" for key, value in sorted(record.tags.items()) if key != "direction"]
    return [headline, *others] if headline else others


@lru_cache(maxsize=1 << 18)
def feature_slot(feature: str, dimensions: int) -> tuple[int, float]:
    """Where a feature lands in the hashed vector, and with which sign.

    blake2b rather than ``hash()`` so the slot is the same in every process. The sign comes from
    a different part of the digest than the slot so collisions cancel out on average instead of
    piling up.
    """
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    sign = -1.0 if digest >> 63 else 1.0
    return digest % dimensions, sign


def hashed_vector(fields: list[list[str]], dimensions: int) -> dict[int, float]:
    """The L2-normalised hashed vector of unigrams and in-field bigrams, as slot → weight.

    Sparse on purpose: a record touches a few dozen of the slots, and search reads only the
    slots the query touches. Two features share a slot one time in ``dimensions``; with opposite
    signs they cancel, which is the price of a fixed-size vector and why BM25 is fused in too.
    """
    weights: dict[int, float] = {}
    for feature in _features(fields):
        slot, sign = feature_slot(feature, dimensions)
        weights[slot] = weights.get(slot, 0.0) + sign
    norm = math.sqrt(sum(weight * weight for weight in weights.values()))
    if norm == 0.0:
        return {}
    return {slot: weight / norm for slot, weight in weights.items() if weight != 0.0}


def _features(fields: list[list[str]]) -> list[str]:
    unigrams = [token for run in fields for token in run]
    # A space cannot occur inside a token, so a bigram never collides with a unigram's name.
    bigrams = [f"{first} {second}" for run in fields for first, second in itertools.pairwise(run)]
    return unigrams + bigrams


class _GrowableArray:
    """A numpy array that doubles its buffer as it fills, so appends are amortised O(1)."""

    def __init__(self, dtype: type[np.generic]) -> None:
        self._buffer = np.zeros(_INITIAL_CAPACITY, dtype=dtype)
        self.size = 0

    def append(self, value: float) -> None:
        if self.size == len(self._buffer):
            self._buffer = np.concatenate([self._buffer, np.zeros_like(self._buffer)])
        self._buffer[self.size] = value
        self.size += 1

    def view(self) -> np.ndarray:
        return self._buffer[: self.size]


@dataclass
class _Postings:
    """The documents holding one token, with the token's count in each.

    Appends go to cheap ``array``s; the numpy copies search needs are made on first use after a
    change and reused until the next append, so a burst of adds costs no numpy work.
    """

    rows: array = field(default_factory=lambda: array("q"))
    counts: array = field(default_factory=lambda: array("d"))
    _cached: tuple[np.ndarray, np.ndarray] | None = None

    def append(self, row: int, count: int) -> None:
        self.rows.append(row)
        self.counts.append(count)
        self._cached = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cached is None:
            self._cached = (np.array(self.rows, dtype=np.int64), np.array(self.counts, dtype=np.float64))
        return self._cached


class HybridIndex:
    """BM25 + hashed dense vectors over memory records, fused with RRF. Grows incrementally.

    Records are stored in rows in the order they are added. The dense vectors live in one
    (dimensions × capacity) float32 matrix, slot-major, so scoring a query reads only the rows
    of the slots the query touches: a product of the query's few non-zero weights with those
    rows, restricted to the candidate columns. The matrix costs ``4 × dimensions`` bytes a record
    (1 KiB at 256 dimensions, about 130 MB of capacity at 100k records).
    """

    def __init__(self, *, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        self.dimensions = dimensions
        self._records: list[MemoryRecord] = []
        self._row_by_id: dict[int, int] = {}
        self._ids = _GrowableArray(np.int64)
        self._days = _GrowableArray(np.int64)  # date.toordinal(), for as_of
        self._scopes = _GrowableArray(np.int64)  # a small code per scope name, for scopes
        self._scope_codes: dict[str, int] = {}
        self._lengths = _GrowableArray(np.float64)
        self._weights = _GrowableArray(np.float64)
        self._total_length = 0
        self._postings: dict[str, _Postings] = {}
        self._vectors = np.zeros((dimensions, _INITIAL_CAPACITY), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: MemoryRecord) -> None:
        if record.id in self._row_by_id:
            raise ValueError(f"memory record {record.id} is already indexed")
        row = len(self._records)
        fields = record_fields(record)
        tokens = [token for run in fields for token in run]
        for token, count in Counter(tokens).items():
            postings = self._postings.get(token)
            if postings is None:
                postings = self._postings[token] = _Postings()
            postings.append(row, count)
        self._store_vector(row, hashed_vector(fields, self.dimensions))
        self._records.append(record)
        self._row_by_id[record.id] = row
        self._ids.append(record.id)
        self._days.append(record.created_on.toordinal())
        self._scopes.append(self._scope_codes.setdefault(record.scope, len(self._scope_codes)))
        self._lengths.append(len(tokens))
        self._weights.append(record.weight)
        self._total_length += len(tokens)

    def add_many(self, records: Iterable[MemoryRecord]) -> None:
        for record in records:
            self.add(record)

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        symbol: str | None = None,
        as_of: date | None = None,
        scopes: Iterable[str] | None = None,
    ) -> list[MemoryHit]:
        """The k most relevant records, best first; [] when nothing shares a query term."""
        fields = query_fields(query, symbol)
        terms = [token for run in fields for token in run]
        if k < 1 or not terms:
            return []
        rows, bm25 = self._bm25(terms, self._visible(as_of, scopes))
        if len(rows) == 0:
            return []
        dense = self._cosines(hashed_vector(fields, self.dimensions), rows)
        fused = fuse_rankings(bm25, dense, self._ids.view()[rows], k, weights=self._weights.view()[rows])
        return [
            MemoryHit(
                record=self._records[rows[best.position]],
                score=best.score,
                bm25_rank=best.first_rank,
                dense_rank=best.second_rank,
            )
            for best in fused
        ]

    def bm25_scores(
        self,
        query: str,
        *,
        symbol: str | None = None,
        as_of: date | None = None,
        scopes: Iterable[str] | None = None,
    ) -> dict[int, float]:
        """Record id → BM25 score for every candidate of the query; for tests and benchmarks."""
        terms = [token for run in query_fields(query, symbol) for token in run]
        rows, scores = self._bm25(terms, self._visible(as_of, scopes))
        ids = self._ids.view()[rows]
        return {int(record_id): float(score) for record_id, score in zip(ids, scores, strict=True)}

    def _store_vector(self, row: int, weights: dict[int, float]) -> None:
        capacity = self._vectors.shape[1]
        if row == capacity:
            grown = np.zeros((self.dimensions, capacity * 2), dtype=np.float32)
            grown[:, :capacity] = self._vectors
            self._vectors = grown
        for slot, weight in weights.items():
            self._vectors[slot, row] = weight

    def _visible(self, as_of: date | None, scopes: Iterable[str] | None) -> np.ndarray | None:
        """Which rows a search may see (created by ``as_of``, in one of ``scopes``); None: all."""
        visible = None
        if as_of is not None:
            visible = self._days.view() <= as_of.toordinal()
        if scopes is not None:
            codes = [self._scope_codes[scope] for scope in set(scopes) if scope in self._scope_codes]
            in_scope = np.isin(self._scopes.view(), np.array(codes, dtype=np.int64))
            visible = in_scope if visible is None else visible & in_scope
        return visible

    def _bm25(self, terms: list[str], visible: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Candidate rows (ascending) and their BM25 scores, visiting only the terms' postings.

        Duplicate query terms count once per occurrence (so a symbol that is both typed and
        passed as ``symbol`` weighs double), as in the usual Okapi sum over the query.
        """
        document_count, average_length = self._collection_stats(visible)
        if document_count == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        lengths = self._lengths.view()
        scores = np.zeros(len(self._records))
        touched = np.zeros(len(self._records), dtype=bool)
        # Sorted so floating-point sums run in the same order however the query was worded.
        for term, query_count in sorted(Counter(terms).items()):
            postings = self._postings.get(term)
            if postings is None:
                continue
            rows, counts = postings.arrays()
            if visible is not None:
                seen = visible[rows]
                rows, counts = rows[seen], counts[seen]
            if len(rows) == 0:
                continue
            idf = math.log(1.0 + (document_count - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths[rows] / average_length)
            scores[rows] += query_count * idf * counts * (BM25_K1 + 1.0) / (counts + norm)
            touched[rows] = True
        candidates = np.flatnonzero(touched)
        return candidates, scores[candidates]

    def _collection_stats(self, visible: np.ndarray | None) -> tuple[int, float]:
        """Document count and average length over the visible records."""
        if visible is None:
            count = len(self._records)
            return count, (self._total_length / count if count else 0.0)
        count = int(visible.sum())
        if count == 0:
            return 0, 0.0
        # Zero only when no visible record has a token, and then no posting is visible either.
        return count, float(self._lengths.view()[visible].sum()) / count

    def _cosines(self, query_weights: dict[int, float], rows: np.ndarray) -> np.ndarray:
        """Cosine of the query with each candidate; both sides are unit vectors.

        Accumulated slot by slot in float64, so a record's score never depends on which other
        records are candidates (a BLAS product may block differently with the matrix shape).
        """
        cosines = np.zeros(len(rows))
        for slot, weight in query_weights.items():
            cosines += np.float64(weight) * self._vectors[slot, rows]  # float64 product, no float32 copy
        return cosines


@dataclass(frozen=True)
class FusedRank:
    position: int  # index into the score arrays given to fuse_rankings
    score: float
    first_rank: int
    second_rank: int


def fuse_rankings(
    first: np.ndarray, second: np.ndarray, ids: np.ndarray, k: int, *, weights: np.ndarray | None = None
) -> list[FusedRank]:
    """The k best candidates by Reciprocal Rank Fusion of two score arrays, best first.

    Each array ranks the candidates higher score first, ties to the lower id; a candidate's fused
    score is ``w · (1/(RRF_K + first_rank) + 1/(RRF_K + second_rank))``, with ``w`` its entry of
    ``weights`` (positive; 1 for every candidate when None), ties again to the lower id.

    The result is exactly that of ranking every candidate in both lists, but large candidate sets
    (a query with "long" in it touches half the index) are not fully sorted. Only the head of each
    list is: ``depth = ⌈2·(w_max/w_min)·(RRF_K + k)⌉ − RRF_K`` places (``RRF_K + 2k`` when every
    weight is equal). A candidate outside both heads scores at most ``w_max · 2/(RRF_K + depth + 1)``,
    which is below ``w_min/(RRF_K + k)``, less than each of the first list's top k already scores,
    so it cannot make the cut. For candidates in one head only, the other rank is bounded (deeper
    than the head), and it is counted exactly only for those whose best case could still reach the
    k-th best worst case.
    """
    weight = np.ones(len(ids)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(weight) != len(ids) or (len(weight) and not (np.all(np.isfinite(weight)) and weight.min() > 0)):
        raise ValueError("weights must be one positive finite number per candidate")
    depth = _head_depth(weight, k)
    if len(ids) <= 4 * depth:
        return _fuse_every_candidate(first, second, ids, k, weight)
    first_ranks = _head_ranks(first, ids, depth)
    second_ranks = _head_ranks(second, ids, depth)
    contenders = _contenders(first_ranks, second_ranks, len(ids), depth, k, weight)
    fused = []
    for position in contenders:
        first_rank = first_ranks.get(position) or _rank_of(first, ids, position)
        second_rank = second_ranks.get(position) or _rank_of(second, ids, position)
        score = float(weight[position]) * (_rrf(first_rank) + _rrf(second_rank))
        fused.append(FusedRank(position, score, first_rank, second_rank))
    fused.sort(key=lambda candidate: (-candidate.score, int(ids[candidate.position])))
    return fused[:k]


def _head_depth(weight: np.ndarray, k: int) -> int:
    """How deep each list's head must go for the cut to be exact (see ``fuse_rankings``)."""
    if len(weight) == 0:
        return RRF_K + 2 * k
    spread = float(weight.max()) / float(weight.min())
    if spread == 1.0:
        return RRF_K + 2 * k
    return math.ceil(2 * spread * (RRF_K + k)) - RRF_K


def _rrf(rank: int) -> float:
    return 1.0 / (RRF_K + rank)


def _fuse_every_candidate(
    first: np.ndarray, second: np.ndarray, ids: np.ndarray, k: int, weight: np.ndarray
) -> list[FusedRank]:
    first_ranks = _ranks(first, ids)
    second_ranks = _ranks(second, ids)
    scores = weight * (1.0 / (RRF_K + first_ranks) + 1.0 / (RRF_K + second_ranks))
    best = np.lexsort((ids, -scores))[:k]
    return [
        FusedRank(int(position), float(scores[position]), int(first_ranks[position]), int(second_ranks[position]))
        for position in best
    ]


def _ranks(scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """1-based rank of every score, higher first, ties to the lower id."""
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[np.lexsort((ids, -scores))] = np.arange(1, len(scores) + 1)
    return ranks


def _head_ranks(scores: np.ndarray, ids: np.ndarray, depth: int) -> dict[int, int]:
    """Position → rank for the top ``depth`` places, found by partitioning, not a full sort."""
    threshold = np.partition(scores, len(scores) - depth)[len(scores) - depth]
    above = np.flatnonzero(scores > threshold)
    level = np.flatnonzero(scores == threshold)
    wanted = depth - len(above)
    if len(level) > wanted:
        # Ties at the threshold go to the lowest ids; ids are distinct, so the partition is exact.
        level = level[np.argpartition(ids[level], wanted - 1)[:wanted]]
    head = np.concatenate([above, level])
    ordered = head[np.lexsort((ids[head], -scores[head]))]
    return {int(position): rank for rank, position in enumerate(ordered, start=1)}


def _contenders(
    first_ranks: dict[int, int], second_ranks: dict[int, int], count: int, depth: int, k: int, weight: np.ndarray
) -> list[int]:
    """Head members whose best possible fused score reaches the k-th best worst case.

    A rank missing from a head lies between ``depth + 1`` and ``count``. Float division, addition
    and multiplication by a positive weight are monotonic, so the float bounds hold for the float
    scores computed later.
    """
    union = sorted(first_ranks.keys() | second_ranks.keys())
    lows = [
        float(weight[position]) * (_rrf(first_ranks.get(position, count)) + _rrf(second_ranks.get(position, count)))
        for position in union
    ]
    highs = [
        float(weight[position])
        * (_rrf(first_ranks.get(position, depth + 1)) + _rrf(second_ranks.get(position, depth + 1)))
        for position in union
    ]
    floor = sorted(lows, reverse=True)[k - 1]
    return [position for position, high in zip(union, highs, strict=True) if high >= floor]


def _rank_of(scores: np.ndarray, ids: np.ndarray, position: int) -> int:
    """The exact rank of one candidate, by counting who beats it."""
    score = scores[position]
    ahead = np.count_nonzero(scores > score) + np.count_nonzero((scores == score) & (ids < ids[position]))
    return int(ahead) + 1
