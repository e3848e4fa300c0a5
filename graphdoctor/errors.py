"""graphdoctor's own errors. The CLI turns each into one line on stderr and its exit code."""

from __future__ import annotations

USAGE_EXIT = 2


class GraphDoctorError(Exception):
    """An error the user can act on; ``str(error)`` is the whole message."""

    exit_code = USAGE_EXIT


class ReportError(GraphDoctorError):
    """A report that cannot be read: missing, truncated, foreign, or from a newer schema."""


class UnwritableFolderError(GraphDoctorError):
    """A folder graphdoctor must write a file in, but cannot."""

    def __init__(self, folder: object, error: OSError):
        super().__init__(f"cannot write in {folder} ({error.strerror or error})")


class NoCudaDevice(GraphDoctorError):
    """``graphdoctor.check`` was asked to capture a graph where no CUDA device is available."""


class NoCudaWarning(UserWarning):
    """A recording was made where no CUDA device is available: it holds torch.compile's
    events only, and no graph can have been captured."""
