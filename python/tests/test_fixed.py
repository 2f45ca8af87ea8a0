"""nfabric.fixed (INT8, BFP8) against Go's lowbit kernels, bit for bit.

The oracle is lowbit/testdata/fixed_golden.json, written by the Go tests
from the Go kernels (go test ./lowbit -run Golden -update; the Go tests
fail when it is stale and check it against the Go reference twins): every
stage of every case (scale, codes, exponents, lane sums, block maxima,
decoded means as float32 bit patterns) must come out identical here. The
format table (nfabric._formats) is generated from the same Go table.
"""

from __future__ import annotations

import json
import struct

import pytest
import torch

from conftest import REPO
from nfabric import _formats, fixed, lowbit
from nfabric.lowbit import NonFiniteError

GOLDEN = REPO / "lowbit" / "testdata" / "fixed_golden.json"


def f32(bits):
    return torch.tensor(struct.unpack(f"<{len(bits)}f", struct.pack(f"<{len(bits)}I", *bits)), dtype=torch.float32)


def bits(t: torch.Tensor):
    return list(struct.unpack(f"<{t.numel()}I", struct.pack(f"<{t.numel()}f", *t.tolist())))


def cases():
    if not GOLDEN.exists():
        pytest.skip(f"skipped: no {GOLDEN} (run the tests from a checkout)")
    return json.loads(GOLDEN.read_text())


@pytest.fixture(params=["go", "torch"])
def kernels(request, monkeypatch):
    """Each test on the Go library's kernels (the C ABI, version 2), then
    on the torch-op kernels (the library switched off)."""
    from nfabric import _golib
    if request.param == "go":
        if not _golib.fixed_usable(torch.zeros(1)):
            from conftest import need_lib
            need_lib(_golib)
    else:
        monkeypatch.setattr(_golib, "fixed_usable", lambda *t: False)
    return request.param


def test_golden_vectors(kernels, monkeypatch):
    from nfabric import _golib
    calls = []
    lib = _golib.lib()
    if kernels == "go":  # count the library calls: the golden cases must go through it
        class Counting:
            def __getattr__(self, name):
                if name.startswith("nfl_") and name.endswith(("int8", "bfp8")):
                    calls.append(name)
                return getattr(lib, name)
        monkeypatch.setattr(_golib, "lib", lambda: Counting())
    cs = cases()
    assert {c["format"] for c in cs} == set(fixed.SUM_FORMATS)
    for i, c in enumerate(cs):
        w, n = c["workers"], c["n"]
        g = [f32(c["grads"][k]) for k in range(w)]
        where = f"case {i} ({c['format']} w={w} n={n})"
        if c["format"] == "int8":
            m = torch.stack([fixed.max_abs(x) for x in g]).max()
            s = fixed.int8_scale(m)
            assert bits(s.reshape(1)) == [c["scale"]], where
            codes = torch.stack([fixed.encode_int8(x, s) for x in g])
            assert codes.tolist() == c["codes"], where
            total = fixed.sum_codes(codes)
            assert total.tolist() == c["sum"], where
            mean = fixed.decode_int8(total, s, w)
        else:
            enc = [fixed.encode_bfp8(x) for x in g]
            assert [m.tolist() for m, _ in enc] == c["codes"], where
            assert [e.tolist() for _, e in enc] == c["exps"], where
            total, e = fixed.sum_bfp8(torch.stack([m for m, _ in enc]), torch.stack([x for _, x in enc]))
            assert total.tolist() == c["sum"], where
            assert e.tolist() == c["sum_exp"], where
            mean = fixed.decode_bfp8(total, e, w)
        assert bits(mean) == c["mean"], where
        if w <= fixed.MAX_SUM_WORKERS:
            assert bits(fixed.aggregate_workers(c["format"], g)) == c["mean"], where
        else:  # the kernels saturate as the controller does; the aggregate refuses
            with pytest.raises(ValueError, match="lane sums are exact"):
                fixed.aggregate_workers(c["format"], g)
    want = {f"nfl_{k}_{f}" for k in ("encode", "sum", "decode") for f in ("int8", "bfp8")} if kernels == "go" else set()
    assert set(calls) == want


def test_saturation_case_present():
    sat = [c for c in cases() if c["workers"] == 259]
    assert len(sat) == 2 and all(c["sum"][0] == fixed.SUM_MAX for c in sat)


def test_format_table_matches_lowbit():
    """The paper's formats in nfabric.lowbit are the Go table's rows 0-2
    (numbers, names, aliases); the table's extensions are the summed ones."""
    rows = {r[0]: r for r in _formats.FORMATS}
    for f in lowbit.Format:
        num, name, aliases, _family, _bits, _paper = rows[int(f)]
        assert str(f) == name
        for a in (name,) + aliases:
            assert lowbit.parse_format(a) == f
    assert [r[1] for r in _formats.FORMATS if not r[5]] == list(fixed.SUM_FORMATS) == ["int8", "bfp8"]
    assert fixed.bits_per_element("int8") == 8.0 and fixed.bits_per_element("block-fp8") == 8.125
    for bad in ("g-binary", "fp8", ""):
        with pytest.raises(ValueError):
            fixed.parse_sum_format(bad)


def test_nonfinite_rejected(kernels):
    g = torch.tensor([1.0, float("nan"), 2.0])
    with pytest.raises(NonFiniteError):
        fixed.max_abs(g)
    with pytest.raises(NonFiniteError):
        fixed.encode_bfp8(torch.tensor([0.0, float("inf")]))
    with pytest.raises(NonFiniteError):
        fixed.encode_int8(g, torch.tensor(1.0))


def test_hand_case(kernels):
    """Worked by hand: two workers, max |g| = 127, so s = 1; ties round to
    even (2.5 -> 2, -0.5 -> 0); the sum decodes to the mean."""
    g = [torch.tensor([127.0, 2.5, -0.5, 0.0]), torch.tensor([-1.0, 1.5, 3.0, 0.0])]
    assert fixed.aggregate_workers("int8", g).tolist() == [63.0, 2.0, 1.5, 0.0]
    # BFP8, one block: worker 0 max 127 -> e = 7 (127 = 0.99 * 2^7), m = g;
    # worker 1 max 3 -> e = 2, m = g * 2^5 = [-32, 48, 96, 0], aligned by
    # d = 5: (m + 16) >> 5 = [-1, 2, 3, 0]; S = [126, 4, 3, 0]
    # (2.5 -> 2, -0.5 -> 0 when encoding worker 0); mean = S * 2^0 / 2.
    assert fixed.aggregate_workers("bfp8", g).tolist() == [63.0, 2.0, 1.5, 0.0]


@pytest.mark.parametrize("scale", [3e38, float("inf"), float("nan"), -1.0, -0.0])
def test_scale_no_agreement_gives_is_refused(kernels, scale):
    """A scale above max float32 / 127 (3e38 would decode a full code to
    Inf), negative (-0 too), NaN or Inf is refused by encode and decode
    alike, as Go's lowbit.CheckInt8Scale refuses it."""
    with pytest.raises(ValueError, match="int8 scale"):
        fixed.encode_int8(torch.tensor([1.0]), torch.tensor(scale))
    with pytest.raises(ValueError, match="int8 scale"):
        fixed.decode_int8(torch.tensor([127], dtype=torch.int16), torch.tensor(scale), 1)


def test_largest_scale_decodes_finite(kernels):
    """Max float32 gradients agree on the largest scale; 127 * s rounds
    above max float32 in float64, and the mean is clamped, not Inf (Go's
    DecodeInt8). Oracle: the gradient itself, max float32."""
    fmax = torch.finfo(torch.float32).max
    g = [torch.tensor([fmax, -fmax]), torch.tensor([fmax, -fmax])]
    got = fixed.aggregate_workers("int8", g)
    assert got.tolist() == [fmax, -fmax]
    assert fixed.MAX_INT8_SCALE == float(fixed.int8_scale(torch.tensor(fmax)))
