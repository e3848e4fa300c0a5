"""``graphdoctor fix``: the fix a finding describes, written as a patch of the user's own
files, and proven by running again.

The stage after the report: a report's findings, and the source files they name, become
patches (:mod:`graphdoctor.fix.plan`). Each patchable rule has its patcher, a pure function
of the finding and the file's syntax tree, listed in :mod:`graphdoctor.fix.patchers`. Files
are read only as a report from elsewhere may read them (:mod:`graphdoctor.report.source_lines`):
recorded on this machine, in the recording's own folder, with the content the recording
digested; so a patch is never written into a file the report does not name, or one that
changed since the run. A report is anyone's text, so what is written and run is what the
person at the keyboard names: files under the current folder, never an installation's
(:mod:`graphdoctor.fix.files`), and the command given to ``--verify``, which
:mod:`graphdoctor.fix.verify` runs on a patched copy.
"""
