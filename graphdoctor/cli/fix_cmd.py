"""``graphdoctor fix``: each fixable finding's fix as a patch of the user's files; with
``--apply`` written, with ``--verify`` proven by running the patched copy again."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

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
FIX_HELP = f"""Print the fix of each finding of REPORT that has one as a patch of your
files (a unified diff on stdout, for git apply or patch -p1 in the folder the
run ran in); --apply writes it, --verify runs the patched script again.

{GIVEN_HELP}

\b
  graphdoctor fix run.json               the patch, to read
  graphdoctor fix run.json > fix.patch   to apply later: git apply fix.patch
  graphdoctor fix run.json --apply       write it into your files
  graphdoctor fix run.json --verify      run a patched copy under graphdoctor
                                         run, and compare the verdicts

Rules with a patch: {", ".join(sorted(PATCHERS))}. A file is patched only if it
is one the report names, on the machine it was recorded on, in the folder it
ran in, unchanged since the run (by its SHA-256).

\b
Exit codes:
  0  the patch was printed, written, or proven by the run again
  1  no finding could be patched (each says why: a file changed since the
     run, written in a way no patch is made for...), or --verify found what
     the patch claims to fix still there (or a verdict worse)
  2  the report cannot be read, a file changed while being patched, or a
     usage error
"""


@click.command("fix", help=FIX_HELP)
@reports_argument()
@click.option("--apply", "apply_patch", is_flag=True, help="Write the patch into the files.")
@click.option("--verify", "verify_patch", is_flag=True,
              help="Patch a copy of the script's folder, run it again under graphdoctor run "
                   "(in the folder the run ran in) and compare.")
@click.option("--rule", "rules", multiple=True, metavar="ID", callback=lambda _c, _p, v:
              tuple(_patched_rule(name) for name in v),
              help="Patch only this rule's findings (its id or name: GD101, "
                   "sync-in-capture); again for more.")
@click.option("--every", type=click.IntRange(min=2), default=Options.every, show_default=True,
              metavar="N", help="A sync between replays (GD203) runs every N steps.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              metavar="SECONDS", help="How long --verify's run may take.")
@handle_errors
def fix(report_files: tuple[Path, ...], apply_patch: bool, verify_patch: bool,
        rules: tuple[str, ...], every: int, timeout: float) -> None:
    if apply_patch and verify_patch:
        raise GraphDoctorError("--apply or --verify, not both: verify first, then apply")
    report = open_given(report_files)
    found = plan(report, files.recorded_files(report), Options(every),
                 frozenset(rule.upper() for rule in rules))
    _tell(found)
    if not found.files:
        sys.exit(NOT_PROVEN_EXIT)
    if verify_patch:
        sys.exit(_verified(report, found, timeout))
    if apply_patch:
        for patch in found.files:
            say(f"graphdoctor: patched {files.write(patch, report.trace.meta.cwd)}")
        return
    sys.stdout.write("".join(patch.diff for patch in found.files))


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
        say(f"graphdoctor: {_named(fix_.finding)}: {fix_.change.says} ({fix_.file})")
    for left in found.left:
        if left.why != NO_PATCHER:
            say(f"graphdoctor: not patched: {_named(left.finding)}: {left.why}")
    if not found.fixes:
        say("graphdoctor: no finding of this report has a patch")


def _named(finding: Finding) -> str:
    return f"{finding.id} {finding.name}" + (f" (rank {finding.rank})" if finding.rank >= 0
                                              else "")


def _verified(report: Report, found: Plan, timeout: float) -> int:
    rerun = _rerun_of(report)
    folder, script, outside = verify.copy_and_patch(found, rerun)
    output = folder / verify.AFTER
    say(f"graphdoctor: running the patched copy: graphdoctor run {shlex.join(rerun.options)}"
        f" {shlex.quote(str(script))} {shlex.join(rerun.args)}".rstrip())
    exit_code = verify.run_again(rerun, script, output, timeout)
    after = load(output) if output.exists() and output.stat().st_size else None
    changes, fixed = verify.compared(report, after, found) if after else ((), ())
    proof = verify.Proof(folder, exit_code, after, changes, fixed, outside)
    for line in _proof_lines(proof):
        say(line)
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


def _rerun_of(report: Report) -> verify.Rerun:
    """The report's ``graphdoctor run`` command, read with run's own options."""
    from graphdoctor.cli.run import run

    meta = report.trace.meta
    if meta.argv[:1] != ("run",) or meta.target_kind != PATH_TARGET:
        raise GraphDoctorError("--verify runs again what graphdoctor run SCRIPT ran; this "
                               "report is of another kind of run")
    with run.make_context("run", list(meta.argv[1:]), resilient_parsing=True) as context:
        given = context.params
    script = str(given.get("target") or meta.target)
    vouched = files.recorded_files(report)(os.path.normpath(os.path.join(meta.cwd, script)))
    if isinstance(vouched, str):  # a stranger's report must not pick what runs here
        raise GraphDoctorError(f"--verify runs only a script this report recorded on this "
                               f"machine, unchanged since; {script}: {vouched}")
    options = [*(["--full"] if given.get("full") else []),
               *(["--timeout", str(given["timeout"])] if given.get("timeout") else []),
               *(["--cupti"] if given.get("cupti") else []),
               *(["--nproc-per-node", str(given["nproc"])] if given.get("nproc", 1) > 1 else [])]
    return verify.Rerun(tuple(options), script, tuple(given.get("args") or ()), meta.cwd)
