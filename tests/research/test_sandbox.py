"""The research hygiene gate and the sandbox for generated strategy code.

Pure tests (no database): each sandbox call starts a real child process with small limits. The
escape corpus lives in ``sandbox_corpus.py``: every entry is refused (statically or when it runs)
and the harm it aims at is checked not to have happened (a marker file in a world-writable folder,
a victim file, a listening socket).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from research import sandbox
from research.sandbox import (
    SandboxLimits,
    SandboxRefused,
    check_source,
    contain_unchecked,
    hygiene_reasons,
    load_strategy_from_code,
)
from research.sandbox_child import synthetic_bars
from research.signals import SIGNALS
from research.signals.base import Bars, ParamRange, SignalStrategy
from tests.research.sandbox_corpus import CORPUS, RUNTIME, Escape

LIMITS = SandboxLimits(cpu_seconds=2, memory_mb=96, wall_seconds=20.0)
# The corpus runs nothing useful: one CPU second is plenty (the interpreter's start counts too).
CORPUS_LIMITS = SandboxLimits(cpu_seconds=1, memory_mb=96, wall_seconds=20.0)

EMA_CROSSOVER = '''
import numpy as np
from research.signals.base import ParamRange, SignalStrategy, as_positions


class EmaCrossover(SignalStrategy):
    """Trend following on exponential averages: long while the fast EMA is above the slow one,
    short while below (flat until the slow one has seen its window)."""

    key = "ema_crossover"
    PARAM_RANGES = {"fast": ParamRange(4, 20, 2), "slow": ParamRange(20, 60, 5)}
    ALLOWS_SHORT = True

    def check_params(self):
        if self.params["fast"] >= self.params["slow"]:
            raise ValueError("fast must be shorter than slow")

    def positions(self, bars):
        fast = ema(bars.close, self.params["fast"])
        slow = ema(bars.close, self.params["slow"])
        spread = np.where(np.arange(len(bars)) >= self.params["slow"] - 1, fast - slow, 0.0)
        return as_positions(spread)


def ema(values, span):
    alpha = 2.0 / (span + 1.0)
    out = np.empty_like(values)
    level = values[0] if len(values) else 0.0
    for index in range(len(values)):
        level = alpha * values[index] + (1.0 - alpha) * level
        out[index] = level
    return out
'''


def strategy_code(body: str = "", *, doc: str = '"""Always long."""', ranges: str = "") -> str:
    """A small generated strategy, altered by the hygiene tests."""
    ranges = ranges or '{"window": ParamRange(2, 10, 1)}'
    body = body or "    def positions(self, bars):\n        return np.ones(len(bars), dtype=np.int8)\n"
    return (
        "import numpy as np\nfrom research.signals.base import ParamRange, SignalStrategy\n\n\n"
        f"class AlwaysLong(SignalStrategy):\n    {doc}\n\n    PARAM_RANGES = {ranges}\n\n{body}"
    )


@dataclass
class FakeProposal:
    """The shape of ``research.proposers.Proposal`` hygiene reads (any object with these fields)."""

    kind: str = "tune"
    strategy: str = "sma_crossover"
    params: dict[str, Any] = field(default_factory=dict)
    code: str = ""
    rationale: str = "Trends persist for weeks in large caps."
    proposer: str = "fixed"


def bars(count: int = 300) -> Bars:
    rng = np.random.default_rng(7)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, count)))
    dates = np.datetime64("2021-01-01", "D") + np.arange(count).astype("timedelta64[D]")
    return Bars(
        symbol="TEST", dates=dates, open=close, high=close * 1.01, low=close * 0.99, close=close,
        volume=np.full(count, 5000.0),
    )  # fmt: skip


def direct_class(code: str) -> type[SignalStrategy]:
    """The same code run directly in this process, with ordinary globals (the reference)."""
    namespace: dict[str, Any] = {"__name__": "direct_strategy"}
    exec(compile(code, "<direct>", "exec"), namespace)
    return next(
        value
        for value in namespace.values()
        if isinstance(value, type) and issubclass(value, SignalStrategy) and value is not SignalStrategy
    )


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A world-writable folder (the sandbox's ``nobody`` could write here if nothing stopped it)
    with a victim file anyone may delete or rename."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-harm-", dir="/tmp"))
    folder.chmod(0o777)
    victim = folder / "victim.txt"
    victim.write_text("still here")
    victim.chmod(0o666)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    yield server
    server.close()


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    sandbox._loaded.clear()
    yield
    sandbox._loaded.clear()


def filled(escape: Escape, folder: Path, server: socket.socket) -> str:
    return (
        escape.code.replace("{marker}", str(folder / "marker"))
        .replace("{victim}", str(folder / "victim.txt"))
        .replace("{port}", str(server.getsockname()[1]))
    )


def assert_no_harm(folder: Path, server: socket.socket) -> None:
    assert sorted(path.name for path in folder.iterdir()) == ["victim.txt"], "a file was created or moved"
    assert (folder / "victim.txt").read_text() == "still here"
    with pytest.raises(TimeoutError):
        server.accept()


# --------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("escape", CORPUS, ids=[escape.id for escape in CORPUS])
def test_every_known_escape_is_refused_and_does_no_harm(
    escape: Escape, open_folder: Path, listener: socket.socket
) -> None:
    code = filled(escape, open_folder, listener)
    if escape.stage == "static":
        assert check_source(code), "the syntax checks let it through"
    else:
        assert check_source(code) == [], "expected to pass the syntax checks and be stopped at run time"
    with pytest.raises(SandboxRefused) as refused:
        load_strategy_from_code(code, limits=CORPUS_LIMITS)
    assert refused.value.reason
    assert_no_harm(open_folder, listener)


@pytest.mark.parametrize("escape", RUNTIME, ids=[escape.id for escape in RUNTIME])
def test_the_process_contains_escapes_that_get_past_the_syntax_checks(
    escape: Escape, open_folder: Path, listener: socket.socket
) -> None:
    code = filled(escape, open_folder, listener)
    assert check_source(code), "the syntax checks should refuse this too; here they are skipped on purpose"
    answer = contain_unchecked(code, limits=CORPUS_LIMITS)
    assert answer["ok"] is False
    assert "no concrete subclass" not in answer["reason"], f"the harm ran without error: {answer}"
    assert_no_harm(open_folder, listener)


def test_an_infinite_loop_is_killed_at_its_cpu_limit() -> None:
    with pytest.raises(SandboxRefused, match="CPU-time limit of 1 s"):
        load_strategy_from_code("while True:\n    pass", limits=SandboxLimits(cpu_seconds=1, wall_seconds=60.0))


def test_a_stalled_child_is_killed_at_its_wall_clock_limit() -> None:
    limits = SandboxLimits(cpu_seconds=30, wall_seconds=1.0)
    with pytest.raises(SandboxRefused, match="wall-clock limit of 1 s"):
        load_strategy_from_code("while True:\n    pass", limits=limits)


@pytest.mark.parametrize(
    "code", ["s = 'a' * 10 ** 10", "grow = []\nwhile True:\n    grow.append([0] * 100_000)"], ids=["string", "list"]
)
def test_a_memory_bomb_runs_out_of_memory_in_the_child(code: str) -> None:
    with pytest.raises(SandboxRefused, match="out of memory"):
        load_strategy_from_code(code, limits=SandboxLimits(cpu_seconds=5, memory_mb=64, wall_seconds=30.0))


def test_the_child_runs_isolated_where_the_kernel_allows() -> None:
    strategy = load_strategy_from_code(strategy_code(), limits=LIMITS)
    isolation = set(strategy.SANDBOX_ISOLATION)  # type: ignore[attr-defined]
    assert {"rlimits", "no-new-descriptors", "os-functions-removed"} <= isolation
    if os.geteuid() == 0:
        assert "user-nobody" in isolation


# --------------------------------------------------------------------------- a well-formed strategy


def test_a_generated_ema_crossover_loads_with_its_face() -> None:
    strategy = load_strategy_from_code(EMA_CROSSOVER, limits=LIMITS)
    assert issubclass(strategy, SignalStrategy)
    assert strategy.__name__ == "EmaCrossover"
    assert strategy.key == "ema_crossover"
    assert strategy.ALLOWS_SHORT is True
    assert set(strategy.PARAM_RANGES) == {"fast", "slow"}
    assert strategy.PARAM_RANGES["slow"] == ParamRange(20, 60, 5)
    assert (strategy.__doc__ or "").startswith("Trend following on exponential averages")


def test_sandboxed_positions_equal_the_same_code_run_directly() -> None:
    sample = bars()
    direct = direct_class(EMA_CROSSOVER)
    strategy = load_strategy_from_code(EMA_CROSSOVER, limits=LIMITS)
    expected = direct(fast=8, slow=30).positions(sample)
    got = strategy(fast=8, slow=30).positions(sample)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)
    assert set(np.unique(got)) <= {-1, 0, 1} and len(set(np.unique(got))) > 1


def test_a_whole_grid_is_computed_in_one_child_and_matches_direct_runs() -> None:
    sample = bars(200)
    direct = direct_class(EMA_CROSSOVER)
    strategy = load_strategy_from_code(EMA_CROSSOVER, limits=LIMITS)
    grid = [{"fast": 4, "slow": 20}, {"fast": 10, "slow": 40}, {"fast": 20, "slow": 60}]
    matrix = strategy.positions_grid(sample, grid)
    assert matrix.shape == (3, 200)
    for row, params in enumerate(grid):
        np.testing.assert_array_equal(matrix[row], direct(**params).positions(sample))


def test_parameters_the_code_refuses_are_refused_on_this_side_too() -> None:
    strategy = load_strategy_from_code(EMA_CROSSOVER, limits=LIMITS)
    with pytest.raises(ValueError, match="refuses the parameters"):
        strategy(fast=20, slow=20)
    with pytest.raises(ValueError, match="slow must be"):
        strategy(fast=8, slow=61)
    assert strategy().params == {"fast": 12, "slow": 40}


def test_the_same_code_is_loaded_once() -> None:
    first = load_strategy_from_code(EMA_CROSSOVER, limits=LIMITS)
    assert load_strategy_from_code(EMA_CROSSOVER, limits=LIMITS) is first


def test_positions_of_the_wrong_length_or_values_are_refused_at_load() -> None:
    short = strategy_code("    def positions(self, bars):\n        return np.ones(3, dtype=np.int8)\n")
    with pytest.raises(SandboxRefused, match="1-D array of 120 values"):
        load_strategy_from_code(short, limits=LIMITS)
    twos = strategy_code("    def positions(self, bars):\n        return np.full(len(bars), 2)\n")
    with pytest.raises(SandboxRefused, match="-1, 0 or 1"):
        load_strategy_from_code(twos, limits=LIMITS)


def test_positions_that_go_wrong_only_on_real_bars_are_refused_when_asked() -> None:
    code = strategy_code(
        "    def positions(self, bars):\n"
        "        if len(bars) > 150:\n"
        "            return np.full(len(bars) - 1, 1)\n"
        "        return np.ones(len(bars), dtype=np.int8)\n"
    )
    strategy = load_strategy_from_code(code, limits=LIMITS)
    with pytest.raises(SandboxRefused, match="1-D array of 300 values"):
        strategy().positions(bars(300))


# --------------------------------------------------------------------------- the parent trusts nothing


@pytest.mark.parametrize(
    ("returncode", "output", "reason"),
    [
        (0, b"not json", "not JSON"),
        (0, b"[1, 2]", "not a JSON object"),
        (0, b'{"ok": false, "reason": "ValueError: boom"}', "ValueError: boom"),
        (-11, b"", "signal SIGSEGV"),
        (-24, b"", "CPU-time limit"),
        (1, b"", "exited with status 1"),
    ],
    ids=["garbage", "not-object", "child-error", "segfault", "cpu", "exit"],
)
def test_a_child_that_dies_or_answers_garbage_is_refused(returncode: int, output: bytes, reason: str) -> None:
    with pytest.raises(SandboxRefused, match=reason):
        sandbox._parsed_answer(returncode, output, b"", "", LIMITS)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"shape": [1, 5], "positions": "AQEBAQE="}, "shape"),
        ({"shape": [1, 4], "positions": "AQEBAQE="}, "5 positions, not 4"),
        ({"shape": [1, 4], "positions": "AgICAg=="}, "other than -1, 0 and 1"),
        ({"shape": [1, 4], "positions": "!!!"}, "undecodable"),
    ],
    ids=["shape", "length", "values", "base64"],
)
def test_positions_from_the_child_are_validated(answer: dict[str, Any], reason: str) -> None:
    with pytest.raises(SandboxRefused, match=reason):
        sandbox._decoded_positions(answer, 1, 4)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"class_name": "os.system", "doc": "x", "param_ranges": {}, "key": ""}, "proper name"),
        ({"class_name": "Rule", "doc": "  ", "param_ranges": {}, "key": ""}, "no docstring"),
        ({"class_name": "Rule", "doc": "x", "param_ranges": [], "key": ""}, "no PARAM_RANGES"),
        (
            {"class_name": "Rule", "doc": "x", "key": "", "param_ranges": {"a": {"low": 1, "high": 0, "step": 1}}},
            "invalid range",
        ),
        (
            {"class_name": "Rule", "doc": "x", "key": "", "param_ranges": {"a": {"low": 0, "high": 1e6, "step": 1}}},
            "grid values",
        ),
    ],
    ids=["name", "doc", "ranges", "inverted", "huge"],
)
def test_the_childs_description_is_checked_here(answer: dict[str, Any], reason: str) -> None:
    with pytest.raises(SandboxRefused, match=reason):
        sandbox._validated_description(answer)


# --------------------------------------------------------------------------- hygiene


def test_a_tune_proposal_inside_the_ranges_passes() -> None:
    assert hygiene_reasons(FakeProposal(params={"fast": 10, "slow": 60})) == []


def test_a_proposal_without_rationale_is_rejected_unevaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_child(*args: object, **kwargs: object) -> dict[str, Any]:
        raise AssertionError("generated code was started for a proposal with no rationale")

    monkeypatch.setattr(sandbox, "_ask_child", no_child)
    assert hygiene_reasons(FakeProposal(rationale="  ")) == [
        "no rationale: every proposal must state its hypothesis before it is tested"
    ]
    reasons = hygiene_reasons(FakeProposal(kind="code", strategy="EmaCrossover", code=EMA_CROSSOVER, rationale=""))
    assert reasons == ["no rationale: every proposal must state its hypothesis before it is tested"]


def test_more_than_five_parameters_are_rejected() -> None:
    params = {f"p{index}": 1 for index in range(6)}
    reasons = hygiene_reasons(FakeProposal(params=params))
    assert "6 parameters proposed; at most 5 are allowed" in reasons


def test_parameters_outside_the_known_strategys_ranges_are_rejected() -> None:
    reasons = hygiene_reasons(FakeProposal(params={"fast": 500, "slow": 60, "leverage": 3}))
    assert "fast=500 lies outside its range 5..50 (int)" in reasons
    assert "sma_crossover has no parameter leverage" in reasons
    assert hygiene_reasons(FakeProposal(params={"fast": 10.5})) == ["fast=10.5 lies outside its range 5..50 (int)"]


def test_parameters_the_strategy_refuses_together_are_rejected() -> None:
    assert hygiene_reasons(FakeProposal(params={"fast": 50, "slow": 20})) == [
        "fast (50) must be shorter than slow (20)"
    ]


def test_an_unknown_strategy_or_kind_is_rejected() -> None:
    assert hygiene_reasons(FakeProposal(strategy="moon_phase"))[0].startswith("unknown strategy 'moon_phase'")
    assert hygiene_reasons(FakeProposal(kind="promote")) == ["unknown proposal kind 'promote'"]


def test_a_well_formed_code_proposal_passes() -> None:
    proposal = FakeProposal(kind="code", strategy="EmaCrossover", code=EMA_CROSSOVER, params={"fast": 6})
    assert hygiene_reasons(proposal, limits=LIMITS) == []
    assert set(SIGNALS) >= {"sma_crossover"}  # generated code never joins the built-ins
    assert "ema_crossover" not in SIGNALS


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (strategy_code(doc="PARAM_DOC = 1"), "no docstring"),
        (
            strategy_code(ranges="{" + ", ".join(f'"p{i}": ParamRange(1, 5, 1)' for i in range(6)) + "}"),
            "6 parameters; at most 5",
        ),
        (strategy_code(ranges='{"window": (1, 5)}'), "dict of ParamRange"),
        (strategy_code(ranges='{"window": ParamRange(3, 3, 1)}'), "single value"),
        (strategy_code("    def indicators(self, bars):\n        return {}\n"), "does not implement positions"),
        (
            strategy_code() + "\n\nclass Twin(AlwaysLong):\n    '''Also long.'''\n",
            "2 concrete strategies",
        ),
        (
            strategy_code(
                "    def __init__(self, **params):\n        raise ValueError('will not build')\n\n"
                "    def positions(self, bars):\n        return np.ones(len(bars), dtype=np.int8)\n"
            ),
            "will not build",
        ),
        ("import numpy as np\nX = np.zeros(3)\n", "no concrete subclass"),
        ("def broken(:\n", "does not parse"),
    ],
    ids=[
        "no-docstring",
        "six-params",
        "ranges-not-paramrange",
        "constant-range",
        "abstract",
        "two-classes",
        "does-not-construct",
        "no-class",
        "syntax",
    ],
)
def test_code_that_breaks_the_contract_is_rejected_with_its_reason(code: str, reason: str) -> None:
    reasons = hygiene_reasons(FakeProposal(kind="code", strategy="AlwaysLong", code=code), limits=LIMITS)
    assert len(reasons) >= 1
    assert reason in " ".join(reasons)


def test_a_code_proposal_naming_another_class_or_bad_params_is_rejected() -> None:
    code = strategy_code()
    reasons = hygiene_reasons(
        FakeProposal(kind="code", strategy="Other", code=code, params={"window": 99}), limits=LIMITS
    )
    assert reasons == [
        "the proposal names 'Other' but the code defines AlwaysLong",
        "window=99 lies outside its range 2..10 (int)",
    ]


def test_code_with_escapes_is_rejected_by_hygiene_without_running(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_child(*args: object, **kwargs: object) -> dict[str, Any]:
        raise AssertionError("code that fails the syntax checks was started")

    monkeypatch.setattr(sandbox, "_ask_child", no_child)
    code = strategy_code() + "\nimport os\n"
    reasons = hygiene_reasons(FakeProposal(kind="code", strategy="AlwaysLong", code=code))
    assert any("import of os is not allowed" in reason for reason in reasons)


def test_limits_come_from_settings(settings: Any) -> None:
    settings.RESEARCH = {**settings.RESEARCH, "SANDBOX_CPU_SECONDS": 3, "SANDBOX_MEMORY_MB": 128}
    limits = SandboxLimits.from_settings()
    assert (limits.cpu_seconds, limits.memory_mb) == (3, 128)


def test_synthetic_bars_are_valid_bars() -> None:
    sample = synthetic_bars(Bars)
    assert len(sample) == 120


def test_the_real_proposal_model_goes_through_the_gate() -> None:
    from research.proposers import Proposal

    hostile = Proposal(
        kind="code",
        strategy="EmaCrossover",
        code=EMA_CROSSOVER + "\nimport os\nos.system('true')\n",
        rationale="A harmless-looking crossover (the model slipped an import in).",
        proposer="llm",
    )
    assert any("import of os is not allowed" in reason for reason in hygiene_reasons(hostile, limits=LIMITS))
    honest = Proposal(kind="tune", strategy="sma_crossover", params={"fast": 10, "slow": 60}, rationale="Trends.")
    assert hygiene_reasons(honest) == []
