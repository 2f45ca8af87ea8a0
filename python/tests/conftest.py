"""Shared fixtures: the Go CLI (for golden vectors) and a gloo launcher."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def nfabric_cli(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The Go nfabric binary, built once per test session from this
    checkout. Skips (with the reason) when Go or the Go sources are absent."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("skipped: 'go' is not on PATH, so the Go golden vectors cannot be made; "
                    "install Go 1.26 (https://go.dev/dl) to run the bit-exact checks")
    if not (REPO / "cmd" / "nfabric").is_dir():
        pytest.skip(f"skipped: no Go sources at {REPO}/cmd/nfabric (run the tests from a checkout)")
    out = tmp_path_factory.mktemp("go") / "nfabric"
    r = subprocess.run([go, "build", "-o", str(out), "./cmd/nfabric"], cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"go build ./cmd/nfabric failed:\n{r.stderr}")
    return out


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Deterministic CPU reductions, and the shared 2-core CI machine.
    torch.set_num_threads(1)
