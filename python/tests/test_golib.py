"""The Go lowbit library (nfabric._golib) against the torch-op kernels on
random tensors: every exported kernel, every W, length and gate, the same
bits and the same errors. The torch-op code is the independent path here
(it was the implementation before the library, and the golden tests check
both against Go's CLI)."""

from __future__ import annotations

import itertools
import sys
import threading

import pytest
import torch

from nfabric import _golib, lowbit
from nfabric.lowbit import Format, Gate, GateKind, Layout, NonFiniteError, Spec

LENGTHS = [0, 1, 7, 8, 9, 63, 64, 65, 511, 513, 4099]
WORKERS = [1, 2, 3, 4, 5, 8, 16, 33]  # 4: the W=8 kernel with constant planes added
GATES = [Gate(), Gate(GateKind.PATTERN, 5), Gate(GateKind.WORKER), Gate(GateKind.MARGIN, threshold=1),
         Gate(GateKind.MARGIN, threshold=3)]


pytestmark = pytest.mark.usefixtures("golib_loaded")


def both(monkeypatch: pytest.MonkeyPatch, fn):
    """fn() on the library, then on the torch-op kernels."""
    go = fn()
    with monkeypatch.context() as m:
        m.setattr(_golib, "usable", lambda *t: False)
        ref = fn()
    return go, ref


def grads(w: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(w, n, generator=g)
    # zeros, -0 and exact ties between workers, which sign tests get wrong
    x[torch.rand(w, n, generator=g) < 0.1] = 0.0
    x[torch.rand(w, n, generator=g) < 0.05] = -0.0
    return x


def test_library_runs_the_go_kernels() -> None:
    assert lowbit.kernels() in ("avx2", "go")
    assert _golib.reason() == ""


@pytest.mark.parametrize("n", LENGTHS)
def test_encoders(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    g = grads(1, n, n)[0]
    go, ref = both(monkeypatch, lambda: lowbit.encode_signs(g))
    assert torch.equal(go, ref)
    for tau in (0.0, 0.5, 3.0):
        go, ref = both(monkeypatch, lambda: lowbit.encode_gates(g, tau))
        assert torch.equal(go, ref)
    # a strided input (not contiguous) encodes as its values
    if n:
        s = torch.stack([g, g], 1)[:, 0]
        go, ref = both(monkeypatch, lambda: lowbit.encode_signs(s))
        assert torch.equal(go, ref)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_nonfinite_same_error(monkeypatch: pytest.MonkeyPatch, bad: float) -> None:
    g = grads(1, 1000, 3)[0]
    g[123], g[700] = bad, float("nan")
    for enc in (lambda: lowbit.encode_signs(g, 4), lambda: lowbit.encode_gates(g, 0.1, 4)):
        errs = []
        for use in (True, False):
            with monkeypatch.context() as m:
                if not use:
                    m.setattr(_golib, "usable", lambda *t: False)
                with pytest.raises(NonFiniteError) as e:
                    enc()
                errs.append((e.value.index, str(e.value)))
        assert errs[0] == errs[1] and errs[0][0] == 123


@pytest.mark.parametrize("w,n", itertools.product(WORKERS, LENGTHS[1:]))
def test_votes_and_counts(monkeypatch: pytest.MonkeyPatch, w: int, n: int) -> None:
    x = grads(w, n, 1000 * w + n)
    planes = torch.stack([lowbit.encode_signs(x[k]) for k in range(w)]) if n else torch.zeros(w, 0, dtype=torch.uint8)
    gplanes = torch.stack([lowbit.encode_gates(x[k], 0.4) for k in range(w)]) if n else planes.clone()
    go, ref = both(monkeypatch, lambda: lowbit.count_planes(planes, n))
    assert torch.equal(go, ref)
    base_t = torch.randperm(10 * n + 1)[:n].sort().values
    for fmt, gate in [(Format.BINARY, Gate())] + [(Format.TERNARY, g) for g in GATES]:
        spec = Spec(w, Layout.WORKER_MAJOR, fmt, gate)
        if gate.kind == GateKind.MARGIN and gate.threshold > 2 * w:
            continue
        gates = gplanes if spec.gate_bits() else None
        for base in (0, 7, base_t):
            go, ref = both(monkeypatch, lambda: lowbit.vote_planes(planes, n, spec, base, gates))
            assert torch.equal(go, ref), (fmt, gate, base)
            # a list of received buffers votes as the stacked planes
            assert torch.equal(lowbit.vote_planes(list(planes), n, spec, base, gates), ref)
            go, ref = both(monkeypatch, lambda: lowbit.vote_update(planes, n, spec, 0.125, base, gates))
            assert torch.equal(go, ref), (fmt, gate, base)
        if w > 8:
            continue
        go, ref = both(monkeypatch, lambda: lowbit.planes_to_packet(planes, n))
        assert torch.equal(go, ref)
        packet = go
        gpacket = lowbit.planes_to_packet(gplanes, n)
        go, ref = both(monkeypatch, lambda: lowbit.count_packet(packet, w))
        assert torch.equal(go, ref)
        spec = Spec(w, Layout.ELEMENT_MAJOR, fmt, gate)
        for base in (0, 7, base_t):
            go, ref = both(monkeypatch, lambda: lowbit.vote_packet(packet, spec, base, gpacket if spec.gate_bits() else None))
            assert torch.equal(go, ref), (fmt, gate, base)


def test_vote_update_writes_into_a_view(monkeypatch: pytest.MonkeyPatch) -> None:
    x = grads(4, 1000, 9)
    planes = torch.stack([lowbit.encode_signs(x[k]) for k in range(4)])
    spec = Spec(4, Layout.WORKER_MAJOR, Format.TERNARY, Gate())
    buf = torch.full((1200,), 7.0)
    lowbit.vote_update(planes, 1000, spec, -0.5, 3, out=buf[100:1100])
    want = lowbit.decode(lowbit.vote_planes(planes, 1000, spec, 3), -0.5)
    assert torch.equal(buf[100:1100], want)
    assert torch.all(buf[:100] == 7.0) and torch.all(buf[1100:] == 7.0)
    # the sign of a zero update follows the scale's, as scale * 0.0 does
    assert torch.equal(torch.signbit(buf[100:1100][want == 0]), torch.ones(int((want == 0).sum()), dtype=torch.bool))


def test_vote_scratch_reused_across_sizes_and_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """vote_update and vote_planes vote into one per-thread scratch buffer
    (_golib.scratch_planes): a small vote after a large one must not see the
    large one's bytes, and threads voting at once must not see each other's."""
    import threading
    spec = Spec(8, Layout.WORKER_MAJOR, Format.TERNARY, Gate())
    cases = []
    for n, seed in [(70001, 1), (9, 2), (4099, 3), (70001, 4)]:
        x = grads(8, n, seed)
        planes = torch.stack([lowbit.encode_signs(x[k]) for k in range(8)])
        with monkeypatch.context() as m:
            m.setattr(_golib, "usable", lambda *t: False)
            ref = lowbit.vote_update(planes, n, spec, 0.25, 5)
        cases.append((planes, n, ref))
    for planes, n, ref in cases:
        assert torch.equal(lowbit.vote_update(planes, n, spec, 0.25, 5), ref)
        assert torch.equal(lowbit.decode(lowbit.vote_planes(planes, n, spec, 5), 0.25), ref)
    bad = []

    def run(k: int) -> None:
        for _ in range(20):
            planes, n, ref = cases[(k + _) % len(cases)]
            if not torch.equal(lowbit.vote_update(planes, n, spec, 0.25, 5), ref):
                bad.append(k)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert bad == []


@pytest.mark.parametrize("n", LENGTHS)
def test_unpack_planes(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """unpack_planes on both paths against the definition: +1 where pos and
    nz are set, -1 where only nz is, 0 elsewhere (pos alone is 0)."""
    g = torch.Generator().manual_seed(n)
    nb = lowbit.plane_bytes(n)
    pos, nz = (torch.randint(0, 256, (nb + 3,), dtype=torch.uint8, generator=g) for _ in range(2))
    bit = lambda p, i: (int(p[i // 8]) >> (i % 8)) & 1  # noqa: E731
    want = torch.tensor([bit(nz, i) * (2 * bit(pos, i) - 1) for i in range(n)], dtype=torch.int8)
    go, ref = both(monkeypatch, lambda: lowbit.unpack_planes(pos, nz, n))
    assert torch.equal(go, want) and torch.equal(ref, want)


def test_vote_update_from_many_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    # The vote's result planes are per-thread scratch, reused across calls
    # (the DDP hook votes on the threads completing its transfers): votes of
    # different sizes, interleaved on four threads, each as the torch path.
    cases = []
    for i, n in enumerate([1 << 20, 513, (1 << 20) - 3, 4099]):
        x = grads(4, n, 20 + i)
        planes = [lowbit.encode_signs(x[k]) for k in range(4)]
        spec = Spec(4, Layout.WORKER_MAJOR, Format.TERNARY if i % 2 else Format.BINARY, Gate())
        _, want = both(monkeypatch, lambda: lowbit.vote_update(planes, n, spec, 0.25, 5))
        cases.append((planes, n, spec, want))
    bad: list = []

    def run(c) -> None:
        planes, n, spec, want = c
        out = torch.empty(n)
        for _ in range(20):
            lowbit.vote_update(planes, n, spec, 0.25, 5, out=out)
            if not torch.equal(out, want):
                bad.append(n)
    ts = [threading.Thread(target=run, args=(c,)) for c in cases]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the GIL over often, so the votes interleave
    try:
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert bad == []


def test_bad_arguments_are_errors_not_crashes() -> None:
    planes = torch.zeros(3, 4, dtype=torch.uint8)
    with pytest.raises(ValueError, match="holds 4 bytes, want 5"):
        lowbit.vote_planes(planes, 40, Spec(3), 0)
    with pytest.raises(ValueError, match="3 sign planes for 4 workers"):
        lowbit.vote_planes(planes, 32, Spec(4), 0)
    with pytest.raises(ValueError, match="1 to 8 workers"):
        lowbit.planes_to_packet(torch.zeros(9, 4, dtype=torch.uint8), 32)
    with pytest.raises(ValueError, match="worker gate"):
        lowbit.vote_planes(planes, 32, Spec(3, Layout.WORKER_MAJOR, Format.TERNARY, Gate(GateKind.WORKER)), 0)


# -- the summed formats (C ABI version 2) ------------------------------------

FIXED_LENGTHS = [0, 1, 63, 64, 65, 4095, 4097]
FIXED_WORKERS = [1, 2, 5, 259]


def fixed_grads(w: int, n: int, seed: int) -> torch.Tensor:
    """Gradients over a wide range of magnitudes (so BFP8 blocks get
    different exponents per worker), zeros, -0, all-zero blocks and exact
    halves (ties of the rounding)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(w, n, generator=g) * torch.exp2(torch.randint(-40, 20, (w, 1), generator=g).float())
    x[torch.rand(w, n, generator=g) < 0.1] = 0.0
    x[torch.rand(w, n, generator=g) < 0.05] = -0.0
    if n > 64:
        x[:, 64:min(128, n)] = 0.0
    if n >= 4:
        x[0, :4] = torch.tensor([127.0, 2.5, -0.5, 1.5])  # ties at scale 1 when 127 is the maximum
    return x


@pytest.mark.parametrize("w", FIXED_WORKERS)
@pytest.mark.parametrize("n", FIXED_LENGTHS)
def test_fixed_kernels(monkeypatch: pytest.MonkeyPatch, w: int, n: int) -> None:
    """nfabric.fixed's encoders, sums and decoders: the C ABI's Go kernels
    and the torch ops give the same bits, at every stage, for INT8 and BFP8
    (W = 259 saturates the int16 sums)."""
    from nfabric import fixed
    assert _golib.fixed_usable(torch.zeros(1))
    x = fixed_grads(w, n, 1000 * w + n)
    if w == 259:
        # every code +-127 (alternating by element): the sums saturate both ways
        x = torch.where(torch.arange(n) % 2 == 0, 0.999, -0.999).expand(w, n).contiguous()
    go_path = []
    for usable in (True, False):
        with monkeypatch.context() as m:
            if not usable:
                m.setattr(_golib, "fixed_usable", lambda *t: False)
            s = fixed.int8_scale(torch.stack([fixed.max_abs(x[k]) for k in range(w)]).max())
            q = torch.stack([fixed.encode_int8(x[k], s) for k in range(w)])
            total = fixed.sum_codes(q)
            mean = fixed.decode_int8(total, s, w)
            enc = [fixed.encode_bfp8(x[k]) for k in range(w)]
            mants, exps = torch.stack([a for a, _ in enc]), torch.stack([b for _, b in enc])
            btot, top = fixed.sum_bfp8(mants, exps)
            bmean = fixed.decode_bfp8(btot, top, w)
            go_path.append((q, total, mean, mants, exps, btot, top, bmean))
    names = ["int8 codes", "int8 sums", "int8 mean", "bfp8 mantissas", "bfp8 exponents", "bfp8 sums", "bfp8 E", "bfp8 mean"]
    for name, a, b in zip(names, *go_path):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert torch.equal(a.view(torch.int32) if a.dtype == torch.float32 else a,
                           b.view(torch.int32) if b.dtype == torch.float32 else b), f"{name} w={w} n={n}"
    if w == 259 and n:
        assert int(go_path[0][1].max()) == int(go_path[0][5].max()) == fixed.SUM_MAX
        if n > 1:
            assert int(go_path[0][1].min()) == int(go_path[0][5].min()) == fixed.SUM_MIN


def test_fixed_errors_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """A NaN or Inf names the same element on both paths; a negative or
    infinite scale is a ValueError on both."""
    from nfabric import fixed
    g = torch.tensor([1.0, 2.0, float("inf"), float("nan")])
    for usable in (True, False):
        with monkeypatch.context() as m:
            if not usable:
                m.setattr(_golib, "fixed_usable", lambda *t: False)
            for fn in (lambda: fixed.encode_int8(g, torch.tensor(1.0)), lambda: fixed.encode_bfp8(g)):
                with pytest.raises(NonFiniteError) as e:
                    fn()
                assert e.value.index == 2
            for bad in (-1.0, float("inf"), float("nan")):
                with pytest.raises(ValueError, match="scale"):
                    fixed.encode_int8(torch.ones(3), torch.tensor(bad))


class _FakeFn:
    def __init__(self, v=0):
        self.v = v

    def __call__(self, *a):
        return self.v


class _FakeLib:
    """A library reporting ABI version v that exports the version-1
    functions, and the version-2 ones when with_fixed."""

    def __init__(self, v: int, with_fixed: bool):
        self.nfl_abi_version = _FakeFn(v)
        for name in _golib._SIGNATURES:
            if name != "nfl_abi_version":
                setattr(self, name, _FakeFn())
        if with_fixed:
            for name in _golib._SIGNATURES_V2:
                setattr(self, name, _FakeFn())


@pytest.mark.parametrize("v,with_fixed,ok,fixed_ok", [(2, True, True, True), (1, False, True, False),
                                                      (3, True, False, False), (0, True, False, False),
                                                      (2, False, False, False)])
def test_loader_versions(monkeypatch: pytest.MonkeyPatch, tmp_path, v, with_fixed, ok, fixed_ok) -> None:
    """The loader accepts ABI versions 1 (vote kernels only: the summed
    formats then run on torch ops) and 2, refuses any other, and refuses a
    version-2 library that lacks a version-2 function."""
    import ctypes
    monkeypatch.setattr(ctypes, "CDLL", lambda path: _FakeLib(v, with_fixed))
    if not ok:
        with pytest.raises((RuntimeError, AttributeError)):
            _golib._open(tmp_path / "lib.so")
        return
    lib = _golib._open(tmp_path / "lib.so")
    assert lib.nfl_version == v
    monkeypatch.setattr(_golib, "lib", lambda: lib)
    assert _golib.fixed_usable(torch.zeros(1)) == fixed_ok
    assert not _golib.fixed_usable(torch.zeros(1, device="meta"))
