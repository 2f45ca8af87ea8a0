"""docs/pytorch.md's ten-line example runs (one gloo rank, CPU, a small model
and loader standing in for the user's)."""

from __future__ import annotations

import os
import pathlib
import re

import pytest
import torch
import torch.distributed as dist

README = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pytorch.md"


def test_readme_example_runs(tmp_path, capsys):
    if not README.is_file():
        pytest.skip(f"skipped: no README at {README}")
    text = README.read_text()
    sec = text[text.index("# Use nfabric in your PyTorch training"):]
    code = re.search(r"```python\n(.*?)```", sec, re.S).group(1)
    assert len([ln for ln in code.splitlines() if ln.strip()]) <= 12
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="0", RANK="0", WORLD_SIZE="1")
    code = code.replace('dist.init_process_group("nccl")',
                        f'dist.init_process_group("gloo", init_method="file://{tmp_path}/init", rank=0, world_size=1)')
    code = code.replace(".cuda()", "").replace("Warmup(500)", "Warmup(2)")
    env = {"MyModel": lambda: torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)),
           "loader": [(torch.randn(6, 4), torch.randint(3, (6,))) for _ in range(4)]}
    try:
        exec(compile(code, str(README), "exec"), env)
    finally:
        dist.destroy_process_group()
    out = capsys.readouterr().out
    assert "group head" in out and "4 steps, low-bit step fraction 0.5000" in out
