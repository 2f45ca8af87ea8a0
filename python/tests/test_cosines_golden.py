"""The hook's diagnostics (nfabric.torch.core.Cosines) against Go's
train.StepFormatCosines on golden vectors.

The oracle is train/testdata/format_cosines_golden.json, written by the Go
tests from StepFormatCosines (go test ./train -run Golden -update; the Go
test fails when it is stale): W workers' gradients of a small MLP's
parameters (float32 bit patterns) and Go's per-group cosine of every
format's aggregate (G-Binary, G-Ternary, INT8, BFP8) to the FP32 mean.

Tolerance: the aggregates are bit-identical (the votes and the INT8/BFP8
kernels are, test_fixed.py and test_lowbit.py); only the float64 dot
products are summed in another order (Go tensor by tensor, element after
element; torch's dot blocked over the group's vector). Each of the three
sums has a relative error below n * 2^-53 ~ 1e-13 for n < 1000 terms of one
sign (the squared norms) and is bounded likewise for the dot product when
the cosine is not tiny, so the cosines agree to 1e-12 absolute.
"""

from __future__ import annotations

import json
import struct

import pytest
import torch

from conftest import REPO
from nfabric import lowbit
from nfabric.lowbit import Format
from nfabric.torch.core import Cosines, Segments
from nfabric.torch.groups import ParamInfo

GOLDEN = REPO / "train" / "testdata" / "format_cosines_golden.json"


def f32(bits):
    return torch.tensor(struct.unpack(f"<{len(bits)}f", struct.pack(f"<{len(bits)}I", *bits)), dtype=torch.float32)


def cases():
    if not GOLDEN.exists():
        pytest.skip(f"skipped: no {GOLDEN} (run the tests from a checkout)")
    return json.loads(GOLDEN.read_text())


def go_mean(g: torch.Tensor) -> torch.Tensor:
    """Go's meanGrads: a float32 running sum over workers, times float32(1/W)."""
    m = g[0].clone()
    for k in range(1, g.shape[0]):
        m = m + g[k]
    return m * (torch.tensor(1.0, dtype=torch.float32) / g.shape[0])


@pytest.mark.parametrize("kernels", ["go", "torch"])
def test_cosines_match_go(kernels, monkeypatch):
    from nfabric import _golib
    if kernels == "torch":
        monkeypatch.setattr(_golib, "fixed_usable", lambda *t: False)
    cs = cases()
    assert len(cs) >= 4
    for ci, c in enumerate(cs):
        w = c["workers"]
        infos, flat = [], 0
        for p in c["params"]:
            infos.append(ParamInfo(p["name"], torch.nn.Parameter(torch.zeros(p["n"])), p["group"], flat))
            flat += p["n"]
        cos = Cosines([Format.INT8, "bfp8"])
        for group in ("backbone", "head"):
            idx = [i for i, p in enumerate(c["params"]) if p["group"] == group]
            ps = [infos[i] for i in idx]
            seg = Segments(ps, [sum(p.numel for p in ps[:j]) for j in range(len(ps))])
            g = torch.stack([torch.cat([f32(c["grads"][k][i]) for i in idx]) for k in range(w)])
            planes = torch.stack([lowbit.encode_signs(g[k]) for k in range(w)])
            cos.add(group, planes, seg, go_mean(g), g)
        got = cos.take()
        for fname, per in c["cosines"].items():
            f = lowbit.parse_format(fname)
            for group, want in per.items():
                assert got[group][f] == pytest.approx(want, abs=1e-12), (ci, fname, group)
        assert cos.take() == {}


def test_cosines_measure_only_the_asked_formats():
    p = ParamInfo("w", torch.nn.Parameter(torch.zeros(70)), "backbone", 0)
    seg = Segments([p], [0])
    g = torch.randn(3, 70, generator=torch.Generator().manual_seed(1))
    planes = torch.stack([lowbit.encode_signs(g[k]) for k in range(3)])
    paper = Cosines()
    paper.add("backbone", planes, seg, g.mean(0))
    assert set(paper.take()["backbone"]) == {Format.BINARY, Format.TERNARY}
    c8 = Cosines(["int8", Format.BINARY])  # a sign format names no extra measurement
    c8.add("backbone", planes, seg, g.mean(0), g)
    assert set(c8.take()["backbone"]) == {Format.BINARY, Format.TERNARY, Format.INT8}
    with pytest.raises(ValueError, match=r"gradients \[W, 70\]"):
        Cosines(["bfp8"]).add("backbone", planes, seg, g.mean(0))
    with pytest.raises(ValueError):
        Cosines(["fp9"])


def test_cosines_from_given_aggregates():
    """summed= (the DDP hook's input: each format's aggregate computed by
    the ranks' all-reduces) gives the cosines the workers' gradients give,
    bucketed per parameter tensor; a missing format is an error naming it."""
    from nfabric import fixed
    ps = [ParamInfo("w", torch.nn.Parameter(torch.zeros(70)), "backbone", 0),
          ParamInfo("b", torch.nn.Parameter(torch.zeros(5)), "backbone", 70)]
    seg = Segments(ps, [0, 70])
    g = torch.randn(3, 75, generator=torch.Generator().manual_seed(2))
    g[:, 70:] *= 100  # a tensor of other magnitude: one INT8 scale for both would differ
    planes = torch.stack([lowbit.encode_signs(g[k]) for k in range(3)])
    by_grads = Cosines(["int8", "bfp8"])
    by_grads.add("backbone", planes, seg, g.mean(0), g)
    summed = {f: torch.cat([fixed.aggregate_workers(str(f), [g[k, s:s + n] for k in range(3)])
                            for s, n in zip(seg.starts, seg.lengths)]) for f in (Format.INT8, Format.BFP8)}
    given = Cosines(["int8", "bfp8"])
    given.add("backbone", planes, seg, g.mean(0), summed=summed)
    assert given.take() == by_grads.take()
    with pytest.raises(ValueError, match=r"bfp8 cosine needs its aggregate \[75\]"):
        Cosines(["bfp8"]).add("backbone", planes, seg, g.mean(0), summed={Format.INT8: summed[Format.INT8]})
