"""``graphdoctor run ./program``: a native program (an ELF executable, not a Python script),
recorded through CUPTI's injection mechanism (:mod:`graphdoctor.record.native`). Its
library is built here, before the run starts, so a missing compiler or wheel is one line
and exit 2, not a run that records nothing."""

from __future__ import annotations

import os
import stat

from graphdoctor.errors import GraphDoctorError

ELF_MAGIC = b"\x7fELF"


def is_native(target: str, module: bool) -> bool:
    """Whether ``target`` names an executable file of machine code (ELF), not Python."""
    if module:
        return False
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            return False
        with open(target, "rb") as file:
            return file.read(len(ELF_MAGIC)) == ELF_MAGIC
    except OSError:
        return False


def prepare_native(target: str, nproc: int, baseline: bool) -> None:
    """Check what a native run cannot do, build the library, and name it for the child."""
    from graphdoctor.record.native.build import library
    from graphdoctor.record.native.run import LIBRARY_ENV

    if nproc > 1 or baseline:
        raise GraphDoctorError(f"{target} is a native program: --nproc-per-node and --baseline "
                               "run Python scripts only")
    if not os.access(target, os.X_OK):
        raise GraphDoctorError(f"{target} is not executable (chmod +x {target})")
    os.environ[LIBRARY_ENV] = str(library())
