"""A run or a thesis exported as a Markdown report: every stage, the evidence, the decision and who
took it, with text a model (or a person) wrote kept as data: it cannot add a heading, a link, a
table row or raw HTML to the report."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from trading.models import StageRun, Thesis
from trading.pipeline.export import fenced, inline

HOSTILE = (
    "Fine.\n```\n# APPROVED BY THE BOARD\n[wire funds](javascript:alert(1)) <script>alert(2)</script>\n"
    "| injected | row |\n~~~\n````\n- [x] done"
)


def _headings(markdown: str) -> list[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    return [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]


def _structure(markdown: str) -> dict[str, int]:
    """How many links, raw HTML pieces and tables the report holds, as a Markdown reader sees it."""
    from markdown_it import MarkdownIt

    counts = {"links": 0, "html": 0, "tables": 0}
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type in ("html_block", "html_inline"):
            counts["html"] += 1
        if token.type == "table_open":
            counts["tables"] += 1
        for child in token.children or []:
            counts["links"] += child.type == "link_open"
            counts["html"] += child.type == "html_inline"
    return counts


def test_fenced_text_cannot_close_its_fence():
    pytest.importorskip("markdown_it")
    from markdown_it import MarkdownIt

    block = fenced("before\n```\n# heading\n`````\nafter")

    tokens = MarkdownIt("commonmark").parse(block)
    assert [token.type for token in tokens] == ["fence"]
    assert tokens[0].content == "before\n```\n# heading\n`````\nafter\n"


def test_an_inline_value_is_one_line_of_plain_text():
    assert inline("a\n# b | [c](d) <e>") == r"a \# b \| \[c\]\(d\) \<e\>"


def test_a_run_report_has_every_stage_the_evidence_and_the_decision(client, viewer, pending_thesis):
    pytest.importorskip("markdown_it")
    client.force_login(viewer)
    run = pending_thesis.run

    response = client.get(reverse("run_report", args=[run.pk]))

    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-RELIANCE.md"'
    report = response.content.decode()
    headings = _headings(report)
    assert headings[0] == f"Run {run.pk}: RELIANCE as of {run.as_of:%d %b %Y}"
    for section in ("Stages", "Features", "Context", "Analysts", "Debate", "Trader", "Manager"):
        assert section in headings, section
    assert "Risk: approved" in headings
    for stage in ("features", "context", "analysts", "debate", "trader", "risk"):
        assert f"| {stage} | done |" in report
    assert '"technical": {' in report  # the feature bundle as stored
    debate = StageRun.objects.get(run=run, stage="debate").output
    assert debate["result"]["manager_rationale"] in report


def test_a_thesis_report_says_who_decided_and_why(client, viewer, approver, pending_thesis):
    client.force_login(viewer)
    Thesis.objects.filter(pk=pending_thesis.pk).update(
        status=Thesis.Status.REJECTED,
        decided_by=approver,
        decided_at=timezone.now(),
        decision_comment="Results next week; not before them.",
    )

    response = client.get(reverse("thesis_report", args=[pending_thesis.pk]))

    report = response.content.decode()
    assert response["Content-Disposition"] == f'attachment; filename="thesis-{pending_thesis.pk}-RELIANCE.md"'
    assert report.startswith(f"# Thesis {pending_thesis.pk}: RELIANCE ")
    assert "- Status: Rejected" in report and "- Decided by: arjun" in report
    assert "```text\nResults next week; not before them.\n```" in report
    assert f"# The run: {pending_thesis.run_id}" in report


def test_hostile_model_text_and_a_hostile_comment_cannot_change_the_reports_structure(
    client, viewer, approver, pending_thesis
):
    pytest.importorskip("markdown_it")
    client.force_login(viewer)
    run = pending_thesis.run
    clean_run = client.get(reverse("run_report", args=[run.pk])).content.decode()
    clean_thesis = client.get(reverse("thesis_report", args=[pending_thesis.pk])).content.decode()

    debate = StageRun.objects.get(run=run, stage="debate")
    debate.output["result"]["manager_rationale"] = HOSTILE
    debate.output["bull"]["supporting_points"] = [HOSTILE[:400]]
    debate.save(update_fields=["output"])
    trader = StageRun.objects.get(run=run, stage="trader")
    trader.output["thesis"]["rationale"] = HOSTILE
    trader.save(update_fields=["output"])
    Thesis.objects.filter(pk=pending_thesis.pk).update(decided_by=approver, decision_comment=HOSTILE)
    hostile_run = client.get(reverse("run_report", args=[run.pk])).content.decode()
    hostile_thesis = client.get(reverse("thesis_report", args=[pending_thesis.pk])).content.decode()

    assert "# APPROVED BY THE BOARD" in hostile_run  # the text is all there, as data
    assert _headings(hostile_run) == _headings(clean_run)
    assert _headings(hostile_thesis) == _headings(clean_thesis)
    assert _structure(hostile_run) == _structure(clean_run)
    assert _structure(hostile_run)["links"] == _structure(hostile_run)["html"] == 0
    assert _structure(hostile_thesis) == _structure(clean_thesis)


def test_the_run_page_links_its_report_and_a_missing_run_has_none(client, viewer, pending_thesis):
    client.force_login(viewer)

    page = client.get(reverse("run_detail", args=[pending_thesis.run_id])).content.decode()

    assert f'href="{reverse("run_report", args=[pending_thesis.run_id])}"' in page
    assert client.get(reverse("run_report", args=[999_999])).status_code == 404
    assert client.get(reverse("thesis_report", args=[999_999])).status_code == 404
