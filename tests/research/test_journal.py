"""The journal: every proposal, trial and decision appended as JSON lines; a replay from the journal
alone reproduces every decision, and an edited journal is caught at the first changed decision."""

from __future__ import annotations

import json

import pytest

from agents.domain.llm import ModelChoice
from agents.roles import OfflineModel
from research.holdout import reserve
from research.journal import Journal, read_journal, replay_journal, session_header
from research.loop import finish, run_search
from research.proposers import FixedProposer, LLMProposer, OptunaProposer
from research.signals import SIGNALS
from tests.research.loop_support import CONFIG, spec, synthetic_bars, tune


def _session(path, proposer, *, max_trials=8, **options):
    bars = {"AAA": synthetic_bars(600), "BBB": synthetic_bars(600, seed=2, symbol="BBB")}
    search, holdout = reserve(bars, 0.2, CONFIG)
    session = spec(max_trials=max_trials, **options)
    journal = Journal(path)
    journal.append(session_header(session, search, proposer=proposer.name, spends_tokens=proposer.spends_tokens))
    result = run_search(session, search, proposer, on_event=journal.append)
    finish(session, result, holdout, on_event=journal.append)
    return result


def _rewrite(path, change):
    events = read_journal(path)
    for event in events:
        change(event)
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


@pytest.mark.parametrize(
    "make",
    [
        lambda: OptunaProposer(3, SIGNALS),
        lambda: LLMProposer(ModelChoice(OfflineModel(), "offline-rules", "offline-rules")),
        lambda: FixedProposer([tune("sma_crossover", fast=10, slow=50), tune("sma_crossover", rationale="", fast=5)]),
    ],
    ids=["optuna", "offline-llm", "fixed-with-a-rejection"],
)
def test_a_replay_reproduces_every_decision(tmp_path, make):
    path = tmp_path / "session.jsonl"
    result = _session(path, make())
    events = read_journal(path)
    assert [event["event"] for event in events][:3] == ["session", "proposal", "trial"]
    assert events[-1]["event"] == "holdout"
    assert sum(event["event"] == "trial" for event in events) == len(result.trials)
    report = replay_journal(path)
    assert report.ok, report.mismatch
    assert report.checked == len(result.trials)


def test_the_token_budget_stop_replays_too(tmp_path):
    proposals = [tune("sma_crossover", fast=5 * index, slow=100) for index in range(1, 6)]
    path = tmp_path / "tokens.jsonl"
    result = _session(path, FixedProposer(proposals, tokens=[400] * 5), max_tokens=1000)
    assert result.stop_reason.startswith("token budget")
    assert replay_journal(path).ok


def test_an_edited_decision_is_caught(tmp_path):
    path = tmp_path / "session.jsonl"
    _session(path, OptunaProposer(3, SIGNALS))

    def flip(event):
        if event["event"] == "trial" and event["number"] == 3:
            event["decision"] = "kept" if event["decision"] != "kept" else "discarded"

    _rewrite(path, flip)
    report = replay_journal(path)
    assert not report.ok
    assert report.checked == 2
    assert report.mismatch.startswith("trial 3: decision is")


def test_an_edited_proposal_is_caught_at_its_trial(tmp_path):
    path = tmp_path / "session.jsonl"
    _session(path, FixedProposer([tune("sma_crossover", fast=10, slow=50), tune("sma_crossover", fast=20, slow=60)]))

    def edit(event):
        if event["event"] == "proposal" and event["number"] == 2:
            event["proposal"]["params"]["fast"] = 25

    _rewrite(path, edit)
    report = replay_journal(path)
    assert not report.ok and report.mismatch.startswith("trial 2: params is")


def test_edited_search_data_is_caught_by_its_hash(tmp_path):
    path = tmp_path / "session.jsonl"
    _session(path, FixedProposer([tune("sma_crossover", fast=10, slow=50)]))

    def edit(event):
        if event["event"] == "session":
            event["search_data"]["AAA"]["close"][100] *= 1.01

    _rewrite(path, edit)
    report = replay_journal(path)
    assert not report.ok and "SHA-256" in report.mismatch


def test_a_removed_trial_line_is_caught(tmp_path):
    path = tmp_path / "session.jsonl"
    _session(path, OptunaProposer(3, SIGNALS))
    lines = path.read_text().splitlines(keepends=True)
    last_trial = max(index for index, line in enumerate(lines) if '"event": "trial"' in line)
    path.write_text("".join(lines[:last_trial] + lines[last_trial + 1 :]))
    report = replay_journal(path)
    assert not report.ok and "holds 7 trials but the replay made 8" in report.mismatch
