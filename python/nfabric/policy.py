"""Aggregation policies: which rule each layer group's gradients go through.

The vocabulary and syntax are those of the Go trainer (``go doc ./train
ParseRuleSpec``): a rule spec is ``rule[+ef][/gate][@lr]`` with rule one of
fp32, g-binary, g-ternary, int8 and bfp8, e.g. ``g-binary``, ``g-ternary/margin:2``,
``g-ternary/worker:0.5``, ``g-binary+ef@0.001``; a policy is one spec for
every group or ``group=spec`` entries naming each group once
(``backbone=g-ternary,head=fp32``). Error feedback, the margin gate and
the worker gate are extensions beyond the paper, as in Go.

Learning rates follow the Go trainer: FP32, INT8 and BFP8 groups (whose
update is the mean or its 8-bit approximation) train at ``lr``, G-Binary and
G-Ternary groups (whose update is a vote in {-1, 0, +1}) at ``sign_lr``, unless the
spec carries its own ``@lr``. A torch optimizer has one learning rate per
parameter group, so the hook and the virtual workers hand it
``(group_lr / lr) * u``: an optimizer at ``lr`` then steps by
``group_lr * u``, exactly Go's ``w -= lr_group * v`` when weight decay is 0
(with weight decay, torch applies it at ``lr``, Go at the group's rate).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Dict, Iterable, Mapping, Optional, Union

from .formats import Format, Gate, GateKind, Layout, PAPER_GATE, parse_format, parse_gate, parse_layout

__all__ = ["RuleSpec", "Policy", "parse_rule_spec", "TABLE6", "AUTO"]

AUTO = "auto"
"""``Policy(sign_lr=AUTO)``: each vote group's rate is measured from the
FP32 warm-up (nfabric.torch.auto documents the rule)."""


@dataclasses.dataclass(frozen=True)
class RuleSpec:
    """The aggregation of one layer group.

    ``gate_tau`` is the worker gate's relative threshold (extension): a
    worker sets the gate bit of an element of a parameter tensor when
    |p| > gate_tau * mean |p| over that tensor; 0 means 1. ``ef`` is error
    feedback (extension, EF-SignSGD style): each worker keeps a residual e,
    sends the sign of p = g + e and keeps e <- p - s (2b - 1), s = mean |p|
    over the parameter tensor. ``lr`` overrides the policy's default rate.
    """

    rule: Format = Format.FP32
    gate: Gate = PAPER_GATE
    gate_tau: float = 0.0
    ef: bool = False
    lr: Optional[float] = None

    def low_bit(self) -> bool:
        return self.rule != Format.FP32

    def sign(self) -> bool:
        """Whether the update is a sign vote in {-1, 0, +1} (G-Binary,
        G-Ternary), which trains at sign_lr; FP32, INT8 and BFP8 apply the
        (approximate) mean at lr."""
        return self.rule.vote()

    def extension(self) -> bool:
        return self.ef or (self.rule == Format.TERNARY and self.gate.extension()) or self.rule.sum()

    def validate(self) -> None:
        if self.rule == Format.TERNARY:
            self.gate.validate()
        elif self.gate != PAPER_GATE:
            raise ValueError(f"{self.rule}: a gate applies to g-ternary only")
        if self.gate_tau != 0 and (self.rule != Format.TERNARY or self.gate.kind != GateKind.WORKER):
            raise ValueError(f"{self.rule}: a gate threshold applies to the worker gate only")
        if not math.isfinite(self.gate_tau) or self.gate_tau < 0:
            raise ValueError(f"worker gate threshold {self.gate_tau} must be finite and >= 0")
        if self.ef and not self.rule.vote():
            raise ValueError(f"{self.rule}: error feedback applies to g-binary and g-ternary only")
        if self.lr is not None and (not math.isfinite(self.lr) or self.lr <= 0):
            raise ValueError(f"learning rate {self.lr} must be a positive number")

    def with_rule(self, rule: Format) -> "RuleSpec":
        """The spec under another rule (what a control decision does): the
        gate survives only for g-ternary, error feedback only for low-bit."""
        gate = self.gate if rule == Format.TERNARY else PAPER_GATE
        tau = self.gate_tau if rule == Format.TERNARY else 0.0
        return dataclasses.replace(self, rule=rule, gate=gate, gate_tau=tau, ef=self.ef and rule.vote())

    def __str__(self) -> str:
        s = str(self.rule) + ("+ef" if self.ef else "")
        if self.rule == Format.TERNARY and self.gate != PAPER_GATE:
            s += "/" + (f"worker:{self.gate_tau:g}" if self.gate.kind == GateKind.WORKER and self.gate_tau
                        else str(self.gate))
        if self.lr is not None:
            s += f"@{self.lr:g}"
        return s


def parse_rule_spec(s: str) -> RuleSpec:
    """Reads rule[+ef][/gate][@lr] (Go's train.ParseRuleSpec, for the rules a
    DDP hook runs: fp32, g-binary, g-ternary, and the extensions int8 and
    bfp8)."""
    if not isinstance(s, str):
        raise TypeError(f"rule spec {s!r}: want a string such as 'g-binary' or 'g-ternary+ef@0.001', "
                        f"not {type(s).__name__}")
    rest = s.strip()
    lr = None
    if "@" in rest:
        rest, _, lrs = rest.rpartition("@")
        try:
            lr = float(lrs)
        except ValueError:
            lr = -1.0
        if not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"rule {s!r}: learning rate {lrs!r} is not a positive number")
    gate_s = None
    if "/" in rest:
        rest, _, gate_s = rest.partition("/")
        gate_s = gate_s.strip()
    rest = rest.strip()
    ef = rest.lower().endswith("+ef")
    if ef:
        rest = rest[:-3]
    if rest.strip().lower() in ("majority-sign", "majority", "majoritysign", "majoritysignsgd", "sign-of-mean", "signofmean"):
        raise ValueError(f"rule {s!r}: {rest.strip()} is a software baseline of the Go trainer, not an aggregation "
                         "this hook runs (majority-sign is g-binary's math; use g-binary)")
    try:
        rule = parse_format(rest)
    except ValueError as e:
        raise ValueError(f"rule {s!r}: {e}") from None
    spec = RuleSpec(rule=rule, ef=ef, lr=lr)
    if gate_s is not None:
        if rule != Format.TERNARY:
            raise ValueError(f"rule {s!r}: a gate applies to g-ternary only")
        lg = gate_s.lower()
        if lg == "worker" or lg.startswith("worker:"):
            tau = 0.0
            if lg.startswith("worker:"):
                try:
                    tau = float(lg[7:])
                except ValueError:
                    tau = -1.0
                if not math.isfinite(tau) or tau <= 0:
                    raise ValueError(f"rule {s!r}: worker gate threshold {lg[7:]!r} is not a positive number")
            spec = dataclasses.replace(spec, gate=Gate(GateKind.WORKER), gate_tau=tau)
        else:
            try:
                spec = dataclasses.replace(spec, gate=parse_gate(gate_s))
            except ValueError as e:
                raise ValueError(f"rule {s!r}: {e}") from None
    try:
        spec.validate()
    except ValueError as e:
        raise ValueError(f"rule {s!r}: {e}") from None
    return spec


@dataclasses.dataclass
class Policy:
    """A rule per layer group plus the learning rates and payload layout.

    ``rules`` maps group names to specs; the key ``"*"`` is the spec of every
    group not named (what a one-spec policy string gives). ``layout`` is the
    payload layout: worker-major (any W up to 1024) or the paper's
    element-major packet (W <= 8); both give identical updates.
    """

    rules: Dict[str, RuleSpec]
    lr: float = 0.05
    sign_lr: Union[float, str] = 1e-4
    layout: Layout = Layout.WORKER_MAJOR

    @classmethod
    def parse(cls, s: str, lr: float = 0.05, sign_lr: Union[float, str] = 1e-4, layout: str = "worker-major") -> "Policy":
        """Reads one spec for every group ("g-binary") or group=spec entries
        ("backbone=g-ternary,head=fp32")."""
        if not isinstance(s, str):
            raise TypeError(f"policy {s!r}: want a string such as 'g-binary' or 'backbone=g-binary,head=fp32', "
                            f"not {type(s).__name__}")
        s = s.strip()
        if not s:
            raise ValueError("empty policy")
        rules: Dict[str, RuleSpec] = {}
        if "=" not in s:
            rules["*"] = parse_rule_spec(s)
        else:
            for part in s.split(","):
                name, eq, val = part.partition("=")
                name = name.strip()
                if not eq or not name:
                    raise ValueError(f"policy {s!r}: entry {part!r} is not group=rule")
                if name in rules:
                    raise ValueError(f"policy {s!r}: group {name!r} given twice")
                try:
                    rules[name] = parse_rule_spec(val)
                except ValueError as e:
                    raise ValueError(f"policy {s!r}: {name}: {e}") from None
        p = cls(rules, lr, sign_lr, parse_layout(layout))
        p.validate_rates()
        return p

    def auto_sign_lr(self) -> bool:
        """Whether sign_lr is "auto": set per group from the FP32 warm-up by
        the hook or the virtual workers (nfabric.torch.auto)."""
        return isinstance(self.sign_lr, str) and self.sign_lr == AUTO

    def validate_rates(self) -> None:
        if isinstance(self.sign_lr, str) and self.sign_lr != AUTO:
            raise ValueError(f"policy sign_lr {self.sign_lr!r}: want a positive number or {AUTO!r}")
        for name, v in (("lr", self.lr), ("sign_lr", self.sign_lr)):
            if name == "sign_lr" and self.auto_sign_lr():
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"policy {name} {v!r} must be a positive number")

    def check_groups(self, groups: Iterable[str]) -> None:
        """Every group must have a rule and every named rule a group: a typo
        never silently trains a group on some default."""
        groups = list(groups)
        unknown = [g for g in self.rules if g != "*" and g not in groups]
        if unknown:
            raise ValueError(f"policy names unknown group(s) {unknown}; the model's groups are {groups}")
        if "*" not in self.rules:
            missing = [g for g in groups if g not in self.rules]
            if missing:
                raise ValueError(f"policy has no rule for group(s) {missing} (groups: {groups})")
        for g in groups:
            self.spec(g).validate()

    def spec(self, group: str) -> RuleSpec:
        return self.rules.get(group) or self.rules["*"]

    def group_lr(self, group: str, rule: Optional[Format] = None) -> float:
        """The learning rate of group under rule (default: its policy rule),
        as Go's train.Config.RuleLR."""
        s = self.spec(group)
        r = s.rule if rule is None else rule
        if s.lr is not None:
            return s.lr
        if not r.vote():
            return self.lr
        if self.auto_sign_lr():
            raise ValueError(f"group {group}: sign_lr='auto' is set from the FP32 warm-up by the hook or the virtual "
                             "workers (their scale()), not by the policy alone")
        return float(self.sign_lr)

    def scale(self, group: str, rule: Optional[Format] = None) -> float:
        """The factor the update of a group is handed to an optimizer at lr
        with: group_lr / lr (1 for FP32 groups without their own rate)."""
        return self.group_lr(group, rule) / self.lr

    def modes(self, groups: Iterable[str]) -> Dict[str, Format]:
        return {g: self.spec(g).rule for g in groups}

    def __str__(self) -> str:
        if list(self.rules) == ["*"]:
            return str(self.rules["*"])
        return ",".join(f"{g}={s}" for g, s in self.rules.items())


TABLE6: Mapping[str, str] = {
    "FP32 all": "fp32",
    "G-Binary all": "g-binary",
    "G-Ternary all": "g-ternary",
    "G-Binary backbone + FP32 head": "backbone=g-binary,head=fp32",
    "G-Ternary backbone + FP32 head": "backbone=g-ternary,head=fp32",
    "FP32 backbone + G-Binary head": "backbone=fp32,head=g-binary",
    "FP32 backbone + G-Ternary head": "backbone=fp32,head=g-ternary",
}
"""The seven policies of the paper's Table 6, by the paper's labels."""
