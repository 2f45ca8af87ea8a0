"""The shaped-link benchmark's own logic, without root or a network: its
command line, the transfer-time bound beside each measured step, and the
two ResNet-18 variants' parameter counts (the benchmark's premise: the
same bytes on the wire for both). The benchmark itself does not run here.

Oracles: hand-computed bytes and frame counts, the closed-form parameter
count of a ResNet-18 (summed here layer by layer from the architecture),
and torchvision's published 11,689,512 parameters for its ResNet-18 with
1000 classes.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from typing import Sequence

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BENCH = REPO / "python" / "benchmarks" / "shaped_link.py"
EXAMPLES = REPO / "examples" / "torch"


@pytest.fixture(scope="module")
def sl():
    if not BENCH.is_file():
        pytest.skip(f"no {BENCH} (run the tests from a checkout)")
    spec = importlib.util.spec_from_file_location("shaped_link", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def models():
    if not (EXAMPLES / "models.py").is_file():
        pytest.skip(f"no {EXAMPLES}/models.py (run the tests from a checkout)")
    sys.path.insert(0, str(EXAMPLES))
    import models as m
    return m


@pytest.mark.parametrize("text,bps", [
    ("1gbit", 1e9), ("10gbit", 1e10), ("250mbit", 2.5e8), ("1.5Gbit", 1.5e9), ("800kbit", 8e5), ("9600bit", 9600.0),
])
def test_parse_rate(sl, text: str, bps: float) -> None:
    assert sl.parse_rate(text) == pytest.approx(bps, rel=1e-12)


@pytest.mark.parametrize("text", ["1gbps", "1g", "gbit", "0gbit", "-1gbit", "nangbit", "infgbit", "", "1 gbit/s"])
def test_parse_rate_refuses(sl, text: str) -> None:
    with pytest.raises(ValueError, match="rate"):
        sl.parse_rate(text)


def test_defaults(sl) -> None:
    a = sl.parse_args([])
    assert a.rate_list == ["1gbit", "10gbit"]
    assert a.model_list == ["cifar", "imagenet"]
    assert a.steps >= 5 and a.warmup >= 1
    assert a.mode_list == ["noop", "allreduce_hook", "fp32", "g-binary", "backbone=g-binary,head=fp32",
                           "fsdp:own", "fsdp:g-binary", "fsdp:backbone=g-binary,head=fp32"]


@pytest.mark.parametrize("argv,flag", [
    (["--rates", "1gbps"], "--rates"),
    (["--rates", ","], "--rates"),
    (["--models", "resnet50"], "--models"),
    (["--models", ""], "--models"),
    (["--steps", "0"], "--steps"),
    (["--warmup", "0"], "--warmup"),
    (["--world", "1"], "--world"),
    (["--batch", "0"], "--batch"),
    (["--image", "4"], "--image"),
    (["--delay-us", "-5"], "--delay-us"),
    (["--modes", ";;"], "--modes"),
    (["--json", "/nonexistent-dir-nf/x.json"], "--json"),
    (["--steps", "five"], "--steps"),
])
def test_usage_errors_exit_2_naming_the_flag(sl, capsys, argv: Sequence[str], flag: str) -> None:
    with pytest.raises(SystemExit) as e:
        sl.parse_args(argv)
    assert e.value.code == 2
    assert flag in capsys.readouterr().err


def test_sent_bytes_ring(sl) -> None:
    # W=4: a ring all-reduce sends 3 reduce-scatter and 3 all-gather chunks
    # of 1/4 each = 1.5x the buffer; a ring all-gather sends 3 chunks.
    assert sl.sent_bytes(400.0, 0.0, 4) == 600.0
    assert sl.sent_bytes(0.0, 100.0, 4) == 300.0
    assert sl.sent_bytes(400.0, 100.0, 2) == 400.0 + 100.0


def test_wire_seconds_counts_whole_frames(sl) -> None:
    # 1448 payload bytes fill one 1514-byte frame; 1449 need two.
    assert sl.wire_seconds(1448, 1e9) == pytest.approx(1514 * 8 / 1e9)
    assert sl.wire_seconds(1449, 1e9) == pytest.approx(2 * 1514 * 8 / 1e9)
    assert sl.wire_seconds(0, 1e9) == 0.0


def test_bound_of_allreduce_at_1gbit(sl) -> None:
    # ResNet-18 (CIFAR) FP32: 11,173,962 x 4 B all-reduced by 4 ranks:
    # each sends 67,043,772 B = 46,301 frames of 1448 B (ceil), 1514 B on
    # the wire each: 0.5608 s at 1 Gb/s, plus the noop step.
    row = {"fp32_wire_bytes_per_step": 4 * 11173962.0, "lowbit_wire_bytes_per_step": 0.0}
    frames = -(-67043772 // 1448)
    assert frames == 46301
    assert sl.bound_seconds(0.1, row, 4, 1e9) == pytest.approx(0.1 + frames * 1514 * 8 / 1e9)
    assert sl.bound_seconds(0.1, row, 4, 1e9) == pytest.approx(0.6608, abs=1e-4)


def test_bound_of_noop_is_noop(sl) -> None:
    row = {"fp32_wire_bytes_per_step": 0.0, "lowbit_wire_bytes_per_step": 0.0}
    assert sl.bound_seconds(0.25, row, 4, 1e9) == 0.25


def test_table_prints_bound_and_speedup(sl) -> None:
    def row(mode: str, st: float, fp: float, low: float):
        return {"mode": mode, "step_s_median": st, "parameters": 1000, "fp32_wire_bytes_per_step": fp,
                "lowbit_wire_bytes_per_step": low}
    res = {"modes": [row("noop", 0.1, 0, 0), row("allreduce_hook", 0.9, 4e6, 0), row("g-binary", 0.3, 0, 125000)],
           "allreduce_s": {"wall_s": 0.5, "cpu_s": 0.1}, "image": 32}
    lines = sl.table("cifar", "1gbit", 20.0, res, 4)
    gb = next(ln for ln in lines if ln.strip().startswith("g-binary")).split()
    # step, bound (0.1 + ceil(375000/1448) frames), allreduce/step 3.00, step - noop
    assert gb[1] == "0.300"
    assert float(gb[2]) == pytest.approx(0.1 + 259 * 1514 * 8 / 1e9, abs=5e-4)
    assert gb[3] == "3.00"
    assert gb[4] == "0.200"


def test_fsdp_rows_bound_and_baseline(sl) -> None:
    """FSDP2 rows: (W-1)/W of twice the parameters all-gathered, of the
    dense gradient reduce-scattered and of the planes exchanged; the
    speedup is against FSDP2's own reduce-scatter ("fsdp:own")."""
    def row(mode: str, st: float, fp: float, low: float):
        return {"mode": mode, "step_s_median": st, "parameters": 1000, "fp32_wire_bytes_per_step": fp,
                "lowbit_wire_bytes_per_step": low, "fsdp": True, "gathered_param_bytes_per_step": 8e6}
    own, gb = row("fsdp:own", 1.2, 4e6, 0), row("fsdp:g-binary", 0.6, 0, 125000)
    assert sl.row_sent_bytes(own, 4) == 0.75 * 12e6 and sl.row_sent_bytes(gb, 4) == 0.75 * (8e6 + 125000)
    res = {"modes": [{"mode": "noop", "step_s_median": 0.1, "parameters": 1000, "fp32_wire_bytes_per_step": 0,
                      "lowbit_wire_bytes_per_step": 0}, own, gb], "allreduce_s": {"wall_s": 0.5, "cpu_s": 0.1},
           "image": 32}
    line = next(ln for ln in sl.table("cifar", "1gbit", 20.0, res, 4) if ln.strip().startswith("fsdp:g-binary")).split()
    frames = -(-int(0.75 * (8e6 + 125000)) // 1448)
    assert float(line[2]) == pytest.approx(0.1 + frames * 1514 * 8 / 1e9, abs=5e-4)
    assert line[3] == "2.00"


def resnet18_params(classes: int, stem: str) -> int:
    """ResNet-18's parameter count from its architecture, layer by layer."""
    k = 3 if stem == "cifar" else 7
    n = 3 * 64 * k * k + 2 * 64  # stem conv (no bias) and its BatchNorm
    cin = 64
    for i, cout in enumerate((64, 128, 256, 512)):
        for j in range(2):
            c = cin if j == 0 else cout
            n += c * cout * 9 + 2 * cout + cout * cout * 9 + 2 * cout
            if j == 0 and (i > 0):  # stride-2 entry with a channel change: 1x1 projection
                n += c * cout + 2 * cout
        cin = cout
    return n + 512 * classes + classes


@pytest.mark.parametrize("stem", ["cifar", "imagenet"])
def test_resnet18_parameter_counts(models, stem: str) -> None:
    m = models.resnet18(10, stem)
    got = sum(p.numel() for p in m.parameters())
    assert got == resnet18_params(10, stem)
    assert got == {"cifar": 11173962, "imagenet": 11181642}[stem]  # what the benchmark's docstring states


def test_imagenet_stem_is_torchvisions_resnet18(models) -> None:
    # torchvision documents resnet18 (1000 classes) at 11,689,512 parameters.
    assert sum(p.numel() for p in models.resnet18(1000, "imagenet").parameters()) == 11689512


def test_imagenet_stem_runs_batch_1_at_64_pixels(models) -> None:
    import torch
    torch.manual_seed(0)
    m = models.resnet18(10, "imagenet")
    y = m(torch.randn(1, 3, 64, 64))
    y.sum().backward()
    assert y.shape == (1, 10)
    assert all(p.grad is not None for p in m.parameters())


def test_unknown_stem_is_refused(models) -> None:
    with pytest.raises(ValueError, match="stem 'vgg'"):
        models.ResNet(stem="vgg")


def test_burst_is_2ms_of_the_rate_and_at_least_256k(sl) -> None:
    assert sl.burst_bytes(1e9) == 256 * 1024        # 2 ms at 1 Gb/s is 250,000 B
    assert sl.burst_bytes(1e10) == 2_500_000       # 2 ms at 10 Gb/s
    assert sl.burst_bytes(1e6) == 256 * 1024
