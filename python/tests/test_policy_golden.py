"""The policy grammar's golden cases (train/testdata/policy_cases.json),
shared with Go's train/policy_golden_test.go: nfabric.policy must parse
every case as the file says, group by group, and refuse every error case;
the file's go_only inputs are the documented differences (Python refuses
them)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from nfabric.lowbit import Format, GateKind
from nfabric.policy import Policy

CASES = REPO / "train" / "testdata" / "policy_cases.json"
GROUPS = ["backbone", "head"]


def golden():
    if not CASES.exists():
        pytest.skip(f"skipped: no {CASES} (run the tests from a checkout)")
    return json.loads(CASES.read_text())


def parse(s: str) -> Policy:
    p = Policy.parse(s)
    p.check_groups(GROUPS)
    return p


def normalized(p: Policy, group: str) -> dict:
    s = p.spec(group)
    gate = ""
    if s.rule == Format.TERNARY:
        gate = "worker" if s.gate.kind == GateKind.WORKER else str(s.gate)
    return {"rule": str(s.rule), "ef": s.ef, "gate": gate, "gate_tau": s.gate_tau, "lr": s.lr or 0.0}


def test_golden_cases():
    g = golden()
    assert len(g["cases"]) >= 40
    for c in g["cases"]:
        if c.get("error"):
            with pytest.raises(ValueError):
                parse(c["in"])
            continue
        p = parse(c["in"])
        for group in GROUPS:
            want = {"rule": "", "ef": False, "gate": "", "gate_tau": 0.0, "lr": 0.0, **c["groups"][group]}
            assert normalized(p, group) == want, f"{c['in']!r} {group}"


def test_go_only_cases_are_refused():
    for c in golden()["go_only"]:
        with pytest.raises(ValueError):
            parse(c["in"])


def test_summed_formats_train_at_lr():
    """INT8 and BFP8 apply the (approximate) mean: the FP32 rate, as Go's
    Config.RuleLR; G-Binary the sign rate."""
    p = Policy.parse("backbone=g-binary,head=int8", lr=0.05, sign_lr=1e-4)
    assert p.group_lr("head") == 0.05 and p.group_lr("backbone") == 1e-4
    assert p.spec("head").extension() and not p.spec("head").sign()
    assert Policy.parse("bfp8@0.2").group_lr("head") == 0.2
