"""``graphdoctor fix``: each fixable finding's fix as a patch of the user's files; with
``--apply`` written, with ``--verify`` proven by running the patched copy again.

A report is anyone's text, so ``fix`` runs and writes only what the person at the keyboard
names: ``--verify`` runs the command given after ``--`` (or, on a terminal, the report's own
script once the person has read the exact command and said yes), in the current folder;
``--apply`` writes only files under the current folder (:mod:`graphdoctor.fix.files`). What
it prints of the report (finding names, file names, verdicts) is cleaned as ``report``
cleans it, each on its line.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import click

from graphdoctor.clean_text import clean, clean_line
from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.reporting import GIVEN_HELP, open_given, reports_argument
from graphdoctor.diagnose.findings import Finding
from graphdoctor.errors import GraphDoctorError
from graphdoctor.fix import files, verify
from graphdoctor.fix.patchers import PATCHERS, Options
from graphdoctor.fix.plan import NO_PATCHER, Plan, plan
from graphdoctor.report.document import Report
from graphdoctor.report.io import load
from graphdoctor.trace.names import PATH_TARGET

NOT_PROVEN_EXIT = 1
RUN_AGAIN = "graphdoctor.fix.command"  # where the words after -- wait (click's context meta)
NEEDS_COMMAND = ("--verify runs the command you give it, never one read from the report: "
                 "graphdoctor fix REPORT --verify -- SCRIPT [ARGS]...")
FIX_HELP = f"""Print the fix of each finding of REPORT that has one as a patch of your
files (a unified diff on stdout, for git apply or patch -p1 in the current
folder); --apply writes it, --verify runs a patched copy of your script.

{GIVEN_HELP}

\b
  graphdoctor fix run.json               the patch, to read
  graphdoctor fix run.json > fix.patch   to apply later: git apply fix.patch
  graphdoctor fix run.json --apply       write it into your files
  graphdoctor fix run.json --verify -- train.py --lr 3e-4
                                         run a patched copy of train.py under
                                         graphdoctor run, and compare verdicts

Rules with a patch: {", ".join(sorted(PATCHERS))}. A file is patched only if it
is one the report names, recorded on this machine, unchanged since the run (by
its SHA-256), and under the current folder: never one in a virtual
environment, a site-packages folder or the Python installation. --verify runs
the script and arguments given after --, in the current folder; on a terminal,
given none, it shows the report's own script's command and asks (default no).

\b
Exit codes:
  0  the patch was printed, written, or proven by the run again
  1  no finding could be patched (each says why: a file changed since the
     run, written in a way no patch is made for...), or --verify found what
     the patch claims to fix still there (or a verdict worse)
  2  the report cannot be read, a file changed while being patched, --verify
     had no command to run, or a usage error
"""


class FixCommand(click.Command):
    """fix's command line, with what follows ``--`` kept apart: the command ``--verify``
    runs, never taken for a report."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[RUN_AGAIN] = tuple(args[cut + 1:])
            args = args[:cut]
        return super().parse_args(ctx, args)


@click.command("fix", cls=FixCommand, help=FIX_HELP)
@reports_argument()
@click.option("--apply", "apply_patch", is_flag=True, help="Write the patch into the files.")
@click.option("--verify", "verify_patch", is_flag=True,
              help="Patch a copy of the script's folder and run the command given after -- "
                   "under graphdoctor run (in the current folder), then compare.")
@click.option("--rule", "rules", multiple=True, metavar="ID", callback=lambda _c, _p, v:
              tuple(_patched_rule(name) for name in v),
              help="Patch only this rule's findings (its id or name: GD101, "
                   "sync-in-capture); again for more.")
@click.option("--every", type=click.IntRange(min=2), default=Options.every, show_default=True,
              metavar="N", help="A sync between replays (GD203) runs every N steps.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              metavar="SECONDS", help="How long --verify's run may take.")
@click.option("--nproc-per-node", "nproc", type=click.IntRange(min=1), default=1,
              metavar="N", help="--verify: start N ranks, as graphdoctor run does.")
@handle_errors
def fix(report_files: tuple[Path, ...], apply_patch: bool, verify_patch: bool,
        rules: tuple[str, ...], every: int, timeout: float, nproc: int) -> None:
    command = click.get_current_context().meta.get(RUN_AGAIN)
    if apply_patch and verify_patch:
        raise GraphDoctorError("--apply or --verify, not both: verify first, then apply")
    if command is not None and not verify_patch:
        raise GraphDoctorError("a command after -- is for --verify to run")
    report = open_given(report_files)
    here = os.getcwd()
    found = plan(report, files.patchable_files(report, here), Options(every),
                 frozenset(rule.upper() for rule in rules), folder=here)
    _tell(found)
    if not found.files:
        sys.exit(NOT_PROVEN_EXIT)
    if verify_patch:
        rerun = _rerun(report, command, verify.Rerun(_options(timeout, nproc), "", (), here))
        sys.exit(_verified(report, found, rerun, timeout, ask=not command))
    if apply_patch:
        for patch in found.files:
            _say(f"graphdoctor: patched {files.write(patch, here)}")
        return
    diff = "".join(patch.diff for patch in found.files)
    sys.stdout.write(clean(diff) if sys.stdout.isatty() else diff)  # a file's: for git apply


def _say(line: str) -> None:
    """A line of graphdoctor's that quotes the report: shown, never obeyed, and one line."""
    say(clean_line(line))


def _patched_rule(name: str) -> str:
    """``--rule``'s id (given as an id or a name): a rule no patch is made for, or none at
    all, is a usage error, since no finding of it could ever be patched."""
    from graphdoctor.diagnose.rules import no_such_rule, rule_named

    rule = rule_named(name)
    if rule is None:
        raise click.BadParameter(no_such_rule(name))
    if rule.id not in PATCHERS:
        raise click.BadParameter(f"{rule.id} {rule.name} has no patch; rules with a patch: "
                                 f"{', '.join(sorted(PATCHERS))}")
    return rule.id


def _tell(found: Plan) -> None:
    """What each patch does, and why each other finding has none, on stderr."""
    for fix_ in found.fixes:
        _say(f"graphdoctor: {_named(fix_.finding)}: {fix_.change.says} ({fix_.file})")
    for left in found.left:
        if left.why != NO_PATCHER:
            _say(f"graphdoctor: not patched: {_named(left.finding)}: {left.why}")
    if not found.fixes:
        _say("graphdoctor: no finding of this report has a patch")


def _named(finding: Finding) -> str:
    return f"{finding.id} {finding.name}" + (f" (rank {finding.rank})" if finding.rank >= 0
                                              else "")


def _options(timeout: float, nproc: int) -> tuple[str, ...]:
    return ("--timeout", f"{timeout:g}", *(("--nproc-per-node", str(nproc)) if nproc > 1 else ()))


def _verified(report: Report, found: Plan, rerun: verify.Rerun, timeout: float,
              ask: bool) -> int:
    """Patch a copy, run it (asking first, showing the exact command, where the person gave
    none), compare; the exit code."""
    folder, script, outside = verify.copy_and_patch(found, rerun)
    output = folder / verify.AFTER
    shown = shlex.join(["graphdoctor", *verify.command(rerun, script, output)[3:]])
    if ask and not _agreed(shown, rerun.cwd):
        shutil.rmtree(folder, ignore_errors=True)
        raise GraphDoctorError(f"nothing was run; {NEEDS_COMMAND}")
    _say(f"graphdoctor: running the patched copy: {shown}")
    exit_code = verify.run_again(rerun, script, output, timeout)
    after = load(output) if output.exists() and output.stat().st_size else None
    changes, fixed = verify.compared(report, after, found) if after else ((), ())
    proof = verify.Proof(folder, exit_code, after, changes, fixed, outside)
    for line in _proof_lines(proof):
        _say(line)
    return 0 if proof.proven else NOT_PROVEN_EXIT


def _proof_lines(proof: verify.Proof) -> list[str]:
    if proof.after is None:
        return [f"graphdoctor: the run again left no report (exit code {proof.exit_code}); "
                f"not proven. Its folder: {proof.folder}"]
    lines = [f"graphdoctor: {change.subject}: {verify.said(change.before)} → "
             f"{verify.said(change.after)}" + (" (worse)" if change.worse else "")
             for change in proof.verdicts]
    lines += [f"graphdoctor: {_named(fixed.finding)}: "
              + ("gone" if gone else "still there: the patch did not fix it")
              for fixed, gone in proof.fixed]
    lines += [f"graphdoctor: {name} is outside the script's folder: not in the copy, not "
              "verified" for name in proof.outside]
    ending = "proven: apply it with --apply" if proof.proven else "not proven"
    return [*lines, f"graphdoctor: {ending}; the run again's report: "
                    f"{proof.folder / verify.AFTER}"]


def _rerun(report: Report, command: tuple[str, ...] | None, rerun: verify.Rerun
           ) -> verify.Rerun:
    """The command --verify runs: the one given after --; else, where a person can be asked
    (:func:`_agreed`), the report's own script and arguments."""
    if command:
        return _checked(rerun, command[0], command[1:])
    if not _interactive():
        raise GraphDoctorError(NEEDS_COMMAND)
    script, args = _recorded_command(report, rerun.cwd)
    return _checked(rerun, script, args)


def _agreed(shown: str, cwd: str) -> bool:
    """Whether the person, shown the exact command, says to run it (no, unless they say
    yes). A command a terminal would act on is not shown, nor run."""
    if clean_line(shown) != shown:
        raise GraphDoctorError(f"the report's command holds characters a terminal would act "
                               f"on; {NEEDS_COMMAND}")
    say(f"graphdoctor: --verify would run, in {clean_line(cwd)}, a patched copy of the "
        f"report's script:\n  {shown}")
    return click.confirm("Run it?", default=False, err=True)


def _interactive() -> bool:
    """Whether a person can be asked: a terminal to read the answer from and to ask on."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def _checked(rerun: verify.Rerun, script: str, args: tuple[str, ...] | list[str]
             ) -> verify.Rerun:
    """``script`` and ``args`` to run again, once ``script`` is a Python file here."""
    from graphdoctor.cli.native import is_native
    from graphdoctor.cli.run import check_target

    check_target(script, False, tuple(args))
    if not os.path.isfile(script) or is_native(script, False):
        raise GraphDoctorError(f"--verify runs a Python script, and {script} is not one")
    return verify.Rerun(rerun.options, script, tuple(args), rerun.cwd)


def _recorded_command(report: Report, here: str) -> tuple[str, list[str]]:
    """The script the report recorded (as a path from ``here``) and its arguments, offered
    only where it is a file of the report's that ``fix`` could patch: in this folder, with
    the content the recording digested."""
    from graphdoctor.cli.run import run

    meta = report.trace.meta
    if meta.argv[:1] != ("run",) or meta.target_kind != PATH_TARGET:
        raise GraphDoctorError(NEEDS_COMMAND)
    with run.make_context("run", list(meta.argv[1:]), resilient_parsing=True) as context:
        given = context.params
    named = os.path.normpath(os.path.join(meta.cwd, str(given.get("target") or meta.target)))
    script = files.patchable_files(report, here)(named)
    if isinstance(script, str):
        raise GraphDoctorError(f"the report's script is not offered ({script}); "
                               f"{NEEDS_COMMAND}")
    return os.path.relpath(script.path, here), list(given.get("args") or ())
