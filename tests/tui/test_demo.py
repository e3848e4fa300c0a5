"""The bundled demo reports: real GPU recordings, shipped in the package, kept current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from graphdoctor.demo import DEFAULT_DEMO, DEMOS, demo_path, load_demo
from tests.conftest import ROOT


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_each_demo_is_a_gpu_recording_in_the_package(name: str) -> None:
    path = demo_path(name)
    assert path.parent == ROOT / "graphdoctor" / "demo" and path.name.endswith(".json.gz")
    report = load_demo(name)
    assert report.trace.meta.cuda_available and report.trace.meta.devices
    assert report.trace.graphs and report.sources


def test_the_default_demo_shows_a_failure_with_its_cause() -> None:
    report = load_demo(DEFAULT_DEMO)
    assert report.trace.graphs[0].status == "failed"
    assert any(f.location and f.location.line == 15 for f in report.diagnosis.findings)


def _make_demo():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_demo", ROOT / "fixtures" / "make_demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_the_demo_says_what_the_current_rules_say(name: str) -> None:
    assert _make_demo().is_current(name), (
        f"graphdoctor/demo/{name}.json.gz is out of date with the rules or the report format: "
        "run python fixtures/make_demo.py, then pytest tests/tui --snapshot-update")


def test_package_data_covers_the_demos_and_stylesheets() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"**/*.json.gz"' in pyproject and '"**/*.tcss"' in pyproject
    assert (Path(demo_path(DEFAULT_DEMO)).parent / "__init__.py").exists()
    assert (ROOT / "graphdoctor" / "tui" / "app.tcss").exists()
