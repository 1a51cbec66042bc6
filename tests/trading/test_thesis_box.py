"""The thesis page's top box: the money at risk, the notional, reward:risk, the signed distances to
the stop and the target, one line of why from the manager; once traded, the fill, the exit and the
PnL. Every figure is the stored row's; the manager's words are escaped like any model output."""

from __future__ import annotations

from decimal import Decimal

from django.urls import reverse
from django.utils.html import escape

from tests.factories import ThesisFactory, position_on_path, trending
from trading.models import StageRun
from trading.pipeline.presenters import run_outputs, thesis_box
from vocabulary.money import format_money


def _box_html(body: str) -> str:
    start = body.index('id="thesis-box"')
    return body[start : body.index("</section>", start)]


def test_a_pending_thesis_shows_its_stake_geometry_and_the_managers_verdict(client, viewer, pending_thesis):
    client.force_login(viewer)
    thesis = pending_thesis
    verdict = run_outputs(thesis.run).debate.result.manager_rationale

    box = _box_html(client.get(reverse("thesis_detail", args=[thesis.pk])).content.decode())

    assert format_money(thesis.risk_amount, "INR") in box and format_money(thesis.notional, "INR") in box
    reward_risk = abs(thesis.target - thesis.entry) / abs(thesis.entry - thesis.stop)
    assert f"{reward_risk:.2f} : 1" in box
    to_stop = (thesis.stop - thesis.entry) / thesis.entry * 100
    to_target = (thesis.target - thesis.entry) / thesis.entry * 100
    assert f"{to_stop:+.2f}%" in box and f"{to_target:+.2f}%" in box
    assert ("+" in f"{to_target:+.2f}") == (thesis.direction == "LONG")
    first_sentence = verdict.split(". ")[0]
    assert escape(first_sentence) in box
    assert escape(verdict) not in box or verdict == first_sentence  # one line, not the whole rationale


def test_a_shorts_stop_is_above_and_its_target_below_with_their_signs(db):
    thesis = ThesisFactory(direction="SHORT", entry=Decimal("200.00"), stop=Decimal("210.00"), target=Decimal("180.00"))

    box = thesis_box(thesis, None)

    assert (box.pct_to_stop, box.pct_to_target) == (Decimal("5.00"), Decimal("-10.00"))
    assert box.reward_risk == Decimal("2.00") and box.at_risk == Decimal("1000.00") and box.why == ""


def test_an_open_position_shows_the_fill_and_its_unrealised_pnl(client, viewer):
    position = position_on_path(trending(100, 4, "0.5"))
    order = position.order
    client.force_login(viewer)

    box = _box_html(client.get(reverse("thesis_detail", args=[position.thesis_id])).content.decode())

    assert 'id="thesis-traded"' in box
    assert format_money(order.fill_price, "INR") in box and order.filled_on.strftime("%d %b %Y") in box
    assert format_money(order.costs_total, "INR") in box
    assert "Unrealised" in box and format_money(position.unrealised_pnl, "INR") in box
    assert 'id="thesis-outcome"' not in box


def test_a_closed_position_shows_the_exit_its_reason_and_the_realised_pnl(client, viewer):
    position = position_on_path(trending(100, 30, "-1"))  # falls through its stop
    assert position.exit_reason == "stop"
    client.force_login(viewer)

    box = _box_html(client.get(reverse("thesis_detail", args=[position.thesis_id])).content.decode())

    exit_line = box[box.index('id="traded-exit"') :]
    assert exit_line.split("</td>")[0].endswith(
        f"stop at {format_money(position.exit_price, 'INR')} on {position.closed_on:%d %b %Y}"
    )
    assert format_money(position.realised_pnl, "INR") in box and "Realised (net)" in box
    assert format_money(position.order.fill_price, "INR") in box


def test_a_hostile_verdict_is_shown_as_text_and_cut_to_one_line(client, viewer, pending_thesis):
    debate = StageRun.objects.get(run=pending_thesis.run, stage="debate")
    hostile = '<img src=x onerror="alert(1)"> approve everything now. ' + "Then size it up tenfold. " * 40
    debate.output = {**debate.output, "result": {**debate.output["result"], "manager_rationale": hostile[:1000]}}
    debate.save(update_fields=["output"])
    client.force_login(viewer)

    box = _box_html(client.get(reverse("thesis_detail", args=[pending_thesis.pk])).content.decode())

    assert "<img src=x" not in box and escape('<img src=x onerror="alert(1)"> approve everything now.') in box
    assert "tenfold" not in box
