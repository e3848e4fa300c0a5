"""Markers and options shared by every test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "fixtures" / "recordings"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-gpu", action="store_true",
                     help="fail, rather than skip, tests marked gpu when CUDA is missing")
    parser.addoption("--record-dir", default=None,
                     help="where GPU tests write their fresh recordings (default: a temp dir)")
    parser.addoption("--use-recordings", action="store_true",
                     help="with --record-dir: check the recordings already there, record none")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "gpu" not in item.keywords or cuda_available():
        return
    if item.config.getoption("--require-gpu"):
        pytest.fail("--require-gpu was given but no CUDA device is available", pytrace=False)
    pytest.skip("needs a CUDA device")


def load_note(directory: Path, name: str) -> dict:
    return json.loads((directory / f"{name}.json").read_text())
