"""A copy of a report that is safe to attach to a public ticket (``--redact``).

What goes:
- paths outside the project (the folder the run started in): a package's file keeps its
  place inside the package (``<site-packages>/torch/cuda/graphs.py``), the standard
  library's keeps its name under ``<python>/``, a home folder itself becomes ``~``, anything
  else becomes ``<redacted>/name.py``; paths inside the project become relative to it;
- the same paths wherever they appear in text (messages, warnings, tracebacks, compile logs,
  stacks, findings);
- the source lines of files outside the project;
- the values of environment variables (their names stay: they explain behaviour), but
  for graphdoctor's own GRAPHDOCTOR_GRAPHS, which says how the run was made;
- the script's arguments and the host name;
- in that text too, as whole words: the host name, the user's name (read from home folders,
  ``/home/NAME`` and ``/Users/NAME``, and ``torchinductor_NAME`` folders anywhere in the
  report), and the values of the script's arguments and of the environment variables that
  are MIN_VALUE_LENGTH characters or longer (a shorter one, like ``1`` or ``cuda``, is too
  common a word to tell from ordinary text; it still goes from the command line);
- secrets, from every text and code line: the values of the environment's secret variables,
  which the report does not record (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``MYSQL_PWD``...;
  given by the caller, read where the redaction runs), credentials in URLs
  (``postgres://user:password@host``) and well-known token shapes (``hf_…``, ``sk-…``,
  ``AKIA…``, JSON Web Tokens...): :mod:`graphdoctor.report.secrets`.

``run --redact --keep-spool`` keeps the recording redacted the same way
(:mod:`graphdoctor.report.redact_spool`).

What stays: the project's own code lines that the findings cite, as written but for
secrets, versions, devices, and every event and figure, so the redacted report diagnoses
the same way.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from graphdoctor.diagnose.findings import Diagnosis, Finding, Verdict
from graphdoctor.report.document import BaselineRun, Report
from graphdoctor.report.secrets import Secrets
from graphdoctor.report.source_lines import is_project_folder
from graphdoctor.trace.model import ErrorLink, ExceptionRecord, Frame, Meta, Note, Trace
from graphdoctor.trace.names import GRAPHS_ENV

REDACTED = "<redacted>"
HOME = "~"
HOST = "<host>"
USER = "<user>"
ARGUMENT = "<argument>"
ENV_VALUE = "<env value>"
PLACEHOLDERS = (REDACTED, HOME, HOST, USER, ARGUMENT, ENV_VALUE, "<site-packages>", "<python>")
MIN_VALUE_LENGTH = 6  # arguments and environment values shorter than this stay in free text
OWN_SWITCHES = frozenset({GRAPHS_ENV})  # graphdoctor's own variables: their values say nothing
# private, and readers need them (a run with CUDA graphs off)
MIN_NAME_LENGTH = 2  # host and user names: one letter names nothing
# What a report's header says of its redaction, either way: one that is not redacted holds
# what the script said, which its reader may be about to paste into a public ticket.
REDACTED_NOTICE = "redacted: private paths, environment values, arguments and secrets removed"
KEPT_NOTICE = ("not redacted: the script's arguments, messages and paths are as recorded; "
               "`graphdoctor report --redact` makes a copy to share")
# What --redact takes out, for the commands' help.
WHAT_GOES = ("paths outside the project (the folder the run started in), environment "
             "values, the script's arguments and the host name; from messages, warnings, logs "
             "and stacks also the host and user names, the home folder (shown as ~) and the "
             "values of arguments and environment variables that are "
             f"{MIN_VALUE_LENGTH} characters or more, as whole words (shorter ones, like 1 or "
             "cuda, are ordinary words and stay there); and from every text and code line, "
             "secrets: the values of the environment's *TOKEN*, *SECRET*, *KEY*, *PASSWORD*, "
             "*_PASS, *_PW, *_PWD and AWS_* variables, credentials in URLs "
             "(postgres://user:password@host), and token shapes (hf_..., sk-..., AKIA..., "
             "JWTs); a kept spool (--keep-spool) is redacted too")
_PACKAGES = re.compile(r"/(?:site|dist)-packages/(.+)$")
_STDLIB = re.compile(r"/lib(?:64)?/python3\.\d+/(.+)$")
_HOME_FOLDER = re.compile(r"^(?:/home/[^/]+|/Users/[^/]+|/root)/?$")
# A user's name in a path: a home folder's (not one in a URL) or torch's cache folder's.
_USER_IN_TEXT = re.compile(
    r"(?:(?<![\w.:/>~-])/(?:home|Users)/|torchinductor_)(?P<user>[\w.-]+)")
# An absolute path inside free text: it starts after a space, quote or bracket, not inside
# a URL (``https://host/...``) or a path already redacted (``<site-packages>/...``).
_PATH_IN_TEXT = re.compile(r"(?<![\w.:/>~-])(?:~|/)[\w.@+~-]*(?:/[\w.@+~-]+)+")


class PathRedactor:
    """Maps a path from the recording machine to what a redacted report shows."""

    def __init__(self, project: str):
        # "/" or a home folder would make every path the project's: a recording that says
        # it ran there (a stranger's, perhaps) has no project folder
        self.project = project.rstrip("/") if is_project_folder(project.rstrip("/")) else ""

    def path(self, path: str) -> str:
        if not path or path.startswith("<"):
            return path  # "<frozen runpy>", "<string>", or already redacted
        if not path.startswith(("/", "~")):
            return path if not path.startswith("..") else f"{REDACTED}/{_name(path)}"
        if self.project and (path == self.project or path.startswith(self.project + "/")):
            return path[len(self.project) + 1:] or "."
        if _HOME_FOLDER.match(path):
            return HOME  # never <redacted>/NAME: the folder's name is the user's
        for pattern, label in ((_PACKAGES, "<site-packages>"), (_STDLIB, "<python>")):
            match = pattern.search(path)
            if match:
                return f"{label}/{match.group(1)}"
        return f"{REDACTED}/{_name(path)}"

    def text(self, text: str) -> str:
        return _PATH_IN_TEXT.sub(lambda m: self.path(m.group(0)), text) if "/" in text else text


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


class Words:
    """Whole words to replace in free text (a word: not next to a letter or a digit)."""

    def __init__(self, replacements: dict[str, str]):
        self.replacements = replacements
        longest_first = sorted(replacements, key=len, reverse=True)
        self.pattern = re.compile(
            r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, longest_first)) + r")(?![A-Za-z0-9])"
        ) if replacements else None

    def sub(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda m: self.replacements[m.group(0)], text)


class Redactor(PathRedactor):
    """Secrets, paths, then the host, user and run's words (see the module doc), in every
    string."""

    def __init__(self, project: str, words: Words, secrets: Secrets):
        super().__init__(project)
        self.words = words
        self.secrets = secrets

    def path(self, path: str) -> str:
        return self.words.sub(super().path(self.secrets.sub(path)))

    def text(self, text: str) -> str:
        return self.words.sub(super().text(self.secrets.sub(text)))

    def code(self, line: str) -> str:
        return self.secrets.sub(line)


class _Rewriter(Protocol):
    def path(self, path: str) -> str: ...

    def text(self, text: str) -> str: ...

    def code(self, line: str) -> str: ...


class _Reader:
    """A rewriter that changes nothing and keeps every path and text it is shown."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def path(self, path: str) -> str:
        self.seen.append(path)
        return path

    text = path
    code = path


def redact(report: Report, secrets: Iterable[str] = ()) -> Report:
    """The report without private paths, names, environment values, arguments or secrets
    (see the module doc); ``secrets``: the values of the environment's secret variables
    (:func:`graphdoctor.report.secrets.secret_values`)."""
    return dataclasses.replace(_rewrite(report, redactor_for(report, secrets)), redacted=True)


def redactor_for(report: Report, secrets: Iterable[str] = ()) -> Redactor:
    """What rewrites each path and text of ``report`` (and of its recording: a kept spool,
    :mod:`graphdoctor.report.redact_spool`) when it is redacted."""
    reader = _Reader()
    _rewrite(report, reader)
    words = Words(secret_words(_metas(report), reader.seen))
    return Redactor(report.trace.meta.cwd, words, Secrets(secrets))


def secret_words(metas: Iterable[Meta], texts: Iterable[str]) -> dict[str, str]:
    """Each word that names the machine, the user or the run, with what replaces it."""
    found: dict[str, str] = {}
    texts = list(texts)
    for meta in metas:
        found.update(dict.fromkeys(_host_names(meta.hostname), HOST))
        found.update(dict.fromkeys(_long(_script_values(meta)), ARGUMENT))
        found.update(dict.fromkeys(_long(value for _, value in meta.env), ENV_VALUE))
        texts += [meta.cwd, meta.target, *meta.argv]
    users = {m["user"] for text in texts for m in _USER_IN_TEXT.finditer(text)}
    found.update(dict.fromkeys((u for u in users if len(u) >= MIN_NAME_LENGTH), USER))
    return {word: label for word, label in found.items()
            if not any(word in placeholder for placeholder in PLACEHOLDERS)}


def _metas(report: Report) -> list[Meta]:
    """Every recorded process's: each rank's, each process the script started."""
    return [report.trace.meta, *(trace.meta for trace in report.other_ranks.values()),
            *(meta for child in report.children for meta in _metas(child))]


def _host_names(hostname: str) -> list[str]:
    """The host's name and, for a dotted one, its first part (how logs often say it)."""
    names = {hostname, hostname.split(".", 1)[0]}
    return [name for name in names if len(name) >= MIN_NAME_LENGTH]


def _script_values(meta: Meta) -> Iterator[str]:
    """The values among the script's arguments: ``--token=VALUE`` gives VALUE, ``--name``
    nothing (an option's name explains, it does not identify)."""
    if meta.command:  # a process the script started: what follows what it ran (-c's code too)
        cut, argv = _after_what_ran(meta.command) - (meta.command[1:2] == ("-c",)), meta.command
    else:
        cut, argv = meta.argv.index(meta.target) + 1 if meta.target in meta.argv else 0, meta.argv
    for argument in argv[cut:]:
        if not argument.startswith("-"):
            yield argument
        elif "=" in argument:
            yield argument.partition("=")[2]


def _long(values: Iterable[str]) -> list[str]:
    return [value for value in values if len(value) >= MIN_VALUE_LENGTH]


def _rewrite(report: Report, rewriter: _Rewriter) -> Report:
    """The report with every path and free text passed through ``rewriter``."""
    paths = PathRedactor(report.trace.meta.cwd)
    sources = {rewriter.path(file): {n: rewriter.code(line) for n, line in lines.items()}
               for file, lines in report.sources.items() if _inside_project(paths, file)}
    return dataclasses.replace(
        report, trace=_trace(report.trace, rewriter),
        diagnosis=_diagnosis(report.diagnosis, rewriter, paths), sources=sources,
        other_ranks={rank: _trace(trace, rewriter) for rank, trace in report.other_ranks.items()},
        baseline=_baseline(report.baseline, rewriter),
        children=[_rewrite(child, rewriter) for child in report.children])


def _baseline(run: BaselineRun | None, rewriter: _Rewriter) -> BaselineRun | None:
    if run is None:
        return None
    return dataclasses.replace(
        run, outcome=rewriter.text(run.outcome),
        switched_off=tuple(rewriter.text(what) for what in run.switched_off),
        kept_as_written=tuple(rewriter.text(what) for what in run.kept_as_written))


def _inside_project(paths: PathRedactor, file: str) -> bool:
    shown = paths.path(file)
    return not shown.startswith(("<", "/", HOME))


def _trace(trace: Trace, rewriter: _Rewriter) -> Trace:
    text = rewriter.text
    return dataclasses.replace(
        trace,
        meta=_meta(trace.meta, rewriter),
        status=_replace_text(trace.status, rewriter, ("message", "stacks_at_end")),
        frames=[Frame(rewriter.path(f.file), f.line, f.func, f.kind) for f in trace.frames],
        functions=[dataclasses.replace(f, file=rewriter.path(f.file), name=text(f.name))
                   for f in trace.functions],
        exceptions=[_exception(e, rewriter) for e in trace.exceptions],
        compile_events=[_replace_text(e, rewriter, ("function", "reason", "detail"))
                        for e in trace.compile_events],
        warnings=[_replace_text(w, rewriter, ("message",)) for w in trace.warnings],
        counters={group: {text(key): value for key, value in counts.items()}
                  for group, counts in trace.counters.items()},
    )


def _meta(meta: Meta, rewriter: _Rewriter) -> Meta:
    return dataclasses.replace(
        meta, cwd="." if meta.cwd else "", target=rewriter.path(meta.target),
        argv=redact_argv(meta.argv, meta.target, rewriter),
        command=redact_command(meta.command, rewriter),
        hostname=REDACTED if meta.hostname else "",
        env=tuple((name, value if name in OWN_SWITCHES else REDACTED)
                  for name, value in meta.env),
        not_recorded=tuple(Note(rewriter.text(n.what), rewriter.text(n.why))
                           for n in meta.not_recorded),
        sources=tuple(dataclasses.replace(s, file=rewriter.path(s.file)) for s in meta.sources
                      if _inside_project(PathRedactor(meta.cwd), s.file)))


def redact_argv(argv: tuple[str, ...], target: str, paths: _Rewriter) -> tuple[str, ...]:
    """graphdoctor's own options and the target stay (paths redacted); every argument after
    the target, which belongs to the script, becomes <redacted>."""
    if target not in argv:
        return tuple(a if a.startswith("-") or a == "run" else REDACTED for a in argv)
    cut = argv.index(target) + 1
    return (*(paths.path(a) for a in argv[:cut]), *(REDACTED for _ in argv[cut:]))


# Python's own options that take the next argument as their value.
_VALUED_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def redact_command(command: tuple[str, ...], paths: _Rewriter) -> tuple[str, ...]:
    """A process the script started: its interpreter and Python's own options stay (paths
    redacted), then what it ran (a script's path redacted, a module's name, ``-c``); the
    code of ``-c`` and every argument after what it ran become <redacted>."""
    ran = _after_what_ran(command)
    kept = [paths.path(part) if index in (0, ran - 1) and not part.startswith("-") else part
            for index, part in enumerate(command[:ran])]
    return (*kept, *(REDACTED for _ in command[ran:]))


def _after_what_ran(command: tuple[str, ...]) -> int:
    """Where the arguments of what a Python command line ran begin: after its interpreter,
    Python's own options, and the script, ``-m module`` or ``-c``."""
    index = 1
    while index < len(command) and command[index].startswith("-") \
            and command[index] not in ("-c", "-m"):
        index += 2 if command[index] in _VALUED_OPTIONS else 1
    if index < len(command):
        index += 2 if command[index] == "-m" else 1
    return min(index, len(command))


def _exception(exception: ExceptionRecord, rewriter: _Rewriter) -> ExceptionRecord:
    chain = tuple(ErrorLink(link.type, rewriter.text(link.message), link.cuda_error, link.stack)
                  for link in exception.chain)
    return dataclasses.replace(exception, chain=chain)


def _replace_text(record: Any, rewriter: _Rewriter, names: tuple[str, ...]) -> Any:
    return dataclasses.replace(record, **{n: rewriter.text(getattr(record, n)) for n in names})


def _diagnosis(diagnosis: Diagnosis, rewriter: _Rewriter, paths: PathRedactor) -> Diagnosis:
    return Diagnosis(verdicts=tuple(_verdict(v, rewriter) for v in diagnosis.verdicts),
                     findings=tuple(_finding(f, rewriter, paths) for f in diagnosis.findings))


def _verdict(verdict: Verdict, rewriter: _Rewriter) -> Verdict:
    return dataclasses.replace(verdict, subject=rewriter.text(verdict.subject),
                               summary=rewriter.text(verdict.summary),
                               measurements=_measurements(verdict.measurements, rewriter))


def _finding(finding: Finding, rewriter: _Rewriter, paths: PathRedactor) -> Finding:
    location = finding.location
    if location is not None:
        inside = _inside_project(paths, location.file)
        location = dataclasses.replace(location, file=rewriter.path(location.file),
                                       code=rewriter.code(location.code) if inside else "")
    return dataclasses.replace(
        finding, title=rewriter.text(finding.title),
        explanation=rewriter.text(finding.explanation), fix=rewriter.text(finding.fix),
        location=location, measurements=_measurements(finding.measurements, rewriter),
        evidence=tuple(dataclasses.replace(e, note=rewriter.text(e.note))
                       for e in finding.evidence))


def _measurements(values: Any, rewriter: _Rewriter) -> Any:
    if isinstance(values, str):
        return rewriter.text(values)
    if isinstance(values, dict):
        return {rewriter.text(str(k)): _measurements(v, rewriter) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [_measurements(v, rewriter) for v in values]
    return values
