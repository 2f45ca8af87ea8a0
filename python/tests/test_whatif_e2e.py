"""End to end, as a user runs it: the CIFAR ResNet-18 example on synthetic data,
2 gloo ranks on the CPU, records steps 1 and 2; `nfabric whatif` prices
the trace. Checked: the buckets' bytes sum to the model's gradient bytes
(4 x its parameters, counted here from the model), every bucket's groups
and modes are the policy's, and the what-if's FP32 All-Reduce time of
every bucket is `nfabric collective`'s ring time for the same elements."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys

import nfabric

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torch"
POLICY = "backbone=g-binary,head=fp32"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_record_then_whatif(tmp_path, nfabric_cli):
    trace = tmp_path / "trace.json"
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(pathlib.Path(nfabric.__file__).resolve().parents[1]), str(EXAMPLES)]))
    cmd = [sys.executable, str(EXAMPLES / "cifar_resnet18.py"), "--synthetic", "48", "--image", "8", "--epochs", "1",
           "--batch", "16", "--data", "cifar10", "--policy", POLICY, "--device", "cpu", "--record", str(trace),
           "--record-steps", "1,2"]
    procs = [subprocess.Popen(cmd, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, o in zip(procs, outs):
        assert p.returncode == 0, o

    sys.path.insert(0, str(EXAMPLES))
    from models import ResNet
    model = ResNet(10, 64, (2, 2, 2, 2))
    params = sum(p.numel() for p in model.parameters())
    head = sum(p.numel() for p in model.fc.parameters())

    t = json.loads(trace.read_text())
    assert t["workers"] == 2 and [s["step"] for s in t["steps"]] == [1, 2]
    for s in t["steps"]:
        assert sum(b["bytes"] for b in s["buckets"]) == 4 * params
        per = {}
        for b in s["buckets"]:
            assert sum(g["elements"] for g in b["groups"]) == b["elements"] == b["bytes"] // 4
            for g in b["groups"]:
                assert g["mode"] == {"backbone": "g-binary", "head": "fp32"}[g["name"]]
                per[g["name"]] = per.get(g["name"], 0) + g["elements"]
            assert ("encode_us" in b) == any(g["mode"] != "fp32" for g in b["groups"])
        assert per == {"head": head, "backbone": params - head}
        assert s["forward_us"] > 0 and s["backward_us"] >= s["buckets"][-1]["ready_us"] and s["optimizer_us"] > 0

    r = subprocess.run([str(nfabric_cli), "whatif", "--trace", str(trace), "--workers", "2", "--net", "ib",
                        "--plan", POLICY, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    w = json.loads(r.stdout)["data"]
    assert len(w["steps"]) == 2 and len(w["buckets"]) == sum(len(s["buckets"]) for s in t["steps"])
    ring = {}
    for b in w["buckets"]:
        e = b["bytes"] // 4
        if e not in ring:
            c = subprocess.run([str(nfabric_cli), "collective", "--elements", str(e), "--workers", "2", "--per-node", "1",
                                "--net", "ib", "--exposure", "0", "--json"], capture_output=True, text=True)
            assert c.returncode == 0, c.stderr
            rows = json.loads(c.stdout)["data"]["fig7"]["rows"]
            ring[e] = next(x["seconds"] for x in rows if x["path"] == "FP32 NCCL/RDMA ring")
        assert abs(b["fp32_s"] - ring[e]) <= 1e-12 * ring[e], (b, ring[e])
    for s in w["steps"]:
        assert s["fp32_bytes"] == 4 * params
        assert abs(s["fp32_collectives_s"] - sum(ring[b["bytes"] // 4] for b in w["buckets"] if b["step"] == s["step"])) < 1e-12


def test_virtual_workers_record(tmp_path):
    """The virtual workers record one bucket per group, ready when one
    worker's backward ends, with the policy's modes."""
    import torch
    import nfabric.torch as nt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    path = tmp_path / "v.json"
    vw = nt.VirtualWorkers(model, 2, POLICY, record=str(path), record_steps=[1, 2])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    vw.attach_optimizer(opt)
    x, y = torch.randn(8, 6), torch.randint(3, (8,))
    for _ in range(4):
        opt.zero_grad()
        vw.step((x, y))
        opt.step()
    t = json.loads(path.read_text())
    assert [s["step"] for s in t["steps"]] == [1, 2]
    for s in t["steps"]:
        groups = {b["groups"][0]["name"]: b for b in s["buckets"]}
        assert groups["head"]["elements"] == 16 * 3 + 3 and groups["backbone"]["elements"] == 6 * 16 + 16
        assert groups["head"]["groups"][0]["mode"] == "fp32" and groups["backbone"]["groups"][0]["mode"] == "g-binary"
        assert "encode_us" in groups["backbone"] and "encode_us" not in groups["head"]
        assert all(b["ready_us"] == s["backward_us"] for b in s["buckets"]) and s["optimizer_us"] > 0


def test_record_diagnostics(tmp_path):
    """record_diagnostics measures the FP32 groups' cosines on the recorded
    steps (what `whatif --plan recorded` reads), and only there."""
    import torch
    import nfabric.torch as nt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    path = tmp_path / "d.json"
    vw = nt.VirtualWorkers(model, 3, "fp32", record=str(path), record_steps=[2], record_diagnostics=True)
    x, y = torch.randn(9, 6), torch.randint(3, (9,))
    for _ in range(3):
        vw.step((x, y))
    t = json.loads(path.read_text())
    (s,) = t["steps"]
    assert s["step"] == 2 and set(s["diagnostics"]) == {"backbone", "head"}
    for d in s["diagnostics"].values():
        assert -1 <= d["cos_binary"] <= 1 and -1 <= d["cos_ternary"] <= 1


def test_recorded_format_cosines_plan_int8(tmp_path, nfabric_cli):
    """A recorded diagnostics step carries every summed format's cosine
    (trace version 2), and `nfabric whatif --plan recorded --ladder-rungs`
    admits on them: with G-Binary's threshold between the two groups'
    recorded G-Binary cosines and an INT8 rung every cosine passes, the
    plan is mixed (one group G-Binary, the other INT8), and the Go side's
    reasons quote the INT8 cosines the trace holds."""
    import torch
    import nfabric.torch as nt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    path = tmp_path / "d.json"
    vw = nt.VirtualWorkers(model, 3, "fp32", record=str(path), record_steps=[1], record_diagnostics=True)
    x, y = torch.randn(9, 6), torch.randint(3, (9,))
    for _ in range(2):
        vw.step((x, y))
    t = json.loads(path.read_text())
    assert t["version"] == 2
    (s,) = t["steps"]
    d = s["diagnostics"]
    assert set(d) == {"backbone", "head"}
    for g in d.values():
        assert set(g["cosines"]) == {"int8", "bfp8"}
        assert all(0.9 < c <= 1 for c in g["cosines"].values())
    lo, hi = sorted(g["cos_binary"] for g in d.values())
    assert hi - lo > 1e-3
    rungs = f"g-binary:{(lo + hi) / 2},int8:-1"
    r = subprocess.run([str(nfabric_cli), "whatif", "--trace", str(path), "--workers", "3", "--plan", "recorded",
                        "--ladder-rungs", rungs], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    plan = next(line for line in r.stdout.splitlines() if line.startswith("Plan: "))
    for name, g in d.items():
        if g["cos_binary"] == hi:
            assert f"{name}: g-binary (ladder: G-Binary cosine {hi:.3f} >= " in plan, plan
        else:
            assert f"{name}: int8 (ladder: G-Binary cosine {lo:.3f} < " in plan, plan
            assert f"INT8 cosine {g['cosines']['int8']:.3f} >= -1.000)" in plan, plan
