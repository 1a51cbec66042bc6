"""The playbook citations a run's agents made, stored as rows (``HeuristicCitation``).

Code reads the codes out of what each role wrote (``agents.domain.playbook``) and checks each against
the playbook the run was shown (kept in its context stage). A code that was not active then (a
candidate, a retired rule, one never written) is stored as not accepted, with no heuristic: visible,
never counted. The rows are written in the transaction that stores the stage they come from, keyed
on (run, role, code), and a stage's rows are replaced as a whole, so a stage written again (a
resumed or re-delivered run) never duplicates one:

- the analysts stage: one set per note, from its summary, key points and evidence, tied to the note;
- the debate stage: the bull's and the bear's cases (before and after the rebuttal) and the manager's
  verdict (rationale, disagreements, falsifiers);
- the trader stage: the thesis's rationale, invalidation conditions and key risks;
- the risk stage: the thesis row, once made, is tied to the debate's and the trader's citations.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from agents.domain.playbook import verdicts
from agents.models import Heuristic
from agents.roles import AnalystNote, BearCase, BullCase, DebateResult, TradeThesis
from trading.models import AnalystNoteRecord, HeuristicCitation, PipelineRun, Thesis

__all__ = [
    "case_texts",
    "citations_link_thesis",
    "citations_store",
    "note_texts",
    "thesis_texts",
    "verdict_texts",
]


def note_texts(note: AnalystNote) -> list[str]:
    return [note.summary, *note.key_points, *note.evidence]


def case_texts(*cases: BullCase | BearCase) -> list[str]:
    return [text for case in cases for text in (case.argument, *case.supporting_points, *case.risks)]


def verdict_texts(result: DebateResult) -> list[str]:
    # ``rebuttals`` is written by code from the cases (already read as the bull's and bear's), not the manager.
    return [result.manager_rationale, *result.key_disagreements, *result.falsifiers]


def thesis_texts(thesis: TradeThesis) -> list[str]:
    return [thesis.rationale, *thesis.invalidation_conditions, *thesis.key_risks]


def citations_store(
    *,
    run: PipelineRun,
    texts_by_role: Mapping[str, Iterable[str]],
    active_codes: Collection[str],
    notes: Mapping[str, AnalystNoteRecord] | None = None,
    fresh: bool = False,
    heuristics: Mapping[str, Heuristic] | None = None,
    kept: list[HeuristicCitation] | None = None,
) -> list[HeuristicCitation]:
    """Store each role's citations (replacing that role's earlier rows of this run) and return them.
    Call it inside the stage's transaction. ``fresh``: the caller knows the run has no rows of
    these roles yet (a replay run made in the transaction executing it), so none is looked for.
    ``heuristics``: every heuristic row by code, when the caller has them read already (a replay
    day reads them once for all its runs); else the cited ones are read. ``kept``: the rows are
    added to it instead of inserted (with ``fresh``: a replay run inserts all its citations at its
    ending, with its other rows), and returned unsaved."""
    notes = notes or {}
    found = {role: verdicts(texts, active_codes) for role, texts in texts_by_role.items()}
    accepted_codes = {verdict.code for cited in found.values() for verdict in cited if verdict.accepted}
    if heuristics is None:
        heuristics = (
            {row.code: row for row in Heuristic.objects.filter(code__in=accepted_codes)} if accepted_codes else {}
        )
    thesis_of: dict[tuple[str, str], int | None] = {}
    if not fresh:
        earlier = HeuristicCitation.objects.filter(run=run, role__in=list(found))
        # A stage written again keeps the thesis its rows were already tied to.
        thesis_of = {(role, code): thesis for role, code, thesis in earlier.values_list("role", "code", "thesis_id")}
        earlier.delete()
    rows = []
    for role, cited in found.items():
        for verdict in cited:
            # A code active at the run whose row has gone since cannot be tied to a rule: not counted.
            heuristic = heuristics.get(verdict.code) if verdict.accepted else None
            rows.append(
                HeuristicCitation(
                    run=run,
                    role=role,
                    code=verdict.code,
                    note=notes.get(role),
                    thesis_id=thesis_of.get((role, verdict.code)),
                    heuristic=heuristic,
                    accepted=heuristic is not None,
                    cited_on=run.as_of,
                )
            )
    if kept is not None:
        kept.extend(rows)
        return rows
    # One read, one delete and one insert per stage, however many codes its roles cited.
    return HeuristicCitation.objects.bulk_create(rows) if rows else []


def citations_link_thesis(*, run: PipelineRun, thesis: Thesis, kept: list[HeuristicCitation] | None = None) -> int:
    """Tie the run's citations that belong to no note (the debate's, the trader's) to its thesis:
    its stored rows, or those ``citations_store`` kept for later."""
    if kept is None:
        return HeuristicCitation.objects.filter(run=run, note__isnull=True, thesis__isnull=True).update(thesis=thesis)
    tied = [row for row in kept if row.note_id is None and row.thesis_id is None]
    for row in tied:
        row.thesis = thesis
    return len(tied)
