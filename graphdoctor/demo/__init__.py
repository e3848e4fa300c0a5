"""Reports recorded on a GPU and bundled with graphdoctor, so that ``graphdoctor view --demo``
shows the terminal UI on any machine, GPU or not. ``python fixtures/make_demo.py`` rebuilds
them from the recordings in ``fixtures/recordings/``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from graphdoctor.errors import GraphDoctorError

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

DEMOS = {
    "item_in_capture": "a capture that fails: .item() inside torch.cuda.graph",
    "launch_bound": "a graph that pays off: 200 tiny matmuls, launch-bound when run eagerly",
    "unjoined_side_stream": "a capture that fails: side-stream work never joined back",
}
DEFAULT_DEMO = "item_in_capture"


def demo_path(name: str) -> Path:
    if name not in DEMOS:
        known = ", ".join(DEMOS)
        raise GraphDoctorError(f"no demo named {name!r}; the demos are: {known}")
    return Path(str(resources.files(__name__).joinpath(f"{name}.json.gz")))


def load_demo(name: str = DEFAULT_DEMO) -> Report:
    from graphdoctor.report.io import load

    return load(demo_path(name))
