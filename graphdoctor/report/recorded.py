"""The report of a recording: its spools assembled, diagnosed and built into one report.

What ``graphdoctor run`` and ``graphdoctor.check`` write, from the recording they just made
(``own=True``: the files its stacks name are read here, and their digests appended to the
spools), and what ``report``, ``view`` and ``export`` show of a spool given to them
(``own=False``: a line is read only where the recording vouches for it). See
:mod:`graphdoctor.report.source_lines`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from graphdoctor.diagnose import diagnose, diagnose_ranks
from graphdoctor.diagnose.findings import Rule
from graphdoctor.diagnose.rules import ALL_RULES
from graphdoctor.files.run_files import RunFiles
from graphdoctor.report.children import ordered
from graphdoctor.report.document import Report, build, build_ranks
from graphdoctor.report.source_lines import OwnRecording, RecordedElsewhere
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import Note, Trace
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import append_records

CHILDREN_NOTE = "processes the script started"


def report_from_spools(spools: Sequence[str | os.PathLike[str]],
                       baseline: Trace | None = None, *, own: bool = True,
                       unwritten: Mapping[Path, bytes] | None = None,
                       children: Sequence[str | os.PathLike[str]] = ()) -> Report:
    """The report of one spool, or of one spool per rank (rank order); eager calls a
    single-process run lacks come from ``baseline``, the run with CUDA graphs off;
    ``unwritten``: the last lines of a spool that could not be appended to it;
    ``children``: the spools of the processes the script started that were followed, each
    made a report of its own (:mod:`graphdoctor.report.children`)."""
    kept = unwritten or {}
    traces = {rank: assemble_file(spool, limited=not own, unwritten=kept.get(Path(spool), b""))
              for rank, spool in enumerate(spools)}
    lines = OwnRecording(traces[0].meta) if own else \
        RecordedElsewhere(t.meta for t in traces.values())
    report = report_of(traces, lines, baseline)
    if own:
        _append_digests(spools, report.trace)
    if not own and len(spools) == 1 and not children:  # a kept spool: its children beside it
        children = [files.spool for _, files in RunFiles(Path(spools[0])).children()]
    report.children = ordered(_children(children, own, kept, report))
    return report


def report_of(traces: Mapping[int, Trace], lines: OwnRecording | RecordedElsewhere,
              baseline: Trace | None = None, rules: Sequence[Rule] = ALL_RULES) -> Report:
    """The report of one trace, or of one a rank (keyed 0, 1...), diagnosed by ``rules``,
    with the lines ``lines`` reads."""
    if len(traces) == 1:
        trace = next(iter(traces.values()))
        report = build(trace, diagnose(trace, rules, read_line=lines, baseline=baseline),
                       lines, baseline=baseline)
    else:
        report = build_ranks(dict(traces), diagnose_ranks(dict(traces), rules, read_line=lines),
                             lines)
    report.trace = lines.finished(report.trace)
    report.other_ranks = {rank: lines.finished(trace, main=False)
                          for rank, trace in report.other_ranks.items()}
    return report


def _children(spools: Sequence[str | os.PathLike[str]], own: bool,
              unwritten: Mapping[Path, bytes], report: Report) -> list[Report]:
    """The report of each process the script started; one that cannot be made is left
    out, and the report's notes say so."""
    made, broken = [], []
    for spool in spools:
        try:
            made.append(_child(spool, own, unwritten.get(Path(spool), b"")))
        except Exception as error:  # noqa: BLE001 - the script's own report matters more
            broken.append(f"{Path(spool).name} ({error!r})")
    if broken:
        note = Note(CHILDREN_NOTE, f"left out, could not be read: {'; '.join(broken)}")
        meta = dataclasses.replace(report.trace.meta,
                                   not_recorded=(*report.trace.meta.not_recorded, note))
        report.trace = dataclasses.replace(report.trace, meta=meta)
    return made


def _child(spool: str | os.PathLike[str], own: bool, unwritten: bytes) -> Report:
    """The report of one process the script started, diagnosed on its own."""
    trace = assemble_file(spool, limited=not own, unwritten=unwritten)
    lines = OwnRecording(trace.meta) if own else RecordedElsewhere([trace.meta])
    child = build(trace, diagnose(trace, read_line=lines), lines)
    child.trace = lines.finished(child.trace)
    if own:
        _append_digests([spool], child.trace)
    return child


def _append_digests(spools: Sequence[str | os.PathLike[str]], trace: Trace) -> None:
    """Keep the digests with each spool, for a reader who opens it later."""
    records = [sr.SourceDigest(s.file, s.size, s.sha256) for s in trace.meta.sources]
    for spool in spools:
        try:
            append_records(spool, records)
        except OSError:  # a full disk: the report still holds them
            pass
