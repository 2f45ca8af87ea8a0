"""Silent misconfigurations made loud: the optimizer's rate against the
policy's, a warm-up that outlasts the job, a job with no low-bit step, the
wrapper register needs, and bytes at the model's element size."""

from __future__ import annotations

import os
import warnings

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import nfabric.torch as nt
from nfabric.policy import Policy


def mlp(dtype=torch.float32) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(dtype)


@pytest.fixture
def world1(tmp_path):
    dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp_path, "init"), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(m.message) for m in w]


def test_optimizer_rate_other_than_the_policys_warns(world1) -> None:
    ddp = DDP(mlp())
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)  # the DDP tutorial's rate against the default 0.05
    _, msgs = caught(lambda: nt.register(ddp, "g-binary", optimizer=opt))
    assert any("runs at lr 0.001 but policy.lr is 0.05" in m and "0.02x" in m for m in msgs), msgs
    ddp2 = DDP(mlp())
    _, msgs = caught(lambda: nt.register(ddp2, Policy.parse("g-binary", lr=1e-3),
                                         optimizer=torch.optim.SGD(ddp2.parameters(), lr=1e-3)))
    assert not any("policy.lr" in m for m in msgs), msgs


def test_warmup_longer_than_the_job_and_no_low_bit_step_warn(world1) -> None:
    ddp = DDP(mlp())
    f, msgs = caught(lambda: nt.register(ddp, "g-binary", control=nt.control.Warmup(500), steps=160))
    assert any("warm-up of 500 FP32 steps outlasts the 160 planned steps" in m for m in msgs), msgs
    del f


def test_no_low_bit_step_warns_at_the_planned_end(world1) -> None:
    ddp = DDP(mlp())
    f = nt.register(ddp, "g-binary", control=nt.control.Warmup(500), steps=3)
    msgs = []
    for _ in range(3):
        _, m = caught(lambda: ddp(torch.randn(2, 4)).sum().backward())
        msgs += m
    assert any("3 steps ran and none of them low-bit" in m for m in msgs), msgs
    _, m = caught(f.close)
    assert not any("none of them low-bit" in x for x in m), "warned twice"


def test_register_says_which_wrapper(world1) -> None:
    with pytest.raises(TypeError, match=r"after DistributedDataParallel\(model\) or fully_shard\(model\)") as e:
        nt.register(mlp(), "g-binary")
    assert "VirtualWorkers" in str(e.value) and "Lightning" in str(e.value)
    with pytest.raises(TypeError, match="DataParallel runs one process"):
        nt.register(torch.nn.DataParallel(mlp()), "g-binary")
    with pytest.raises(TypeError, match="takes the policy, not the model"):
        nt.Fabric(mlp())  # type: ignore[arg-type]
    f = nt.Fabric("g-binary")
    f.bind(DDP(mlp()))
    with pytest.raises(RuntimeError, match="already bound"):
        f.bind(DDP(mlp()))


def test_bytes_at_the_element_size() -> None:
    """A bfloat16 model's dense path is 2 bytes an element: G-Binary is
    1/16 of it (a float32 model's 1/32)."""
    for dtype, ratio in [(torch.float32, 1 / 32), (torch.bfloat16, 1 / 16)]:
        m = mlp(dtype)
        v = nt.VirtualWorkers(m, 2, "g-binary", groups={"all": ["*"]})
        v.step((torch.randn(4, 4).to(dtype), torch.randint(3, (4,))))
        st = v.stats.summary()
        n = sum(p.numel() for p in m.parameters())
        assert st["dense_bytes"] == torch.tensor([], dtype=dtype).element_size() * n
        es = torch.tensor([], dtype=dtype).element_size()
        assert st["bytes"] == (n + 7) // 8 and st["ratio"] == (n + 7) // 8 / (es * n)
        assert abs(st["ratio"] - ratio) <= 1 / (es * n)  # 1/32 or 1/16 up to the plane's last byte


def test_auto_sign_lr_needs_a_warm_up_and_measures_it() -> None:
    with pytest.raises(ValueError, match="sign_lr='auto'.*give control=Warmup"):
        nt.VirtualWorkers(mlp(), 2, Policy.parse("g-binary", sign_lr="auto"))
    with pytest.raises(ValueError, match="want a positive number or 'auto'"):
        Policy.parse("g-binary", sign_lr="fast")
    m = mlp()
    v = nt.VirtualWorkers(m, 2, Policy.parse("backbone=g-binary,head=fp32", lr=0.05, sign_lr="auto"),
                          control=nt.control.Warmup(3))
    g = torch.Generator().manual_seed(1)
    rms = []
    for s in range(5):
        x, y = torch.randn(4, 4, generator=g), torch.randint(3, (4,), generator=g)
        v.step((x, y))
        if s < 3:  # the FP32 aggregate of the backbone, as the oracle measures it
            grads = torch.cat([p.param.grad.reshape(-1) for p in v.assignment.members("backbone")])
            rms.append(float(grads.double().abs().mean()))
    rms.sort()
    assert v.auto.rate["backbone"] == pytest.approx(0.05 * rms[1], rel=1e-12)
    assert "head" not in v.auto.rate  # FP32 groups keep lr
    assert v.scale("backbone") == pytest.approx(rms[1])


def test_malformed_states_are_refused_and_change_nothing(world1) -> None:
    """A fuzz of Fabric.load_state_dict: 400 random mutations of a real state
    (keys dropped, values replaced by other types, JSON text cut, tensors
    reshaped or poisoned) either load or raise ValueError, and a refused
    one leaves the Fabric as it was."""
    import json
    import random
    ddp = DDP(mlp())
    f = nt.register(ddp, Policy.parse("g-ternary+ef", sign_lr=1e-3), control=nt.control.Warmup(1))
    for _ in range(3):
        ddp(torch.randn(2, 4)).sum().backward()
    good = f.state_dict()
    rnd = random.Random(7)
    junk = [None, 3, -1, "x", [], {}, float("nan"), [1, 2], {"a": 1}, True]

    def mutate_json(obj):
        if isinstance(obj, dict) and obj:
            k = rnd.choice(list(obj))
            if rnd.random() < 0.3:
                obj.pop(k)
            elif rnd.random() < 0.5:
                obj[k] = rnd.choice(junk)
            else:
                mutate_json(obj[k])
        elif isinstance(obj, list) and obj:
            i = rnd.randrange(len(obj))
            obj[i] = rnd.choice(junk) if rnd.random() < 0.5 else mutate_json(obj[i]) or obj[i]
        return obj

    before = json.dumps(f.mode_state(), sort_keys=True)
    res_before = {n: t.clone() for n, t in f.residuals.items()}
    loaded = 0
    for i in range(400):
        st = {"format": good["format"], "rank0": {"mode": good["rank0"]["mode"],
                                                  "residuals": {n: t.clone() for n, t in good["rank0"]["residuals"].items()}}}
        r = rnd.random()
        if r < 0.6:
            st["rank0"]["mode"] = json.dumps(mutate_json(json.loads(st["rank0"]["mode"])))
        elif r < 0.7:
            st["rank0"]["mode"] = st["rank0"]["mode"][:rnd.randrange(len(st["rank0"]["mode"]))]
        elif r < 0.85:
            n = rnd.choice(list(st["rank0"]["residuals"]))
            st["rank0"]["residuals"][n] = rnd.choice([torch.zeros(1), torch.full_like(good["rank0"]["residuals"][n],
                                                                                      float("inf")), "x"])
        else:
            st = rnd.choice([{}, {"format": "other"}, {"format": good["format"]}, {"format": good["format"], "rank0": 5}])
        try:
            f.load_state_dict(st)
            loaded += 1
            f.load_state_dict(good)  # back to the reference for the next try
        except ValueError:
            assert json.dumps(f.mode_state(), sort_keys=True) == before, f"try {i}: a refused state changed the Fabric"
            assert all(torch.equal(res_before[n], t) for n, t in f.residuals.items()), f"try {i}: residuals changed"
    assert 0 < loaded < 400
