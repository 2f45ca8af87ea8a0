"""Mode control: what each layer group runs at each step.

A controller is asked once per step, before the step's first gradient
bucket, on rank 0 only; the hook broadcasts its answer to every rank, so
all ranks always run the same modes. Anything with a ``decide(ctx)``
method (or a plain callable taking the context) is a controller. These
local controllers cover the fixed policies and the paper's calibration
pattern; the Go control plane over ``nfabric serve`` is the remote one.

A controller that raises (a lost control service, say) makes that step run
every group on FP32, with a warning and a ``control-lost`` recovery event:
never a silent low-bit step.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..lowbit import Format, parse_format
from .stats import Stats

__all__ = ["StepContext", "Static", "Warmup", "Schedule", "resolve_modes"]


@dataclasses.dataclass
class StepContext:
    """What a controller sees: the step about to run (0-based), the modes the
    policy gives each group, the loss the training loop last reported
    (``Fabric.observe``), and the statistics so far."""

    step: int
    policy_modes: Dict[str, Format]
    loss: Optional[float]
    stats: Stats


ModeMap = Mapping[str, Union[str, Format]]


class Static:
    """The policy's modes at every step (what ``control=None`` means)."""

    def decide(self, ctx: StepContext) -> ModeMap:
        return ctx.policy_modes


class Warmup:
    """FP32 for the first ``steps`` steps (the calibration window), then the
    policy's modes: the paper's FP32-default admission without diagnostics."""

    def __init__(self, steps: int):
        # NaN compares false with everything, so 'steps < 0' let it through
        # as "no warm-up"; a fraction has no meaning as a step count.
        if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
            raise ValueError(f"warm-up steps {steps!r}: want a whole number >= 0")
        self.steps = int(steps)

    def decide(self, ctx: StepContext) -> ModeMap:
        if ctx.step < self.steps:
            return {g: Format.FP32 for g in ctx.policy_modes}
        return ctx.policy_modes


class Schedule:
    """Modes from a fixed schedule: ``[(from_step, {group: mode}), ...]``;
    groups a phase does not name keep the policy's mode."""

    def __init__(self, phases: Sequence[Tuple[int, ModeMap]]):
        self.phases = sorted(((int(s), dict(m)) for s, m in phases), key=lambda x: x[0])

    def decide(self, ctx: StepContext) -> ModeMap:
        out: Dict[str, Union[str, Format]] = dict(ctx.policy_modes)
        for start, m in self.phases:
            if ctx.step >= start:
                out.update(m)
        return out


def resolve_modes(answer: ModeMap, groups: Sequence[str]) -> Dict[str, Format]:
    """Checks a controller's answer: every group, known modes only."""
    out: Dict[str, Format] = {}
    unknown = [g for g in answer if g not in groups]
    if unknown:
        raise ValueError(f"controller named unknown group(s) {unknown}; groups are {list(groups)}")
    for g in groups:
        if g not in answer:
            raise ValueError(f"controller gave no mode for group {g!r}")
        m = answer[g]
        out[g] = m if isinstance(m, Format) else parse_format(str(m))
    return out


def as_controller(control: object) -> Optional[Callable[[StepContext], ModeMap]]:
    """The decide function of a controller argument, or None for none."""
    if control is None:
        return None
    if hasattr(control, "decide"):
        return control.decide  # type: ignore[attr-defined]
    if callable(control):
        return control  # type: ignore[return-value]
    raise TypeError(f"control={control!r} is not a controller: give an object with decide(ctx), a callable, or None")


def mode_name(f: Format) -> str:
    """The proto Mode name of the mode a group running format f latches
    (Go's cxl.Aggregate): MODE_FP32_BYPASS for FP32, otherwise the format's
    name upper-cased (MODE_G_BINARY, MODE_G_TERNARY, MODE_INT8, MODE_BFP8).
    One rule over the format table, so a new format needs no entry here."""
    if f == Format.FP32:
        return "MODE_FP32_BYPASS"
    return "MODE_" + str(f).upper().replace("-", "_")


def format_of_mode(name: str) -> Format:
    """The format of a group whose latch holds the proto mode ``name``
    (mode_name's inverse); a mode no format runs is an error, never a
    silent FP32."""
    for f in Format:
        if mode_name(f) == name:
            return f
    raise ValueError(f"mode {name!r} carries no gradient format")


def format_code(f: Format) -> int:
    return int(f)


def codes_to_modes(codes: List[int], groups: Sequence[str]) -> Dict[str, Format]:
    return {g: Format(c) for g, c in zip(groups, codes)}
