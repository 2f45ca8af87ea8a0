"""nfabric.torch against a running `nfabric serve` (the Go controller model
and control plane over gRPC).

Oracles: the collective backend (the controller backend must give
bit-identical updates, step for step, over gloo with 2 and 4 ranks); the
Go control package's own recovery script (control/testdata/recovery.txt:
warm-up, a loss spike, recovery to FP32, re-admission), whose expected
modes the Python-driven session must reproduce; and the service's Replay,
which reruns the recorded event stream through a fresh Go plane.
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys
import warnings

import pytest
import torch
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import ddp_worker as W  # noqa: E402

import nfabric.torch as nt  # noqa: E402
from nfabric.lowbit import Format  # noqa: E402


def spawn(workers, tmp, scenarios):
    mp.spawn(W.worker, args=(workers, "file://" + os.path.join(tmp, "init"), tmp, scenarios), nprocs=workers, join=True)
    out = {}
    for r in range(workers):
        with open(os.path.join(tmp, f"rank{r}.pkl"), "rb") as f:
            out[r] = pickle.load(f)
    return out


POLICIES = ["g-binary", "g-ternary", "g-ternary/margin:2", "backbone=g-ternary,head=fp32"]


@pytest.mark.parametrize("workers", [2, 4])
def test_controller_backend_equals_collective(serve_socket, tmp_path, workers):
    scen = []
    for i, pol in enumerate(POLICIES):
        for be in ("collective", "controller"):
            scen.append({"name": f"{be}{i}", "policy": pol, "backend": be, "serve": serve_socket})
    scen.append({"name": "admit", "policy": "g-binary", "ctl": "serve-admit", "serve": serve_socket})
    scen.append({"name": "em-controller", "policy": "g-ternary", "backend": "controller", "serve": serve_socket,
                 "layout": "element-major"})
    res = spawn(workers, str(tmp_path), scen)
    for r in range(workers):
        for i, pol in enumerate(POLICIES):
            a, b = res[r][f"collective{i}"], res[r][f"controller{i}"]
            for step in range(W.STEPS):
                for n in a["params"][step]:
                    assert torch.equal(a["params"][step][n], b["params"][step][n]), f"{pol} W={workers} rank {r} step {step} {n}"
            assert b["stats"]["low_bit_step_fraction"] == 1.0
        # FP32-default admission on measured diagnostics (every cosine passes
        # a ladder at -1): FP32 through warm-up, then G-Binary, on every rank.
        assert [h["low_bit"] for h in res[r]["admit"]["history"]] == [False, False, True, True], f"rank {r}"
        em, wm = res[r]["em-controller"], res[r]["collective1"]
        for step in range(W.STEPS):
            for n in wm["params"][step]:
                assert torch.equal(em["params"][step][n], wm["params"][step][n]), f"element-major rank {r} step {step} {n}"


SUM_POLICIES = ["int8", "backbone=bfp8,head=int8", "backbone=g-ternary,head=bfp8"]


def test_controller_backend_sums_equal_collective(serve_socket, tmp_path):
    """INT8 and BFP8 groups through backend='controller' (nfabric serve's
    sum regions) update the parameters bit for bit as the collective
    backend (gloo all-reduces of nfabric.torch.fixed), W = 3, step for
    step, with one bucket per tensor and with whole-model buckets."""
    workers = 3
    scen = []
    for i, pol in enumerate(SUM_POLICIES):
        for cap in (0.0005, 25):
            for be in ("collective", "controller"):
                scen.append({"name": f"{be}{i}/{cap}", "policy": pol, "backend": be, "serve": serve_socket,
                             "bucket_cap_mb": cap})
    res = spawn(workers, str(tmp_path), scen)
    for r in range(workers):
        for i, pol in enumerate(SUM_POLICIES):
            for cap in (0.0005, 25):
                a, b = res[r][f"collective{i}/{cap}"], res[r][f"controller{i}/{cap}"]
                moved = False
                for step in range(W.STEPS):
                    for n in a["params"][step]:
                        assert torch.equal(a["params"][step][n], b["params"][step][n]), f"{pol} cap {cap} rank {r} step {step} {n}"
                        moved |= not torch.equal(a["params"][step][n], a["params"][0][n])
                assert moved, f"{pol}: the parameters never moved"


# control/testdata/recovery.txt, transcribed: the losses fed after each
# step and the mode the group must run at each step.
RECOVERY_CONFIG = dict(default="lowbit", warmup=2, cooldown=3, calibration=2, cusum_k=0.02, cusum_h=0.5, cusum_alpha=0.1)
RECOVERY_LOSSES = [1.0, 1.0, 1.0, 1.4, 1.4, None, None, None, None, None, None]
RECOVERY_MODES = {2: Format.BINARY, 3: Format.BINARY, 4: Format.BINARY, 5: Format.FP32, 8: Format.FP32, 10: Format.BINARY}


def test_control_round_trip_matches_the_go_plane(serve_socket):
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ctl = nt.serve.ServeControl(serve_socket, **RECOVERY_CONFIG)
    v = nt.VirtualWorkers(model, 4, "g-binary", groups={"all": ["*"]}, control=ctl)
    opt = torch.optim.SGD(model.parameters(), lr=v.policy.lr)
    g = torch.Generator().manual_seed(0)
    ran = []
    for step, loss in enumerate(RECOVERY_LOSSES):
        opt.zero_grad()
        v.step((torch.randn(16, 6, generator=g), torch.randint(3, (16,), generator=g)))
        opt.step()
        ran.append(v.modes["all"])
        # The injected loss stream (a spike at steps 3-4) replaces the real loss.
        v.loss = loss
    assert ran[:2] == [Format.FP32, Format.FP32], "warm-up runs FP32"
    for step, mode in RECOVERY_MODES.items():
        assert ran[step] == mode, f"step {step}: ran {ran[step]}, the Go script expects {mode}"
    assert ctl.alarms == 1
    assert [h["low_bit"] for h in v.stats.history] == [m != Format.FP32 for m in ran]
    assert [(e.step, e.reason) for e in v.stats.events] == [(5, "control")]
    ok, why = ctl.replay_matches()
    assert ok, why
    ctl.close()


def test_admission_diagnostics_are_the_votes_cosines(serve_socket):
    """The cosines sent to the plane are those of the majority vote with the
    FP32 mean, computed here in closed form from the shard gradients."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ctl = nt.serve.ServeControl(serve_socket, default="fp32", warmup=1, ladder_rungs="g-binary:-1,g-ternary:0.5",
                                diag_every=1)
    v = nt.VirtualWorkers(model, 3, "g-binary", control=ctl)
    batch = (torch.randn(12, 6, generator=torch.Generator().manual_seed(2)), torch.randint(3, (12,)))
    grads, _ = v.shard_grads(batch)
    v.step(batch)
    c = ctl.client
    dump = c.call(c.control.Dump, c.kpb.DumpRequest(session=ctl.session), "Dump")
    mode = c.cpb.Mode.Value
    sent = {}
    for e in dump.events:
        if e.event.WhichOneof("event") == "diag":
            cos = {m.mode: m.cosine for m in e.event.diag.cosines}
            sent[e.event.diag.group] = (cos[mode("MODE_G_BINARY")], cos[mode("MODE_G_TERNARY")])
    for g, gr in grads.items():
        u = torch.sign(2 * (gr > 0).sum(0) - 3).double()
        mean = gr.double().mean(0)
        flat = torch.cat([torch.arange(p.flat_base, p.flat_base + p.numel) for p in v.assignment.members(g)])
        t = u * (flat % 3 != 2)
        cb = float(u @ mean / (u.norm() * mean.norm()))
        ct = float(t @ mean / (t.norm() * mean.norm()))
        assert sent[g] == pytest.approx((cb, ct), abs=1e-6), g
    ctl.telemetry(demand_gbps=10.0, capacity_gbps=100.0)
    v.step(batch)
    assert v.modes == {"head": Format.BINARY, "backbone": Format.BINARY}
    ok, why = ctl.replay_matches()
    assert ok, why


def test_lost_control_service_falls_back_to_fp32(serve_socket, nfabric_cli, tmp_path):
    import subprocess
    import time
    sock = tmp_path / "lost.sock"
    proc = subprocess.Popen([str(nfabric_cli), "serve", "--socket", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        if sock.exists():
            break
        time.sleep(0.05)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ctl = nt.serve.ServeControl(str(sock), default="lowbit", warmup=1)
    v = nt.VirtualWorkers(model, 2, "g-binary", control=ctl)
    batch = (torch.randn(8, 6), torch.randint(3, (8,)))
    v.step(batch)
    v.step(batch)
    assert v.modes == {"head": Format.BINARY, "backbone": Format.BINARY}
    proc.kill()
    proc.wait()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v.step(batch)
    assert any("controller failed" in str(m.message) and "unreachable" in str(m.message) for m in w)
    assert v.modes == {"head": Format.FP32, "backbone": Format.FP32}
    assert v.stats.events[-1].reason == "control-lost"


def test_wrong_server_is_a_clear_error(tmp_path):
    try:
        import grpc
        import nfabric._proto.nfabric.v1.controller_pb2  # noqa: F401
    except ImportError as e:
        pytest.skip(f"skipped: the nfabric serve client needs python3-grpcio and nfabric._proto ({e})")
    from concurrent import futures
    srv = grpc.server(futures.ThreadPoolExecutor(1))  # serves nothing: not nfabric.v1
    sock = tmp_path / "other.sock"
    srv.add_insecure_port(f"unix://{sock}")
    srv.start()
    try:
        with pytest.raises(nt.serve.ServeError, match="does not implement nfabric.v1.Controller.*different version"):
            nt.serve.Client(str(sock))
        with pytest.raises(nt.serve.ServeError, match="unreachable"):
            nt.serve.Client(str(tmp_path / "nobody.sock"))
    finally:
        srv.stop(0)


def test_fig6_traces_on_synthetic_data(serve_socket, tmp_path):
    import json
    import pathlib
    ex = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torch"
    sys.path.insert(0, str(ex))
    try:
        import cifar_resnet18
    finally:
        sys.path.remove(str(ex))
    out = tmp_path / "f6.json"
    assert cifar_resnet18.main(["--synthetic", "64", "--image", "8", "--width", "4", "--blocks", "1,1", "--epochs", "3",
                                "--batch", "16", "--workers", "4", "--data", "cifar10", "--fig6", "--serve", serve_socket,
                                "--warmup", "2", "--diag-every", "1", "--fault-epochs", "1:2", "--json", str(out)]) == 0
    rows = {r["policy"]: r for r in json.loads(out.read_text())["results"]}
    assert list(rows) == ["always-FP32", "always-G-Binary", "FP32-default", "G-Binary-default"]
    assert rows["always-FP32"]["low_bit_step_fraction"] == 0.0 and rows["always-G-Binary"]["low_bit_step_fraction"] == 1.0
    # Both controlled traces start on FP32 (warm-up), so neither is all low-bit.
    for k in ("FP32-default", "G-Binary-default"):
        assert rows[k]["low_bit_step_fraction"] < 1.0


def test_clients_have_their_own_connection(serve_socket):
    # Devices belong to the connection: a second Client in the same process
    # must not see the first one's device (grpc would share one connection
    # between channels of equal options).
    a, b = nt.serve.Client(serve_socket), nt.serve.Client(serve_socket)
    try:
        dev = a.call(a.controller.OpenDevice, a.cpb.OpenDeviceRequest(capacity_bytes=64), "OpenDevice").device
        a.call(a.controller.GetStats, a.cpb.GetStatsRequest(device=dev), "GetStats")
        with pytest.raises(nt.serve.ServeError, match="NOT_FOUND"):
            b.call(b.controller.GetStats, b.cpb.GetStatsRequest(device=dev), "GetStats")
    finally:
        a.close()
        b.close()


def test_socket_owner_and_directory_checked(tmp_path):
    # A socket in a directory others can write, or one another user owns,
    # is refused before connecting: another user could be listening there.
    import socket
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    path = str(d / "s.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(1)
    try:
        with pytest.raises(nt.serve.ServeError, match="writable by others"):
            nt.serve.Client(path)
        if os.geteuid() == 0:
            os.chmod(d, 0o700)
            os.chown(path, 4242, 4242)
            with pytest.raises(nt.serve.ServeError, match="uid 4242"):
                nt.serve.Client(path)
    finally:
        s.close()


def test_shared_buffer_matches_messages(serve_socket):
    """The same batch (a mode latch, W=8 packets, the aggregate read) on two
    devices, one through messages and one through a SharedBuffer: the same
    read bytes and modes, and the aggregate is the closed form (popcount of
    each packet byte)."""
    c = nt.serve.Client(serve_socket)
    pb = c.cpb
    lines = 256
    g = torch.Generator().manual_seed(28)
    payload = torch.randint(0, 256, (lines * 64,), dtype=torch.uint8, generator=g)
    devs = []
    for _ in range(2):
        d = c.call(c.controller.OpenDevice, pb.OpenDeviceRequest(capacity_bytes=lines * 64), "OpenDevice").device
        c.call(c.controller.MapRegion, pb.MapRegionRequest(device=d, size=lines * 64, mode=pb.MODE_IDENTITY), "MapRegion")
        devs.append(d)
    latch = pb.Op(set_mode=pb.SetMode(region=0, mode=pb.MODE_G_BINARY, time=1))
    want = c.call(c.controller.Transact, pb.TransactRequest(device=devs[0], ops=[
        pb.Op(write=pb.Write(addr=0, data=payload.numpy().tobytes())), latch, pb.Op(read=pb.Read(addr=0, lines=lines))]),
        "Transact")
    buf = nt.serve.SharedBuffer(c, 2 * lines * 64)
    t = buf.tensor()
    t[:lines * 64] = payload
    got = c.call(c.controller.Transact, pb.TransactRequest(device=devs[1], ops=[
        buf.write_op(0, 0, lines), latch, buf.read_op(lines * 64, 0, lines)]), "Transact")
    agg = bytes(t[lines * 64:].numpy())
    assert len(got.data) == 0 and agg == want.data
    got_modes, got_trans = nt.serve.read_lines(got, lines)
    assert (got_modes, got_trans) == nt.serve.read_lines(want, lines)
    assert got_modes == [pb.MODE_G_BINARY] * lines and got_trans == [True] * lines
    assert len(got.read_spans) == 1  # one run of lines sharing a mode and flag: one span
    assert got.first_seq == want.first_seq and got.transactions == want.transactions == 2 * lines
    ones = torch.tensor([bin(b).count("1") for b in range(256)], dtype=torch.uint8)
    assert torch.equal(t[lines * 64:], ones[payload.long()])
    del t
    buf.close()
    c.close()


@pytest.mark.parametrize("layout", ["worker-major", "element-major"])
def test_controller_backend_shared_equals_messages(serve_socket, layout):
    """ControllerBackend with shared=True gives the aggregates of
    shared=False for random sign planes of several tensors, both modes."""
    from nfabric import lowbit
    from nfabric.lowbit import Layout
    from nfabric.torch.groups import Assignment, ParamInfo
    sizes = [1000, 70000, 5]
    params, base = [], 0
    for i, n in enumerate(sizes):
        params.append(ParamInfo(f"p{i}", torch.nn.Parameter(torch.zeros(n)), "g", base))
        base += n
    asg = Assignment(groups=["g"], params=params, patterns={"g": ["*"]})
    w = 8
    lay = Layout.WORKER_MAJOR if layout == "worker-major" else Layout.ELEMENT_MAJOR
    g = torch.Generator().manual_seed(4)
    backs = [nt.serve.ControllerBackend(nt.serve.Client(serve_socket), asg, w, lay, {"g": lowbit.PAPER_GATE},
                                        chunk_bytes=64 << 10, shared=sh) for sh in (False, True)]
    for step, mode in enumerate([Format.BINARY, Format.TERNARY]):
        items = [(p, torch.randint(0, 256, (w, (p.numel + 7) // 8), dtype=torch.uint8, generator=g), mode) for p in params]
        a, b = (be.aggregate(items, step) for be in backs)
        for x, y, p in zip(a, b, params):
            assert torch.equal(x, y), f"{layout} {mode} {p.name}"
    assert backs[1].buf is not None and backs[0].buf is None
    for be in backs:
        be.close()


@pytest.mark.parametrize("shared", [False, True])
def test_controller_backend_sums_int8_bfp8(serve_socket, shared):
    """ControllerBackend.sum_fixed (INT8 and BFP8 sum regions of nfabric
    serve) gives, decoded as nfabric.torch.fixed does, the virtual workers'
    mean bit for bit (nfabric.fixed.aggregate_workers: the gloo path's
    arithmetic in one process), on the message and the shared-memory path;
    its raw sums and exponents equal nfabric.fixed's exact-sum-then-saturate
    oracle, including W = 258, the most whose int16 lane sums are exact
    (258 x 127 = 32766); the server refuses a sum region of 259 workers,
    as nfabric.fixed does (MAX_SUM_WORKERS)."""
    from nfabric import fixed, lowbit
    from nfabric.lowbit import Layout
    from nfabric.torch.groups import Assignment, ParamInfo
    g = torch.Generator().manual_seed(30)
    for w, sizes in [(5, [1000, 64 * 70 + 9, 5, 4096 + 64]), (fixed.MAX_SUM_WORKERS, [70])]:
        params, base = [], 0
        for i, n in enumerate(sizes):
            params.append(ParamInfo(f"p{i}", torch.nn.Parameter(torch.zeros(n)), "g", base))
            base += n
        asg = Assignment(groups=["g"], params=params, patterns={"g": ["*"]})
        be = nt.serve.ControllerBackend(nt.serve.Client(serve_socket), asg, w, Layout.WORKER_MAJOR,
                                        {"g": lowbit.PAPER_GATE}, shared=shared)
        for step in range(2):
            grads = []
            for p in params:
                x = torch.randn(w, p.numel, generator=g) * torch.logspace(-30, 3, p.numel).roll(step * 7)
                if w == fixed.MAX_SUM_WORKERS:  # every worker at the same maximum: the largest exact sum
                    x = torch.ones(w, p.numel) * torch.where(torch.arange(p.numel) % 2 == 0, 1.0, -1.0)
                x[:, 3 % p.numel] = 0
                grads.append(x)
            items, want = [], []
            for p, x in zip(params, grads):
                s = fixed.int8_scale(torch.stack([fixed.max_abs(x[k]) for k in range(w)]).max())
                q = torch.stack([fixed.encode_int8(x[k], s) for k in range(w)])
                items.append((p, "int8", q, None))
                want.append(("int8", s, fixed.sum_codes(q), None, fixed.aggregate_workers("int8", list(x))))
                enc = [fixed.encode_bfp8(x[k]) for k in range(w)]
                mants, exps = torch.stack([m for m, _ in enc]), torch.stack([e for _, e in enc])
                items.append((p, "bfp8", mants, exps))
                tot, e = fixed.sum_bfp8(mants, exps)
                want.append(("bfp8", None, tot, e, fixed.aggregate_workers("bfp8", list(x))))
            got = be.sum_fixed(items, step)
            for (p, *_), (fmt, s, tot, e, mean), (sums, ge) in zip(items, want, got):
                what = f"W={w} shared={shared} step {step} {p.name} {fmt}"
                assert torch.equal(sums, tot), what
                if fmt == "int8":
                    assert ge is None
                    dec = fixed.decode_int8(sums, s, w)
                else:
                    assert torch.equal(ge, e), what
                    dec = fixed.decode_bfp8(sums, ge, w)
                assert torch.equal(dec, mean), what
                if w == fixed.MAX_SUM_WORKERS and fmt == "int8":
                    assert int(sums.abs().max()) == 32766, what
        assert (be.buf is not None) == shared
        be.close()
    w = fixed.MAX_SUM_WORKERS + 1
    p0 = ParamInfo("p0", torch.nn.Parameter(torch.zeros(70)), "g", 0)
    be = nt.serve.ControllerBackend(nt.serve.Client(serve_socket), Assignment(groups=["g"], params=[p0],
                                    patterns={"g": ["*"]}), w, Layout.WORKER_MAJOR, {"g": lowbit.PAPER_GATE},
                                    shared=shared)
    with pytest.raises(nt.serve.ServeError, match="258"):
        be.sum_fixed([(p0, "int8", torch.ones(w, 70, dtype=torch.int8), None)], 0)
    be.close()


def test_read_lines_spans():
    """read_lines expands hand-written spans and refuses malformed lists."""
    pb = importlib.import_module("nfabric._proto.nfabric.v1.controller_pb2")
    r = pb.TransactResponse(read_spans=[pb.ReadSpan(lines=1, mode=pb.MODE_G_BINARY, transformed=True),
                                        pb.ReadSpan(lines=2, mode=pb.MODE_IDENTITY)])
    assert nt.serve.read_lines(r, 3) == ([pb.MODE_G_BINARY, pb.MODE_IDENTITY, pb.MODE_IDENTITY], [True, False, False])
    assert nt.serve.read_lines(pb.TransactResponse(), 0) == ([], [])
    for bad, n in [(r, 2), (r, 4), (pb.TransactResponse(), 1),
                   (pb.TransactResponse(read_spans=[pb.ReadSpan(lines=0, mode=pb.MODE_IDENTITY)]), 0)]:
        with pytest.raises(nt.serve.ServeError, match="read_spans"):
            nt.serve.read_lines(bad, n)


def test_control_four_rung_ladder_mixed_plan_and_demotion(serve_socket):
    """The plane's four-rung ladder from Python: warm-up diagnostics with
    INT8/BFP8 cosines admit backbone to G-Binary and head to INT8 (a mixed
    plan); with demotion on, head's failing INT8 cosine moves it to BFP8,
    the next rung up. The expectations are worked by hand from the rungs."""
    import types
    ctl = nt.serve.ServeControl(serve_socket, default="fp32", warmup=1, ladder_demote=True,
                                ladder_rungs="g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95")
    ctl.bind({"backbone": 10, "head": 4})
    ctx = lambda s: types.SimpleNamespace(step=s, loss=None)  # noqa: E731
    ctl.diag(0, "backbone", 0.8, 0.7, cosines={"int8": 0.99})
    ctl.diag(0, "head", 0.3, 0.2, cosines={"int8": 0.97, Format.BFP8: 0.99})
    assert ctl.decide(ctx(0)) == {"backbone": Format.FP32, "head": Format.FP32}
    assert ctl.decide(ctx(1)) == {"backbone": Format.BINARY, "head": Format.INT8}
    ctl.decide(ctx(2))
    ctl.diag(2, "head", 0.9, 0.9, cosines={"int8": 0.5, "bfp8": 0.99})
    assert ctl.decide(ctx(3)) == {"backbone": Format.BINARY, "head": Format.BFP8}
    assert [(s, g, m) for s, g, m, _ in ctl.actions] == [(1, "backbone", "MODE_G_BINARY"), (1, "head", "MODE_INT8"),
                                                        (3, "head", "MODE_BFP8")]
    with pytest.raises(ValueError, match="fp9"):
        ctl.diag(3, "head", 0.9, 0.9, cosines={"fp9": 0.5})
    with pytest.raises(nt.serve.ServeError, match="given twice"):
        ctl.diag(3, "head", 0.9, 0.9, cosines={"g-binary": 0.5})
    ok, why = ctl.replay_matches()
    assert ok, why
    ctl.close()


def _int8_mean(gs):
    """The INT8 aggregate of W workers' tensors written out directly (issue
    30's contract: s = max|g| / 127, codes round half even, exact sum
    saturated to int16, mean = S s / W), an oracle apart from nfabric.fixed."""
    m = max(float(g.abs().max()) for g in gs)
    s = torch.tensor(m, dtype=torch.float32) / 127 if m > 0 else torch.tensor(0.0)
    if float(s) == 0:
        return torch.zeros_like(gs[0])
    q = sum(torch.round((g / s).double().clamp(-127, 127)).to(torch.int64) for g in gs).clamp(-32768, 32767)
    return (q.double() * float(s) / len(gs)).float()


def test_hook_diagnostics_reach_a_mixed_plan_with_int8(serve_socket):
    """A ladder with an INT8 rung, driven only by the virtual workers' own
    diagnostics: the INT8 cosines are measured and sent (checked against a
    direct computation from the shard gradients, one scale per parameter
    tensor as Go's StepFormatCosines), and with G-Binary's threshold set
    between the two groups' G-Binary cosines (measured here first) the
    plane settles one group on G-Binary and the other on INT8."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(6, 24), torch.nn.ReLU(), torch.nn.Linear(24, 3))
    batch = (torch.randn(12, 6, generator=torch.Generator().manual_seed(2)), torch.randint(3, (12,)))
    probe = nt.VirtualWorkers(model, 3, "fp32")
    grads, _ = probe.shard_grads(batch)
    cb = {}
    for g, gr in grads.items():
        u = torch.sign(2 * (gr > 0).sum(0) - 3).double()
        mean = (gr / 3).sum(0).double()
        cb[g] = float(u @ mean / (u.norm() * mean.norm()))
    lo, hi = sorted(cb.values())
    assert hi - lo > 0.02, cb
    rungs = f"g-binary:{(lo + hi) / 2},int8:0.9"
    ctl = nt.serve.ServeControl(serve_socket, default="fp32", warmup=1, diag_every=1, ladder_rungs=rungs)
    assert ctl.diag_formats == (Format.INT8,)
    v = nt.VirtualWorkers(model, 3, "fp32", control=ctl)
    v.step(batch)
    c = ctl.client
    dump = c.call(c.control.Dump, c.kpb.DumpRequest(session=ctl.session), "Dump")
    sent = {}
    for e in dump.events:
        if e.event.WhichOneof("event") == "diag":
            d = e.event.diag
            cos = {m.mode: m.cosine for m in d.cosines}
            cos.pop(c.cpb.Mode.Value("MODE_G_TERNARY"))
            sent[d.group] = (cos.pop(c.cpb.Mode.Value("MODE_G_BINARY")), cos)
    int8_mode = c.cpb.Mode.Value("MODE_INT8")
    for g, gr in grads.items():
        members = v.assignment.members(g)
        parts, o = [], 0
        for p in members:
            parts.append(_int8_mean([gr[k, o:o + p.numel] for k in range(3)]))
            o += p.numel
        a = torch.cat(parts).double()
        mean = (gr / 3).sum(0).double()
        want = float(a @ mean / (a.norm() * mean.norm()))
        assert sent[g][0] == pytest.approx(cb[g], abs=1e-9), g
        assert list(sent[g][1]) == [int8_mode], g
        assert sent[g][1][int8_mode] == pytest.approx(want, abs=1e-9), g
        assert want > 0.99
    v.step(batch)
    hi_g = max(cb, key=cb.get)
    lo_g = min(cb, key=cb.get)
    assert v.modes == {hi_g: Format.BINARY, lo_g: Format.INT8}
    ok, why = ctl.replay_matches()
    assert ok, why
    ctl.close()


def test_ddp_hook_diagnostics_measure_the_ladders_formats(serve_socket, tmp_path):
    """The DDP hook (2 ranks, gloo) on a controller whose ladder has INT8
    and BFP8 rungs: its FP32 diagnostics step sends every rung's cosine,
    computed from the ranks' own gradients before the FP32 all-reduce.
    Oracles, from the same step-0 gradients in this process: INT8 written
    out directly (one scale per parameter tensor, as Go's
    StepFormatCosines), G-Binary from the sign vote, G-Ternary and BFP8
    from the virtual workers' Cosines (one process, no collectives). With
    G-Binary's threshold between the two groups' G-Binary cosines, the
    plane puts one group on G-Binary and the other on INT8 from step 1, on
    both ranks. The paper's two-rung configuration sends the same G-Binary
    and G-Ternary cosines, and nothing else."""
    from nfabric import lowbit
    from nfabric.torch.core import Cosines
    workers = 2
    probe = nt.VirtualWorkers(W.make_model(), workers, "fp32")
    grads, _ = probe.shard_grads(W.batch(0, workers))
    ref = Cosines([Format.INT8, Format.BFP8])
    cb, c8 = {}, {}
    for g, gr in grads.items():
        u = torch.sign(2 * (gr > 0).sum(0) - workers).double()
        mean = (gr / workers).sum(0).double()
        cb[g] = float(u @ mean / (u.norm() * mean.norm()))
        parts, o = [], 0
        for p in probe.assignment.members(g):
            parts.append(_int8_mean([gr[k, o:o + p.numel] for k in range(workers)]))
            o += p.numel
        a = torch.cat(parts).double()
        c8[g] = float(a @ mean / (a.norm() * mean.norm()))
        planes = torch.stack([lowbit.encode_signs(gr[k]) for k in range(workers)])
        ref.add(g, planes, probe.segments[g], probe._mean(gr), gr)
    ref = ref.take()
    lo, hi = sorted(cb.values())
    assert hi - lo > 0.02, cb
    rungs = f"g-binary:{(lo + hi) / 2},int8:0.9,bfp8:0.9"
    res = spawn(workers, str(tmp_path), [
        {"name": "rungs", "policy": "fp32", "ctl": "serve-diag", "serve": serve_socket, "rungs": rungs},
        {"name": "paper", "policy": "fp32", "ctl": "serve-diag", "serve": serve_socket},
    ])
    hi_g, lo_g = max(cb, key=cb.get), min(cb, key=cb.get)
    got = {"rungs": {}, "paper": {}}
    for name in got:
        for step, g, b, t, extra in res[0][name]["diag"]:
            if step == 0:
                got[name][g] = (b, t, extra)
    for g in grads:
        b, t, extra = got["rungs"][g]
        assert b == pytest.approx(cb[g], abs=1e-9), g
        assert t == pytest.approx(ref[g][Format.TERNARY], abs=1e-9), g
        assert sorted(extra) == ["MODE_BFP8", "MODE_INT8"], (g, extra)
        assert extra["MODE_INT8"] == pytest.approx(c8[g], abs=1e-9), g
        assert extra["MODE_INT8"] == pytest.approx(ref[g][Format.INT8], abs=1e-9), g
        assert extra["MODE_BFP8"] == pytest.approx(ref[g][Format.BFP8], abs=1e-9), g
        assert c8[g] > 0.99
        # The paper's ladder: the same two cosines (same gradients, same
        # code path), no per-format ones.
        assert got["paper"][g] == (b, t, {}), g
    for r in range(workers):
        modes = res[r]["rungs"]["modes"]
        assert modes[0] == {hi_g: "fp32", lo_g: "fp32"}, f"rank {r}"
        for step in range(1, W.STEPS):
            assert modes[step] == {hi_g: "g-binary", lo_g: "int8"}, f"rank {r} step {step}: {modes[step]}"
    for name in got:
        ok, why = res[0][name]["replay"]
        assert ok, (name, why)


def test_serve_control_state_resumes_the_session(serve_socket):
    """A ServeControl's state_dict (the plane's dump) loaded into a new
    session reproduces it: the recovery script cut at step 4 (inside the
    loss alarm) and resumed gives the uninterrupted run's modes, alarms and
    actions; a differently configured controller refuses the state."""
    from nfabric.torch.control import StepContext
    from nfabric.torch.stats import Stats

    def drive(ctl, steps, start=0):
        out = []
        for step in range(start, start + steps):
            loss = RECOVERY_LOSSES[step - 1] if step > 0 else None
            out.append(ctl.decide(StepContext(step, {"all": Format.BINARY}, loss, Stats()))["all"])
        return out

    whole = nt.serve.ServeControl(serve_socket, **RECOVERY_CONFIG)
    whole.bind({"all": 1000})
    want = drive(whole, len(RECOVERY_LOSSES))
    first = nt.serve.ServeControl(serve_socket, **RECOVERY_CONFIG)
    first.bind({"all": 1000})
    got = drive(first, 4)
    state = first.state_dict()
    first.close()
    resumed = nt.serve.ServeControl(serve_socket, **RECOVERY_CONFIG)
    resumed.bind({"all": 1000})
    resumed.load_state_dict(state)
    got += drive(resumed, len(RECOVERY_LOSSES) - 4, start=4)
    assert got == want and resumed.alarms == whole.alarms == 1
    assert resumed.actions == whole.actions
    other = nt.serve.ServeControl(serve_socket, **dict(RECOVERY_CONFIG, warmup=5))
    other.bind({"all": 1000})
    with pytest.raises(ValueError, match="configured differently"):
        other.load_state_dict(state)
    for c in (whole, resumed, other):
        c.close()
