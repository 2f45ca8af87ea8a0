"""Inputs a hostile tester tried on the Python surface: each must give a
clear error naming the input (or a bounded, documented behaviour), never
a silently wrong number or an unbounded allocation."""

from __future__ import annotations

import tracemalloc

import pytest
import torch

import nfabric.torch as nt
from nfabric import fixed, lowbit
from nfabric.policy import Policy, parse_rule_spec
from nfabric.torch.record import MAX_STEPS, Recorder


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


@pytest.mark.parametrize("fmt", ["int8", "bfp8"])
def test_summed_formats_refuse_more_workers_than_exact_lane_sums(fmt) -> None:
    # 300 workers of 0.99: the int16 lane sums saturate at 32767 < 300 * 126,
    # so the "mean" came out 0.851 (INT8) / 0.853 (BFP8) without a word.
    g = [torch.full((64,), 0.99)] * 300
    with pytest.raises(ValueError, match=rf"{fmt}: 300 workers is more than the 258 whose int16 lane sums are exact"):
        fixed.aggregate_workers(fmt, g)
    # At the limit the sum is exact: 258 codes of 125 (INT8: 0.99/s, s = 0.99/127
    # gives 127) sum to 32766 and decode to the mean within one code's rounding.
    m = fixed.aggregate_workers(fmt, [torch.full((64,), 0.99)] * fixed.MAX_SUM_WORKERS)
    assert fixed.MAX_SUM_WORKERS == 258
    assert torch.allclose(m, torch.full((64,), 0.99), rtol=1e-2)
    with pytest.raises(ValueError, match="258"):
        nt.VirtualWorkers(mlp(), 300, fmt)
    with pytest.raises(ValueError, match="258"):
        nt.VirtualWorkers(mlp(), 259, f"backbone=g-binary,head={fmt}")
    nt.VirtualWorkers(mlp(), 300, "g-binary")  # the vote formats carry up to 1024


def test_aggregate_workers_keeps_the_workers_shape_for_every_format() -> None:
    g = [torch.randn(4, 16, generator=torch.Generator().manual_seed(k)) for k in range(3)]
    shapes = {f: tuple(fixed.aggregate_workers(f, g).shape) for f in fixed.SUM_FORMATS}
    assert shapes == {"int8": (4, 16), "bfp8": (4, 16)}
    # The same values as the flat bucket (blocks over the flattened elements).
    for f in fixed.SUM_FORMATS:
        flat = fixed.aggregate_workers(f, [x.reshape(-1) for x in g])
        assert torch.equal(fixed.aggregate_workers(f, g).reshape(-1), flat)
    with pytest.raises(ValueError, match=r"worker 1's gradient has shape \(3,\), worker 0's \(4,\)"):
        fixed.aggregate_workers("int8", [torch.ones(4), torch.ones(3)])
    with pytest.raises(ValueError, match="no workers"):
        fixed.aggregate_workers("bfp8", [])


def test_record_steps_is_bounded_and_constant_time(tmp_path) -> None:
    path = tmp_path / "t.json"
    tracemalloc.start()
    try:
        rec = Recorder(path, MAX_STEPS, model="m", workers=2, policy="g-binary")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 30M steps took 1.1 GB (a tuple of every step number) and 10**9 tried
    # to build one; the Go reader takes at most 2^24 buckets, so more steps
    # are refused and the largest allowed costs no list of steps.
    assert peak < 1 << 20, f"constructing a {MAX_STEPS}-step recorder took {peak} bytes"
    assert rec.wants(1) and rec.wants(MAX_STEPS) and not rec.wants(0) and not rec.wants(MAX_STEPS + 1)
    assert isinstance(rec.steps, (range, frozenset)), "membership must not scan a sequence"
    for n in (30_000_000, 10**9):
        with pytest.raises(ValueError, match=f"record_steps {n}: a bucket trace holds at most {MAX_STEPS} steps"):
            Recorder(path, n, model="m", workers=2, policy="g-binary")
    for bad, err in [([], ValueError), ([1, -2], ValueError), ([1.5], TypeError), ("123", TypeError), (True, TypeError)]:
        with pytest.raises(err, match="record_steps"):
            Recorder(path, bad, model="m", workers=2, policy="g-binary")
    assert Recorder(path, [5, 3, 5], model="m", workers=2, policy="g-binary").last_step == 5


def test_policy_of_the_wrong_type_names_it() -> None:
    with pytest.raises(TypeError, match="policy None: want a string"):
        Policy.parse(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rule spec 3: want a string"):
        parse_rule_spec(3)  # type: ignore[arg-type]


def test_layout_limit_advice_names_a_layout_that_helps() -> None:
    with pytest.raises(ValueError) as e:
        nt.VirtualWorkers(mlp(), 1025, "g-binary")
    msg = str(e.value)
    assert "1025 workers is more than the worker-major layout carries (1024)" in msg
    assert "use layout='worker-major'" not in msg and "run at most 1024 workers" in msg
    with pytest.raises(ValueError, match=r"use layout='worker-major' \(up to 1024\)"):
        nt.VirtualWorkers(mlp(), 9, Policy.parse("g-binary", layout="element-major"))


@pytest.mark.parametrize("spec,match", [
    ("g-ternary/margin:nan", "margin threshold 'nan' is not a whole number"),
    ("g-ternary/margin:2.5", "margin threshold '2.5' is not a whole number"),
    ("g-ternary/pattern:x", "pattern period 'x' is not a whole number"),
])
def test_gate_numbers_that_are_not_numbers(spec, match) -> None:
    with pytest.raises(ValueError, match=match) as e:
        parse_rule_spec(spec)
    assert "invalid literal" not in str(e.value)
    with pytest.raises(ValueError, match=match):
        lowbit.parse_gate(spec.split("/", 1)[1])
