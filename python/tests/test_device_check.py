"""python/benchmarks/device_check.sh, the script a GPU machine runs, in its
CPU dry run: the same code path on gloo (2 ranks, tiny images), so it
cannot rot where no GPU is lent. It must print every exact check as ok
and the step-time table."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import torch

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "device_check.sh"


def test_device_check_dry_run(tmp_path):
    if not SCRIPT.is_file():
        pytest.skip(f"skipped: no {SCRIPT} (run from a checkout)")
    if tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 6):
        pytest.skip(f"skipped: the dry run checks FSDP2 too, which needs torch >= 2.6 (this is {torch.__version__}; "
                    "CI runs it on torch 2.15)")
    env = dict(os.environ, PYTHON=sys.executable)
    r = subprocess.run(["bash", str(SCRIPT), "--dry-run", str(tmp_path / "out")], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    lines = [ln for ln in r.stdout.splitlines() if "= virtual (cpu)" in ln]
    assert len(lines) == 6 and all(ln.endswith(": ok") for ln in lines), r.stdout
    for mode in ("allreduce_hook", "g-binary", "backbone=g-binary,head=fp32", "noop"):
        assert any(ln.startswith(mode + " ") for ln in r.stdout.splitlines()), mode
    assert (tmp_path / "out" / "device_check.json").is_file()
