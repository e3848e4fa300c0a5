"""graphdoctor's own lines from the launch side: on stderr, so the script's stdout stays its
own, and never an error of their own once nobody reads them."""

from __future__ import annotations

import os
import sys

from graphdoctor.columns import notice, stderr_width


def tell(line: str) -> None:
    """``line`` on stderr, wrapped to the terminal as every line of graphdoctor's is."""
    try:
        sys.stderr.write(notice(line, stderr_width()) + "\n")
        sys.stderr.flush()
    except OSError:  # the terminal is gone (closed, hung up): nobody is left to read it
        _discard_stderr()
    except ValueError:  # stderr was closed
        pass


def _discard_stderr() -> None:
    """Send stderr to the null device, so that what is still buffered cannot fail again at
    exit and change the exit code."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stderr.fileno())
    os.close(devnull)


def listed(pids_and_names: list[tuple[int, str]], most: int = 5) -> str:
    """``pid 12: sleep, pid 13: python`` and, past ``most``, how many more."""
    shown = [f"pid {pid}: {name}" for pid, name in pids_and_names[:most]]
    more = len(pids_and_names) - most
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def processes(count: int) -> str:
    return f"{count} process" + ("" if count == 1 else "es")
