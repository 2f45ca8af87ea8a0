"""A torch.profiler trace of a real 2-rank run prices to the model's
gradient bytes: the CIFAR ResNet-18 example on synthetic data, 2 gloo
ranks on the CPU, FP32 DDP, profiled by torch's own profiler for two steps
after a warm-up (record_shapes=True, Chrome trace export); `nfabric whatif`
reads rank 0's trace. Checked: two steps, 2 workers, and in each step the
all-reduce bytes sum to the model's gradient bytes (4 x its parameters,
counted here from the model); the other collectives are the buffer
broadcasts DDP makes, priced on the network and shown."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys

import pytest
import torch

import nfabric

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torch"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not torch.autograd.kineto_available(),
                    reason="this torch is built without Kineto (as Debian's python3-torch): its legacy profiler "
                           "exports no tensor shapes, so no collective sizes; run with a Kineto build (pip install torch). "
                           "The Go test traces.TestTorchRecordedGloo prices a recorded Kineto trace of a 2-rank gloo job")
def test_profile_then_whatif(tmp_path, nfabric_cli):
    trace = tmp_path / "prof.json"
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(pathlib.Path(nfabric.__file__).resolve().parents[1]), str(EXAMPLES)]))
    cmd = [sys.executable, str(EXAMPLES / "cifar_resnet18.py"), "--synthetic", "48", "--image", "8", "--epochs", "1",
           "--batch", "16", "--data", "cifar10", "--policy", "fp32", "--device", "cpu", "--profile", str(trace),
           "--profile-steps", "2"]
    procs = [subprocess.Popen(cmd, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, o in zip(procs, outs):
        assert p.returncode == 0, o
    rank0 = tmp_path / "prof.0.json"
    assert rank0.exists() and (tmp_path / "prof.1.json").exists()

    sys.path.insert(0, str(EXAMPLES))
    from models import ResNet
    params = sum(p.numel() for p in ResNet(10, 64, (2, 2, 2, 2)).parameters())

    r = subprocess.run([str(nfabric_cli), "whatif", "--trace", str(rank0), "--net", "ib", "--plan", "fp32", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    w = json.loads(r.stdout)["data"]
    assert w["workers"] == 2
    assert len(w["steps"]) == 2, w["steps"]
    for s in w["steps"]:
        reduced = sum(b["bytes"] for b in w["buckets"] if b["step"] == s["step"] and b["op"] == "all-reduce")
        assert reduced == 4 * params == s["fp32_bytes"], (s, reduced, params)
        assert s["backward_s"] > 0 and s["forward_s"] > 0
    ops = {b["op"] for b in w["buckets"]}
    assert ops <= {"all-reduce", "broadcast"}, ops
    assert w["source"]["format"] == "torch.profiler Chrome trace"
