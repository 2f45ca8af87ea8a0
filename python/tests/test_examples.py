"""The examples run end to end on synthetic data with a small random-init
ResNet (the full configurations need the user's CIFAR data and a GPU)."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torch"


@pytest.fixture
def cifar():
    if not (EXAMPLES / "cifar_resnet18.py").is_file():
        pytest.skip(f"skipped: no examples at {EXAMPLES} (run from a checkout)")
    sys.path.insert(0, str(EXAMPLES))
    import cifar_resnet18
    yield cifar_resnet18
    sys.path.remove(str(EXAMPLES))


def test_table6_seven_policies_on_synthetic_data(cifar, tmp_path, capsys):
    out = tmp_path / "t6.json"
    assert cifar.main(["--synthetic", "64", "--image", "8", "--width", "4", "--blocks", "1,1", "--epochs", "1",
                       "--batch", "16", "--workers", "4", "--data", "cifar100", "--json", str(out)]) == 0
    rows = {r["policy"]: r for r in json.loads(out.read_text())["results"]}
    assert list(rows) == list(cifar.PAPER_TABLE6)
    n, head = rows["FP32 all"]["parameters"], rows["FP32 all"]["head_parameters"]
    assert rows["FP32 all"]["traffic_vs_fp32"] == 1.0 and rows["FP32 all"]["low_bit_step_fraction"] == 0.0
    # Measured: one bit per low-bit element plus at most a byte of padding per group and step.
    for label, low in [("G-Binary all", n), ("G-Binary backbone + FP32 head", n - head),
                       ("FP32 backbone + G-Binary head", head)]:
        fp32 = n - low
        want = (low / 32 + fp32) / n
        assert want <= rows[label]["traffic_vs_fp32"] <= want + 2 / (4 * n), label
        assert rows[label]["low_bit_step_fraction"] == 1.0
    assert rows["G-Ternary all"]["traffic_paper_accounting"] == pytest.approx(1.58 / 32)
    assert "paper acc %" in capsys.readouterr().out


def test_sst2_script_on_a_synthetic_encoder(tmp_path, capsys):
    if not (EXAMPLES / "sst2_distilbert.py").is_file():
        pytest.skip(f"skipped: no examples at {EXAMPLES}")
    sys.path.insert(0, str(EXAMPLES))
    try:
        import sst2_distilbert
    finally:
        sys.path.remove(str(EXAMPLES))
    out = tmp_path / "sst2.json"
    assert sst2_distilbert.main(["--synthetic", "64", "--epochs", "1", "--batch", "16", "--workers", "4",
                                 "--policy", "backbone=g-binary,head=fp32", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["low_bit_step_fraction"] == 1.0 and 1 / 32 < r["traffic_vs_fp32"] < 1.0
    assert 0.0 <= r["dev_accuracy"] <= 100.0


def test_ddp_tutorial_trains_through_the_hook_and_resumes(tmp_path):
    """The acceptance check: pytorch/examples' DDP tutorial job (CPU,
    synthetic data, 2 gloo ranks) with nfabric's lines trains through the
    hook with no nfabric warning (UserWarnings are errors here, in the
    ranks too), and a job stopped after 2 epochs and restarted from its
    snapshot (model, optimizer, every rank's Fabric state) runs its last
    epoch exactly as the uninterrupted job did."""
    import os
    import subprocess
    script = EXAMPLES / "ddp_tutorial.py"
    if not script.is_file():
        pytest.skip(f"skipped: no {script} (run from a checkout)")

    def run(epochs: int, snap, out):
        r = subprocess.run([sys.executable, "-W", "error::UserWarning", str(script), str(epochs), "1", "--ranks", "2",
                            "--warmup", "10", "--snapshot", str(snap), "--json", str(out)],
                           capture_output=True, text=True, timeout=600, env=dict(os.environ))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        return json.loads(out.read_text())
    whole = run(3, tmp_path / "a.pt", tmp_path / "a.json")
    assert whole["stats"]["steps"] == 96 and whole["stats"]["low_bit_step_fraction"] > 0.85
    assert whole["final_loss"] < whole["losses"][0] and set(whole["auto_rates"]) == {"head"}
    run(2, tmp_path / "b.pt", tmp_path / "b1.json")
    resumed = run(3, tmp_path / "b.pt", tmp_path / "b2.json")
    assert resumed["losses"] == whole["losses"][-32:]
    assert resumed["stats"]["steps"] == 96 and resumed["auto_rates"] == whole["auto_rates"]
