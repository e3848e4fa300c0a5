"""``python -m graphdoctor.launch.launcher ARGS``: torch.distributed's launcher (torchrun)
with ARGS, ended with ``graphdoctor run``.

torchrun passes graphdoctor's Ctrl-C, SIGTERM, SIGHUP and SIGQUIT on to its ranks by
itself; what it cannot see is graphdoctor killed outright. Run from here, it ends itself
then (see :mod:`graphdoctor.launch.lifeline`), and each rank, watching it, does the same.
"""

from __future__ import annotations

import runpy

from graphdoctor.launch.lifeline import end_with_parent

LAUNCHER = "torch.distributed.run"


def main() -> None:
    end_with_parent(records=False)  # each rank looks after its own recording
    runpy.run_module(LAUNCHER, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
