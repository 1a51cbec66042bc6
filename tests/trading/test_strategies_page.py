"""The strategies page: each strategy's performance live and in replay from the stored positions,
each strategy run linked to its pipeline runs and theses, the state as JSON for live updates, and
history replays started, watched, cancelled and resumed from the browser by approvers only."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from tests.factories.book import ThesisFactory, position_on_path
from tests.factories.market import flat, trending
from trading.models import PipelineRun, Position, ReplayJob, Strategy, StrategyRun
from vocabulary.money import format_money

WINDOW = {"start": "2024-03-01", "end": "2024-03-08"}


@pytest.fixture
def strategy(instrument_with_bars) -> Strategy:
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings.")
    strategy.universe.set([instrument_with_bars])
    return strategy


def _of(strategy: Strategy, position: Position, *, replay: bool = False) -> Position:
    """The position's thesis made by a run of ``strategy`` (live, or its history replay)."""
    strategy_run, _ = StrategyRun.objects.get_or_create(
        strategy=strategy, as_of=position.thesis.run.as_of, is_replay=replay
    )
    PipelineRun.objects.filter(pk=position.thesis.run_id).update(strategy_run=strategy_run, is_replay=replay)
    Position.objects.filter(pk=position.pk).update(is_replay=replay)
    position.refresh_from_db()
    return position


def _perf_row(html: str, strategy: Strategy, kind: str) -> str:
    table = html.split(f'id="perf-{strategy.pk}"', 1)[1].split("</table>", 1)[0]
    return table.split(f'data-kind="{kind}"', 1)[1].split("</tr>", 1)[0]


def _cell(row: str, field: str) -> str:
    return row.split(f'data-field="{field}">', 1)[1].split("<", 1)[0]


def test_the_page_shows_each_strategys_performance_live_and_in_replay(client, viewer, strategy):
    won = _of(strategy, position_on_path(trending(100, 6, "1"), close_by_hand="took the gain"))
    lost = _of(strategy, position_on_path(trending(100, 6, "-0.5"), close_by_hand="cut it"))
    _of(strategy, position_on_path(flat(100, 3)))
    replayed = _of(strategy, position_on_path(trending(100, 6, "1"), close_by_hand="replay exit"), replay=True)
    position_on_path(trending(100, 6, "-0.5"), close_by_hand="another strategy's")  # no strategy: not counted
    assert won.realised_pnl > 0 > lost.realised_pnl
    client.force_login(viewer)

    html = client.get(reverse("strategy_list")).content.decode()

    live, replay = _perf_row(html, strategy, "live"), _perf_row(html, strategy, "replay")
    assert [_cell(live, name) for name in ("positions", "open", "closed", "win_rate")] == ["3", "1", "2", "50.0%"]
    assert _cell(live, "realised") == format_money(won.realised_pnl + lost.realised_pnl, "INR")
    assert [_cell(replay, name) for name in ("positions", "open", "closed", "win_rate")] == ["1", "0", "1", "100.0%"]
    assert _cell(replay, "realised") == format_money(replayed.realised_pnl, "INR")


def test_a_strategy_without_positions_shows_no_win_rate_rather_than_zero(client, viewer, strategy):
    client.force_login(viewer)

    live = _perf_row(client.get(reverse("strategy_list")).content.decode(), strategy, "live")

    assert _cell(live, "win_rate") == "—" and _cell(live, "realised") == "₹0.00"


def test_each_strategy_run_links_to_its_pipeline_runs_and_their_theses(client, viewer, strategy, instrument_with_bars):
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=dt.date(2024, 3, 1))
    thesis = ThesisFactory(instrument=instrument_with_bars, run__as_of=strategy_run.as_of)
    PipelineRun.objects.filter(pk=thesis.run_id).update(strategy_run=strategy_run)
    client.force_login(viewer)

    html = client.get(reverse("strategy_list")).content.decode()

    row = html.split(f'<tr data-strategy-run="{strategy_run.pk}">', 1)[1].split("</tr>", 1)[0]
    assert f'href="{reverse("run_detail", args=[thesis.run_id])}">#{thesis.run_id} RELIANCE</a>' in row
    assert f'href="{reverse("thesis_detail", args=[thesis.pk])}">LONG · 0.65</a>' in row
    assert f'href="/runs/?strategy={strategy.pk}&amp;kind=live">1</a>' in row
    assert f'href="/runs/?strategy={strategy.pk}&amp;kind=all" id="strategy-runs-{strategy.pk}"' in html


def test_an_approver_starts_a_replay_from_the_page(client, approver, strategy, django_capture_on_commit_callbacks):
    client.force_login(approver)

    with django_capture_on_commit_callbacks() as sent:
        response = client.post(
            reverse("replay_start", args=[strategy.pk]), {**WINDOW, "policy": "conviction>=0.6", "provider": "offline"}
        )

    job = ReplayJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/strategies/#strategy-{strategy.pk}"
    assert (job.start, job.end, job.policy, job.provider) == (
        dt.date(2024, 3, 1),
        dt.date(2024, 3, 8),
        "conviction>=0.6",
        "offline",
    )
    assert job.days_total == 6 and job.created_by == approver and len(sent) == 1
    html = client.get(reverse("strategy_list")).content.decode()
    box = html.split(f'id="replay-job-{strategy.pk}"', 1)[1].split("</progress>", 1)[0]
    assert 'data-status="queued"' in box and "0 / 6 sessions" in box and 'value="0.0"' in box


def test_a_replay_is_refused_with_why_and_nothing_created(client, approver, strategy, settings, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings.LLM = {**settings.LLM, "ANTHROPIC_API_KEY": "", "PRICES": {"*": {"input": "3", "output": "15"}}}
    client.force_login(approver)
    start = reverse("replay_start", args=[strategy.pk])

    forged = client.post(start, {**WINDOW, "policy": "all", "provider": "anthropic"}, follow=True)
    backwards = client.post(start, {"start": "2024-03-08", "end": "2024-03-01", "provider": "offline"}, follow=True)
    no_dates = client.post(start, {"provider": "offline"}, follow=True)
    bad_policy = client.post(start, {**WINDOW, "policy": "most", "provider": "offline"}, follow=True)

    assert "anthropic is not configured" in forged.content.decode()
    assert "after its end" in backwards.content.decode()
    assert "start is required" in no_dates.content.decode() and "end is required" in no_dates.content.decode()
    assert "use all, none or conviction&gt;=X" in bad_policy.content.decode()
    assert not ReplayJob.objects.exists()


def test_a_viewer_sees_a_replays_progress_but_no_buttons_and_a_forged_post_is_403(client, viewer, approver, strategy):
    job = ReplayJob.objects.create(strategy=strategy, start=dt.date(2024, 3, 1), end=dt.date(2024, 3, 8), days_total=6)
    ReplayJob.objects.filter(pk=job.pk).update(status=ReplayJob.Status.RUNNING, days_done=3)
    client.force_login(viewer)

    html = client.get(reverse("strategy_list")).content.decode()
    forged = [
        client.post(reverse("replay_start", args=[strategy.pk]), {**WINDOW, "provider": "offline"}),
        client.post(reverse("replay_job_cancel", args=[job.pk]), {"reason": "mine"}),
        client.post(reverse("replay_job_resume", args=[job.pk])),
    ]

    assert "3 / 6 sessions" in html and "50.0%" in html and 'value="50.0"' in html
    assert "Cancel replay" not in html and "Resume" not in html and "Replay history" not in html
    assert [response.status_code for response in forged] == [403, 403, 403]
    job.refresh_from_db()
    assert job.status == ReplayJob.Status.RUNNING and not job.cancel_requested and ReplayJob.objects.count() == 1


def test_cancel_needs_a_reason_then_resume_queues_the_job_again(client, approver, strategy):
    job = ReplayJob.objects.create(strategy=strategy, start=dt.date(2024, 3, 1), end=dt.date(2024, 3, 8), days_total=6)
    client.force_login(approver)

    without = client.post(reverse("replay_job_cancel", args=[job.pk]), {"reason": "  "}, follow=True)
    job.refresh_from_db()
    assert "say why the replay is cancelled" in without.content.decode() and job.status == ReplayJob.Status.QUEUED

    client.post(reverse("replay_job_cancel", args=[job.pk]), {"reason": "wrong window"})
    job.refresh_from_db()
    assert job.status == ReplayJob.Status.CANCELLED
    html = client.get(reverse("strategy_list")).content.decode()
    box = html.split(f'id="replay-job-{strategy.pk}"', 1)[1].split("</div>\n    </div>", 1)[0]
    assert 'class="job-cancel hidden"' in box and 'class="job-resume"' in box

    client.post(reverse("replay_job_resume", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == ReplayJob.Status.QUEUED


def test_the_state_json_carries_progress_performance_and_run_links(client, viewer, strategy, instrument_with_bars):
    job = ReplayJob.objects.create(strategy=strategy, start=dt.date(2024, 3, 1), end=dt.date(2024, 3, 8), days_total=8)
    ReplayJob.objects.filter(pk=job.pk).update(status=ReplayJob.Status.RUNNING, days_done=2, last_day="2024-03-04")
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=dt.date(2024, 3, 1))
    thesis = ThesisFactory(instrument=instrument_with_bars, run__as_of=strategy_run.as_of)
    PipelineRun.objects.filter(pk=thesis.run_id).update(strategy_run=strategy_run)
    client.force_login(viewer)

    state = client.get(reverse("strategy_state")).json()
    progress = client.get(reverse("replay_job_progress", args=[job.pk])).json()

    [mine] = state["strategies"]
    assert mine["job"]["percent"] == 25.0 and mine["job"]["percent_label"] == "25.0%"
    assert (mine["job"]["days_done"], mine["job"]["days_total"], mine["job"]["last_day"]) == (2, 8, "2024-03-04")
    assert mine["job"]["can_cancel"] is True and mine["job"]["can_resume"] is False
    assert progress["percent"] == 25.0 and progress["status"] == "running"
    assert mine["performance"]["live"]["positions"] == "0"
    [run] = state["runs"]
    assert run["runs"] == [
        {
            "id": thesis.run_id,
            "url": reverse("run_detail", args=[thesis.run_id]),
            "symbol": "RELIANCE",
            "status": "completed",
            "thesis_url": reverse("thesis_detail", args=[thesis.pk]),
            "thesis_label": "LONG · 0.65",
        }
    ]


def test_a_finished_replay_says_nothing_is_left_only_through_the_api(client, viewer, strategy):
    job = ReplayJob.objects.create(strategy=strategy, start=dt.date(2024, 3, 1), end=dt.date(2024, 3, 8), days_total=6)
    ReplayJob.objects.filter(pk=job.pk).update(status=ReplayJob.Status.FINISHED, days_done=6)
    client.force_login(viewer)

    html = client.get(reverse("strategy_list")).content.decode()
    [mine] = client.get(reverse("strategy_state")).json()["strategies"]

    assert "6 / 6 sessions" in html and " left" not in html
    assert mine["job"]["eta_label"] == "" and mine["job"]["eta_seconds"] == 0.0
