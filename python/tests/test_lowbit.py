"""nfabric.lowbit against per-element reference loops written from the
definitions (b = 1{g > 0}, a = 2c - W or P - N over gated-on workers,
u = sgn(a), the gate on the flattened index), on every W, length, base,
layout and gate; on CUDA too where a device is present."""

from __future__ import annotations

import itertools
from typing import List

import pytest
import torch

from nfabric import lowbit
from nfabric.lowbit import Format, Gate, GateKind, Layout, Spec

# Every test runs on the Go lowbit library and on the torch-op kernels.
pytestmark = pytest.mark.usefixtures("kernel_path")


def ref_aggregate(g: List[List[float]], spec: Spec, tau: float, base: int) -> List[int]:
    """Go's RefAggregate, transcribed one element at a time."""
    w, n = len(g), len(g[0])
    out = []
    for i in range(n):
        a = 0
        for k in range(w):
            v = g[k][i]
            if spec.gate_bits():
                if v > tau or v < -tau:
                    a += 1 if v > 0 else -1
                continue
            a += 1 if v > 0 else -1
        u = (a > 0) - (a < 0)
        if spec.format == Format.TERNARY:
            if spec.gate.kind == GateKind.PATTERN:
                p = spec.gate.effective_period()
                if (base + i) % p == p - 1:
                    u = 0
            elif spec.gate.kind == GateKind.MARGIN and abs(a) < spec.gate.threshold:
                u = 0
        out.append(u)
    return out


GATES = [Gate(), Gate(GateKind.PATTERN, 2), Gate(GateKind.PATTERN, 64), Gate(GateKind.MARGIN, threshold=1),
         Gate(GateKind.MARGIN, threshold=3), Gate(GateKind.WORKER)]


def random_grads(w: int, n: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    g = torch.randn(w, n, generator=gen)
    # Exact zeros, -0 and denormals on a quarter of the elements.
    special = torch.tensor([0.0, -0.0, 1e-45, -1e-45])
    mask = torch.rand(w, n, generator=gen) < 0.25
    g[mask] = special[torch.randint(4, (int(mask.sum()),), generator=gen)]
    return g


def devices() -> List[str]:
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("w", [1, 2, 3, 7, 8, 13, 64])
def test_aggregate_matches_reference(device: str, w: int) -> None:
    for n, base in itertools.product([1, 7, 8, 9, 63, 200], [0, 1, 5]):
        g = random_grads(w, n, 31 * w + n + base)
        gl = g.tolist()
        layouts = [Layout.WORKER_MAJOR] + ([Layout.ELEMENT_MAJOR] if w <= 8 else [])
        for layout in layouts:
            for fmt, gate in [(Format.BINARY, Gate())] + [(Format.TERNARY, x) for x in GATES]:
                spec = Spec(w, layout, fmt, gate)
                got = lowbit.aggregate(g.to(device), spec, base, 0.5).cpu().tolist()
                assert got == ref_aggregate(gl, spec, 0.5, base), f"W={w} n={n} base={base} {layout} {fmt} {gate}"


@pytest.mark.parametrize("device", devices())
def test_packing_layouts(device: str) -> None:
    g = random_grads(5, 37, 1).to(device)
    planes = torch.stack([lowbit.encode_signs(g[k]) for k in range(5)])
    assert planes.shape == (5, 5) and planes.dtype == torch.uint8
    # Bit q of byte j of worker k's plane is 1{g[k, 8j+q] > 0}, LSB first.
    for k, i in [(0, 0), (1, 9), (4, 36)]:
        assert (int(planes[k, i // 8]) >> (i % 8)) & 1 == int(g[k, i] > 0)
    assert int(planes[0, 4]) >> 5 == 0, "unused bits of the last byte are clear"
    packet = lowbit.pack_packet(g)
    for k, i in [(0, 0), (3, 20), (4, 36)]:
        assert (int(packet[i]) >> k) & 1 == int(g[k, i] > 0)
    assert torch.equal(lowbit.planes_to_packet(planes, 37), packet)
    assert torch.equal(lowbit.packet_to_planes(packet, 5), planes)
    assert lowbit.count_packet(packet | 0xE0, 5).tolist() == (g > 0).sum(0).tolist(), "bits >= W are ignored"
    assert lowbit.count_planes(planes, 37).tolist() == (g > 0).sum(0).tolist()


def test_nonfinite_raises_naming_the_element() -> None:
    for bad in [float("nan"), float("inf"), float("-inf")]:
        g = torch.randn(4, 20)
        g[2, 11] = bad
        with pytest.raises(lowbit.NonFiniteError, match="worker 2: element 11"):
            lowbit.aggregate(g, Spec(4), 0)
        with pytest.raises(lowbit.NonFiniteError, match="element 11"):
            lowbit.encode_signs(g[2])


def test_spec_limits_and_parsing() -> None:
    with pytest.raises(ValueError, match="1 to 8 workers, not 9"):
        Spec(9, Layout.ELEMENT_MAJOR).validate()
    with pytest.raises(ValueError, match="1 to 1024 workers, not 1025"):
        Spec(1025, Layout.WORKER_MAJOR).validate()
    Spec(1024, Layout.WORKER_MAJOR).validate()
    assert lowbit.parse_gate("pattern") == lowbit.PAPER_GATE and not lowbit.PAPER_GATE.extension()
    assert lowbit.parse_gate("margin:4") == Gate(GateKind.MARGIN, threshold=4)
    for bad in ["pattern:0", "paper:0", "pattern:-3", "pattern:1", "pattern:65", "margin", "margin:0", "worker:3", "nope"]:
        with pytest.raises(ValueError):
            lowbit.parse_gate(bad)
    assert lowbit.decode(torch.tensor([-1, 0, 1], dtype=torch.int8), 0.25).tolist() == [-0.25, 0.0, 0.25]


def test_cuda_present_or_skipped() -> None:
    if not torch.cuda.is_available():
        pytest.skip("skipped: no CUDA device here; the CPU/CUDA comparison runs where torch.cuda.is_available()")
    g = random_grads(8, 100_000, 3)
    for layout in (Layout.WORKER_MAJOR, Layout.ELEMENT_MAJOR):
        spec = Spec(8, layout, Format.TERNARY, Gate())
        assert torch.equal(lowbit.aggregate(g.cuda(), spec, 11).cpu(), lowbit.aggregate(g, spec, 11))


def test_pattern_keeps_tiles_the_flattened_index() -> None:
    for p, base, n in itertools.product([2, 3, 5, 64], [0, 1, 2, 3, 100, 12345], [0, 1, 2, 63, 1000]):
        want = [(base + i) % p != p - 1 for i in range(n)]
        assert lowbit.pattern_keeps(p, base, n, torch.device("cpu")).tolist() == want, (p, base, n)


def test_any_nonfinite() -> None:
    assert not bool(lowbit.any_nonfinite(torch.zeros(0)))
    assert not bool(lowbit.any_nonfinite(torch.tensor([3.4028235e38, -3.4028235e38, 1e-45, -0.0])))
    for bad in [float("nan"), float("inf"), float("-inf")]:
        t = torch.randn(1000)
        t[777] = bad
        assert bool(lowbit.any_nonfinite(t))


def test_unaligned_views() -> None:
    """Slices that start at any byte pack and vote like fresh tensors."""
    bits = (torch.randn(100) > 0).to(torch.uint8)
    for a in range(9):
        assert torch.equal(lowbit._pack_bits(bits[a:a + 64]), lowbit._pack_bits(bits[a:a + 64].clone()))
    planes = torch.stack([lowbit.encode_signs(torch.randn(128)) for _ in range(3)])
    shifted = torch.cat([torch.zeros(3, dtype=torch.uint8), planes.reshape(-1)])[3:].view(3, 16)
    assert shifted.storage_offset() == 3
    assert torch.equal(lowbit.vote_planes(shifted, 128, Spec(3)), lowbit.vote_planes(planes, 128, Spec(3)))
