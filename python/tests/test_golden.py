"""nfabric.lowbit against the Go implementation, bit for bit.

The oracle is the Go CLI (`nfabric payload random|encode|aggregate`): it
makes the gradients (random N(0,1), plus hand-made files with ties, -0, +0,
denormals and huge values), packs them into payload files and aggregates
them. The Python side must write byte-identical payload files and return
identical counts, G-Binary signs and G-Ternary values.
"""

from __future__ import annotations

import pathlib
import struct
import subprocess
from typing import List, Optional

import pytest
import torch

from nfabric import lowbit, payload
from nfabric.lowbit import Format, Layout, Spec

# Every test runs on the Go lowbit library and on the torch-op kernels.
pytestmark = pytest.mark.usefixtures("kernel_path")

WORKERS = [1, 2, 7, 8, 13]
ELEMENTS = [1, 63, 64, 65, 511, 1000]
BASE = 7  # flattened index of element 0: the pattern gate depends on it


def run(cli: pathlib.Path, *args: str) -> None:
    r = subprocess.run([str(cli), *args], capture_output=True, text=True)
    assert r.returncode == 0, f"nfabric {' '.join(args)}: {r.stderr}"


def read_f32(path: pathlib.Path, workers: int) -> torch.Tensor:
    data = path.read_bytes()
    v = torch.tensor(struct.unpack(f"<{len(data) // 4}f", data), dtype=torch.float32)
    return v.view(workers, -1)


def write_f32(path: pathlib.Path, g: torch.Tensor) -> None:
    path.write_bytes(struct.pack(f"<{g.numel()}f", *g.reshape(-1).tolist()))


def special(workers: int, n: int, seed: int) -> torch.Tensor:
    """Gradients full of edge cases: exact ties (half the workers positive
    on every element, when W is even), +0, -0, the smallest denormals,
    the largest finite values."""
    gen = torch.Generator().manual_seed(seed)
    pool = torch.tensor([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38, 3.4028235e38, -3.4028235e38,
                         1.0, -1.0, 0.5, -0.5], dtype=torch.float32)
    g = pool[torch.randint(len(pool), (workers, n), generator=gen)]
    if workers % 2 == 0:
        # Ties on the first half of the elements: W/2 positive, W/2 not.
        half = n // 2
        for i in range(half):
            perm = torch.randperm(workers, generator=gen)
            g[perm[: workers // 2], i] = torch.tensor(1e-45)
            g[perm[workers // 2:], i] = torch.tensor(-0.0)
    return g


def go_aggregate(cli: pathlib.Path, nfp: pathlib.Path, mode: str, workers: int, gate: Optional[str] = None) -> List[int]:
    out = nfp.with_suffix(f".{mode}.{(gate or '').replace(':', '_')}.bin")
    args = ["payload", "aggregate", "--mode", mode, "-o", str(out), str(nfp)]
    if gate:
        args += ["--gate", gate]
    run(cli, *args)
    data = out.read_bytes()
    if mode == "counts":
        return list(data)
    return list(struct.unpack(f"<{len(data)}b", data))


def specs(workers: int) -> List[Layout]:
    return [Layout.ELEMENT_MAJOR, Layout.WORKER_MAJOR] if workers <= 8 else [Layout.WORKER_MAJOR]


def gradient_cases(cli: pathlib.Path, tmp: pathlib.Path):
    for w in WORKERS:
        for n in ELEMENTS:
            f = tmp / f"random_w{w}_n{n}.f32"
            run(cli, "payload", "random", "--workers", str(w), "--elements", str(n), "--seed", str(100 * w + n), "-o", str(f))
            yield f"random W={w} n={n}", f, w, read_f32(f, w)
        s = tmp / f"special_w{w}.f32"
        g = special(w, 777, w)
        write_f32(s, g)
        yield f"special W={w}", s, w, read_f32(s, w)


def test_go_golden_vectors(nfabric_cli: pathlib.Path, tmp_path: pathlib.Path) -> None:
    checked = 0
    for name, f32, w, g in gradient_cases(nfabric_cli, tmp_path):
        n = g.shape[1]
        # The independent closed form of the counts, straight from the floats.
        counts = (g > 0).sum(dim=0)
        for layout in specs(w):
            nfp = tmp_path / f"{f32.stem}_{layout}.nfp"
            run(nfabric_cli, "payload", "encode", "--workers", str(w), "--layout", str(layout), "--base", str(BASE),
                "-o", str(nfp), str(f32))
            spec = Spec(w, layout, Format.BINARY)
            ours = payload.encode(payload.Header(spec, n, BASE), g)
            assert ours.to_bytes() == nfp.read_bytes(), f"{name} {layout}: payload bytes differ from Go's"
            f = payload.read(nfp.read_bytes())
            go_counts = go_aggregate(nfabric_cli, nfp, "counts", w)
            if layout == Layout.ELEMENT_MAJOR:
                py_counts = lowbit.count_packet(f.signs[:n], w)
            else:
                py_counts = lowbit.count_planes(f.planes(), n)
            assert py_counts.tolist() == go_counts, f"{name} {layout}: counts"
            assert counts.tolist() == go_counts, f"{name} {layout}: counts vs the closed form"
            assert f.vote().tolist() == go_aggregate(nfabric_cli, nfp, "binary", w), f"{name} {layout}: g-binary"
            assert lowbit.aggregate(g, spec, BASE).tolist() == f.vote().tolist()
            for gate in ["pattern", "pattern:5", "margin:1", f"margin:{max(1, w // 2)}"]:
                tspec = Spec(w, layout, Format.TERNARY, lowbit.parse_gate(gate))
                want = go_aggregate(nfabric_cli, nfp, "ternary", w, gate)
                assert f.vote(tspec).tolist() == want, f"{name} {layout} {gate}: g-ternary"
                assert lowbit.aggregate(g, tspec, BASE).tolist() == want
            checked += 1
            # The worker gate (extension): gate bits |g| > tau beside the signs.
            wnfp = tmp_path / f"{f32.stem}_{layout}_worker.nfp"
            run(nfabric_cli, "payload", "encode", "--workers", str(w), "--layout", str(layout), "--format", "g-ternary",
                "--gate", "worker", "--tau", "0.5", "--base", str(BASE), "-o", str(wnfp), str(f32))
            wspec = Spec(w, layout, Format.TERNARY, lowbit.Gate(lowbit.GateKind.WORKER))
            assert payload.encode(payload.Header(wspec, n, BASE), g, 0.5).to_bytes() == wnfp.read_bytes()
            want = go_aggregate(nfabric_cli, wnfp, "ternary", w)
            assert lowbit.aggregate(g, wspec, BASE, 0.5).tolist() == want, f"{name} {layout} worker gate"
    assert checked == sum(len(specs(w)) * (len(ELEMENTS) + 1) for w in WORKERS)


def test_go_rejects_what_python_rejects(nfabric_cli: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A NaN is an error on both sides, naming the element."""
    g = torch.randn(3, 10)
    g[1, 4] = float("nan")
    f = tmp_path / "nan.f32"
    write_f32(f, g)
    r = subprocess.run([str(nfabric_cli), "payload", "encode", "--workers", "3", "-o", str(tmp_path / "x.nfp"), str(f)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "element 4" in r.stderr
    with pytest.raises(lowbit.NonFiniteError, match="worker 1: element 4"):
        lowbit.pack_packet(g)
