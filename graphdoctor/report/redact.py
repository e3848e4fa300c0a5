"""A copy of a report that is safe to attach to a public ticket (``--redact``).

What goes:
- paths outside the project (the folder the run started in): a package's file keeps its
  place inside the package (``<site-packages>/torch/cuda/graphs.py``), the standard
  library's keeps its name under ``<python>/``, anything else becomes
  ``<redacted>/name.py``; paths inside the project become relative to it;
- the same paths wherever they appear in text (messages, tracebacks, compile logs);
- the source lines of files outside the project;
- the values of environment variables (their names stay: they explain behaviour);
- the script's arguments and the host name.

What stays: the project's own code lines that the findings cite, versions, devices, and
every event and figure, so the redacted report diagnoses the same way.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from graphdoctor.diagnose.model import Diagnosis, Finding, Verdict
from graphdoctor.report.document import Report
from graphdoctor.trace.model import ErrorLink, ExceptionRecord, Frame, Meta, Note, Trace

REDACTED = "<redacted>"
_PACKAGES = re.compile(r"/(?:site|dist)-packages/(.+)$")
_STDLIB = re.compile(r"/lib(?:64)?/python3\.\d+/(.+)$")
# An absolute path inside free text: it starts after a space, quote or bracket, not inside
# a URL (``https://host/...``) or a path already redacted (``<site-packages>/...``).
_PATH_IN_TEXT = re.compile(r"(?<![\w.:/>~-])(?:~|/)[\w.@+~-]*(?:/[\w.@+~-]+)+")


class PathRedactor:
    """Maps a path from the recording machine to what a redacted report shows."""

    def __init__(self, project: str):
        self.project = project.rstrip("/")

    def path(self, path: str) -> str:
        if not path or path.startswith("<"):
            return path  # "<frozen runpy>", "<string>", or already redacted
        if not path.startswith(("/", "~")):
            return path if not path.startswith("..") else f"{REDACTED}/{_name(path)}"
        if self.project and (path == self.project or path.startswith(self.project + "/")):
            return path[len(self.project) + 1:] or "."
        for pattern, label in ((_PACKAGES, "<site-packages>"), (_STDLIB, "<python>")):
            match = pattern.search(path)
            if match:
                return f"{label}/{match.group(1)}"
        return f"{REDACTED}/{_name(path)}"

    def text(self, text: str) -> str:
        return _PATH_IN_TEXT.sub(lambda m: self.path(m.group(0)), text) if "/" in text else text


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def redact(report: Report) -> Report:
    """The report without private paths, environment values or arguments (see module doc)."""
    paths = PathRedactor(report.trace.meta.cwd)
    sources = {paths.path(file): dict(lines) for file, lines in report.sources.items()
               if _inside_project(paths, file)}
    return dataclasses.replace(
        report, trace=_trace(report.trace, paths), diagnosis=_diagnosis(report.diagnosis, paths),
        sources=sources, redacted=True,
        other_ranks={rank: _trace(trace, paths) for rank, trace in report.other_ranks.items()})


def _inside_project(paths: PathRedactor, file: str) -> bool:
    shown = paths.path(file)
    return not shown.startswith("<") and not shown.startswith("/")


def _trace(trace: Trace, paths: PathRedactor) -> Trace:
    text = paths.text
    return dataclasses.replace(
        trace,
        meta=_meta(trace.meta, paths),
        status=_replace_text(trace.status, paths, ("message", "stacks_at_end")),
        frames=[Frame(paths.path(f.file), f.line, f.func, f.kind) for f in trace.frames],
        functions=[dataclasses.replace(f, file=paths.path(f.file), name=text(f.name))
                   for f in trace.functions],
        exceptions=[_exception(e, paths) for e in trace.exceptions],
        compile_events=[_replace_text(e, paths, ("function", "reason", "detail"))
                        for e in trace.compile_events],
        warnings=[_replace_text(w, paths, ("message",)) for w in trace.warnings],
        counters={group: {text(key): value for key, value in counts.items()}
                  for group, counts in trace.counters.items()},
    )


def _meta(meta: Meta, paths: PathRedactor) -> Meta:
    return dataclasses.replace(
        meta, cwd="." if meta.cwd else "", target=paths.path(meta.target),
        argv=redact_argv(meta.argv, meta.target, paths), hostname=REDACTED if meta.hostname else "",
        env=tuple((name, REDACTED) for name, _ in meta.env),
        not_recorded=tuple(Note(paths.text(n.what), paths.text(n.why)) for n in meta.not_recorded))


def redact_argv(argv: tuple[str, ...], target: str, paths: PathRedactor) -> tuple[str, ...]:
    """graphdoctor's own options and the target stay (paths redacted); every argument after
    the target, which belongs to the script, becomes <redacted>."""
    if target not in argv:
        return tuple(a if a.startswith("-") or a == "run" else REDACTED for a in argv)
    cut = argv.index(target) + 1
    return (*(paths.path(a) for a in argv[:cut]), *(REDACTED for _ in argv[cut:]))


def _exception(exception: ExceptionRecord, paths: PathRedactor) -> ExceptionRecord:
    chain = tuple(ErrorLink(link.type, paths.text(link.message), link.cuda_error, link.stack)
                  for link in exception.chain)
    return dataclasses.replace(exception, chain=chain)


def _replace_text(record: Any, paths: PathRedactor, names: tuple[str, ...]) -> Any:
    return dataclasses.replace(record, **{n: paths.text(getattr(record, n)) for n in names})


def _diagnosis(diagnosis: Diagnosis, paths: PathRedactor) -> Diagnosis:
    return Diagnosis(verdicts=tuple(_verdict(v, paths) for v in diagnosis.verdicts),
                     findings=tuple(_finding(f, paths) for f in diagnosis.findings))


def _verdict(verdict: Verdict, paths: PathRedactor) -> Verdict:
    return dataclasses.replace(verdict, subject=paths.text(verdict.subject),
                               summary=paths.text(verdict.summary),
                               measurements=_measurements(verdict.measurements, paths))


def _finding(finding: Finding, paths: PathRedactor) -> Finding:
    location = finding.location
    if location is not None:
        inside = _inside_project(paths, location.file)
        location = dataclasses.replace(location, file=paths.path(location.file),
                                       code=location.code if inside else "")
    return dataclasses.replace(
        finding, title=paths.text(finding.title), explanation=paths.text(finding.explanation),
        fix=paths.text(finding.fix), location=location,
        evidence=tuple(dataclasses.replace(e, note=paths.text(e.note)) for e in finding.evidence),
        measurements=_measurements(finding.measurements, paths))


def _measurements(values: Any, paths: PathRedactor) -> Any:
    if isinstance(values, str):
        return paths.text(values)
    if isinstance(values, dict):
        return {paths.text(str(k)): _measurements(v, paths) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [_measurements(v, paths) for v in values]
    return values
