"""The approval queue's rows are read as plain values and formatted once in Python, for speed; each
row must still read exactly as the template wrote it from the model instances before."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.template import engines
from django.urls import reverse

from tests.factories import InstrumentFactory, ThesisFactory
from trading.book.views import gated_strategies
from trading.models import PipelineRun, Strategy, StrategyDirective, StrategyRun, Thesis

# The row as templates/trading/theses.html wrote it from a Thesis instance, before the rows were
# formatted in Python: the reference the page must still match, character for character.
ROW_FROM_THE_MODEL = """
    <tr>
      <td><a href="{% url 'thesis_detail' t.pk %}">#{{ t.pk }}</a>{% if t.run.is_replay %} <span class="tag">replay</span>{% endif %}{% with sid=t.run.strategy_run.strategy_id %}{% if t.run.is_replay and sid in gated_replay or not t.run.is_replay and sid in gated %} <a class="tag gated" href="{% url 'strategy_list' %}#gate-{{ sid }}" title="a critique's directive holds {{ t.run.strategy_run.strategy.name }}: approval is refused until its actions are complete">gated</a>{% endif %}{% endwith %}</td>
      <td>{{ t.instrument.symbol }}</td>
      <td><span class="pill {% if t.direction == 'LONG' %}earnings{% else %}regulatory{% endif %}">{{ t.direction }}</span></td>
      <td class="num">{{ t.conviction|floatformat:2 }}</td>
      <td class="num">{{ t.entry|money:t.instrument.currency }}</td><td class="num">{{ t.stop|money:t.instrument.currency }}</td><td class="num">{{ t.target|money:t.instrument.currency }}</td>
      <td class="num">{{ t.quantity|count }}</td>
      <td>{% if t.risk_approved %}<span class="up">✓</span>{% else %}<span class="down">✗</span>{% endif %}</td>
      <td><span class="status {{ t.status }}">{{ t.get_status_display }}</span></td>
      <td>{{ t.created_at|date:"d M H:i" }}</td>
    </tr>"""  # noqa: E501 - the template's own lines


def _row_from_the_model(thesis: Thesis) -> str:
    template = engines["django"].from_string("{% load desk %}" + ROW_FROM_THE_MODEL)
    gated = gated_strategies()
    return template.render({"t": thesis, "gated": gated[False], "gated_replay": gated[True]})


def test_each_queue_row_reads_as_the_template_wrote_it_from_the_model(client, viewer):
    dollars = InstrumentFactory(currency="USD")
    theses = [
        ThesisFactory(entry=Decimal("2450.55"), quantity=12_345),
        ThesisFactory(instrument=dollars, direction="SHORT", conviction=Decimal("0.7251")),
        ThesisFactory(rejected=True, risk_approved=False, conviction=Decimal("0.3")),
        ThesisFactory(approved=True, entry=Decimal("1234567.80")),
    ]
    PipelineRun.objects.filter(pk=theses[1].run_id).update(is_replay=True)
    client.force_login(viewer)

    page = client.get(reverse("thesis_queue"), {"status": "all", "replay": "1"}).content.decode()

    for thesis in Thesis.objects.select_related("instrument", "run__strategy_run__strategy").filter(
        pk__in=[t.pk for t in theses]
    ):
        assert _row_from_the_model(thesis) in page, thesis.pk
    assert page.count('<span class="tag">replay</span>') == 1


def test_a_remembered_row_is_redrawn_when_a_directive_gates_its_strategy(client, viewer):
    """A row's drawn HTML is remembered by every value it shows: the same thesis drawn once open and
    then held by a critique's directive is two rows, each as the template writes it from the model."""
    strategy = Strategy.objects.create(name="Gated momentum", philosophy="p")
    thesis = ThesisFactory()
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=dt.date(2026, 11, 20))
    PipelineRun.objects.filter(pk=thesis.run_id).update(strategy_run=strategy_run)
    client.force_login(viewer)
    stored = Thesis.objects.select_related("instrument", "run__strategy_run__strategy").get(pk=thesis.pk)

    open_row = _row_from_the_model(stored)
    before = client.get(reverse("thesis_queue")).content.decode()
    StrategyDirective.objects.create(
        strategy=strategy,
        source_ref=1,
        sequence=3,
        severity=StrategyDirective.Severity.DIRECTIVE,
        text="stop",
        blocking=[{"id": "a1", "kind": "text", "text": "attest the sizing fix"}],
        opened_on=dt.date(2026, 11, 20),
    )
    held_row = _row_from_the_model(stored)
    after = client.get(reverse("thesis_queue")).content.decode()

    assert "gated</a>" in held_row and "gated</a>" not in open_row
    assert open_row in before and held_row not in before
    assert held_row in after and open_row not in after
