"""What the DDP hook and the virtual workers share: the checked setup
(groups, policy, layout limit, controller) and the per-step mode state."""

from __future__ import annotations

import numbers
import warnings
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from .. import fixed
from ..lowbit import Format, Layout
from ..policy import Policy, RuleSpec
from .control import StepContext, as_controller, resolve_modes
from .groups import Assignment, assign_groups
from .record import Recorder, StepsArg, wrap_optimizer
from .stats import RecoveryEvent, Stats

PolicyArg = Union[str, Policy]
GroupsArg = Optional[Mapping[str, Sequence[str]]]

def resolve_control(backend: str, control: object, serve: Optional[str]) -> object:
    """Checks the backend and turns a control address into a ServeControl,
    before training starts."""
    if backend not in ("collective", "controller"):
        raise ValueError(f"unknown backend {backend!r} (want 'collective' or 'controller')")
    if backend == "controller" and not serve:
        raise ValueError("backend='controller' needs serve='ADDRESS' of a running `nfabric serve` "
                         "(a Unix socket path, unix:///path, or host:port)")
    if isinstance(control, str):
        from .serve import ServeControl
        return ServeControl(control)
    return control


class ModeState:
    """The groups, their policy and each step's modes, with the statistics."""

    def __init__(self, model: torch.nn.Module, policy: PolicyArg, groups: GroupsArg, control: object,
                 workers: int, backend: str = "collective", serve: Optional[str] = None):
        # Checked first: a fraction (2.5) used to pass and fail only at the
        # first step, when the batch was split.
        if isinstance(workers, bool) or not isinstance(workers, numbers.Integral):
            raise ValueError(f"workers {workers!r}: want a whole number")
        workers = int(workers)
        control = resolve_control(backend, control, serve)
        self.backend = backend
        self.control_object = control
        self.policy = Policy.parse(policy) if isinstance(policy, str) else policy
        if not isinstance(self.policy, Policy):
            raise TypeError(f"policy must be a policy string or nfabric.policy.Policy, not {type(policy).__name__}")
        self.policy.validate_rates()
        self.assignment: Assignment = assign_groups(model, groups)
        self.groups: List[str] = self.assignment.groups
        self.policy.check_groups(self.groups)
        self.controller = as_controller(control)
        self.workers = workers
        layout = Layout(self.policy.layout)
        may_low = self.controller is not None or any(self.policy.spec(g).low_bit() for g in self.groups)
        if may_low and workers > layout.max_workers():
            other = Layout.WORKER_MAJOR
            advice = (f"use layout='{other}' (up to {other.max_workers()}) or fewer workers"
                      if other.max_workers() > layout.max_workers() else
                      f"no payload layout carries more; run at most {layout.max_workers()} workers, or keep every "
                      "group on fp32 with no controller")
            raise ValueError(f"{workers} workers is more than the {layout} layout carries ({layout.max_workers()}); "
                             + advice)
        if workers < 1:
            raise ValueError(f"workers {workers} < 1")
        summed = [str(self.policy.spec(g).rule) for g in self.groups if self.policy.spec(g).rule.sum()]
        summed += [str(Format(f)) for f in getattr(control, "diag_formats", ()) or () if Format(f).sum()]
        for f in sorted(set(summed)):
            fixed.check_sum_workers(f, workers)
        self.layout = layout
        self.stats = Stats()
        self.current_step = 0
        self.modes: Dict[str, Format] = self.policy.modes(self.groups)
        self.loss: Optional[float] = None
        self.optimizer: Optional[torch.optim.Optimizer] = None
        self.velocity_resets = 0
        self.recorder: Optional[Recorder] = None
        self.record_diag = False

    def start_recording(self, model: torch.nn.Module, record: object, record_steps: StepsArg,
                        record_diagnostics: bool, write: bool) -> None:
        """Opt-in recording of chosen steps as a bucket trace (record.py)."""
        if record is None:
            return
        if isinstance(record, Recorder):
            self.recorder = record
        else:
            self.recorder = Recorder(record, record_steps, model=type(model).__name__, workers=self.workers,
                                     policy=str(self.policy), write=write)
        self.record_diag = bool(record_diagnostics)

    def recording(self) -> bool:
        """Whether the current step is being recorded."""
        r = self.recorder
        return r is not None and r.cur is not None and r.cur_step == self.current_step

    def attach_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Lets a mode switch reset the momentum of the switched group, and
        a recording time the optimizer's step."""
        self.optimizer = optimizer
        if self.recorder is not None:
            self.recorder.expect_optimizer = True
            wrap_optimizer(optimizer, self.recorder, lambda: self.recorder is not None and self.recorder.wants(self.current_step - 1))

    def diag_now(self) -> bool:
        """Whether this step measures the cosine diagnostics of its FP32
        groups (a controller with diag_every = N asks every N steps)."""
        every = int(getattr(self.control_object, "diag_every", 0) or 0)
        if self.record_diag and self.recorder is not None and self.recorder.wants(self.current_step):
            return True
        return every > 0 and self.current_step % every == 0

    def control_formats(self) -> Tuple[Format, ...]:
        """The summed formats (INT8, BFP8) the controller's ladder has rungs
        for (its ``diag_formats``; none when it has no such attribute): their
        cosines are measured and sent with G-Binary's and G-Ternary's."""
        fs = getattr(self.control_object, "diag_formats", ()) or ()
        return tuple(f for f in fs if Format(f).sum())

    def diag_formats(self) -> Tuple[Format, ...]:
        """The summed formats this step's diagnostics measure: the
        controller's, and every one on a recorded diagnostics step (the
        trace carries them all for the what-if planner's ladders)."""
        fs = set(self.control_formats())
        if self.record_diag and self.recorder is not None and self.recorder.wants(self.current_step):
            fs.update(f for f in Format if f.sum())
        return tuple(f for f in Format if f in fs)

    def send_diag(self, cos: Dict[str, Dict[Format, float]]) -> None:
        """Records a step's cosines (Cosines.take) and sends each group's to
        the controller: G-Binary's and G-Ternary's, and in ``cosines`` those
        of the summed formats its ladder names (a controller without such
        rungs is called with the paper's two only)."""
        if self.recorder is not None and self.recorder.wants(self.current_step):
            self.recorder.diagnostics(cos)
        fn = getattr(self.control_object, "diag", None)
        if fn is None:
            return
        ask = self.control_formats()
        for g, fc in cos.items():
            extra = {f: c for f, c in fc.items() if f in ask}
            try:
                if extra:
                    fn(self.current_step, g, fc[Format.BINARY], fc[Format.TERNARY], cosines=extra)
                else:
                    fn(self.current_step, g, fc[Format.BINARY], fc[Format.TERNARY])
            except Exception as e:  # noqa: BLE001
                warnings.warn(f"nfabric: step {self.current_step}: sending diagnostics failed ({e})",
                              RuntimeWarning, stacklevel=2)
                return

    def bind_control(self) -> None:
        """Opens a remote controller's session (rank 0 only)."""
        bind = getattr(self.control_object, "bind", None)
        if bind is not None:
            bind({g: self.assignment.elements(g) for g in self.groups})

    def report_nonfinite(self, groups: Sequence[str]) -> None:
        """Tells a controller that can hear it (rank 0) that these groups
        met a NaN/Inf this step; its failure only warns."""
        fn = getattr(self.control_object, "non_finite", None)
        if fn is None:
            return
        for g in groups:
            try:
                fn(self.current_step, g)
            except Exception as e:  # noqa: BLE001
                warnings.warn(f"nfabric: step {self.current_step}: reporting NaN/Inf to the controller failed ({e})",
                              RuntimeWarning, stacklevel=2)

    def rule(self, group: str) -> RuleSpec:
        """The group's spec under this step's mode."""
        return self.policy.spec(group).with_rule(self.modes[group])

    def scale(self, group: str) -> float:
        return self.policy.scale(group, self.modes[group])

    def ask(self) -> Dict[str, Format]:
        """The controller's modes for this step; FP32 everywhere, with a
        warning and an event, when it fails."""
        pm = self.policy.modes(self.groups)
        if self.controller is None:
            return pm
        try:
            modes = resolve_modes(self.controller(StepContext(self.current_step, pm, self.loss, self.stats)), self.groups)
            for f in set(modes.values()):
                if f.sum():
                    fixed.check_sum_workers(str(f), self.workers)
            return modes
        except Exception as e:  # noqa: BLE001 - any controller failure must fall back, visibly
            warnings.warn(f"nfabric: step {self.current_step}: the controller failed ({e}); running every group on FP32 "
                          "this step", RuntimeWarning, stacklevel=2)
            self.stats.event(RecoveryEvent(self.current_step, "control-lost", tuple(self.groups)))
            return {g: Format.FP32 for g in self.groups}

    def apply(self, modes: Dict[str, Format]) -> None:
        """Adopts the step's modes: records control returns to FP32 and resets
        the momentum of groups whose rule changed (an attached optimizer)."""
        changed = [g for g in self.groups if modes[g] != self.modes[g]]
        back = tuple(g for g in changed if modes[g] == Format.FP32)
        lost = bool(self.stats.events) and self.stats.events[-1].step == self.current_step and \
            self.stats.events[-1].reason == "control-lost"
        if back and self.current_step > 0 and not lost:
            self.stats.event(RecoveryEvent(self.current_step, "control", back))
        if changed and self.current_step > 0 and self.optimizer is not None:
            self._reset_velocity(changed)
        self.modes = modes

    def _reset_velocity(self, groups: List[str]) -> None:
        # A sign vote (|u| = 1 at the sign rate) and an FP32 mean differ by
        # orders of magnitude; carrying momentum across a switch turns the
        # last steps of one into a huge step of the other (the Go pilots
        # reset it too).
        assert self.optimizer is not None
        for g in groups:
            for p in self.assignment.members(g):
                st = self.optimizer.state.get(p.param)
                if st and "momentum_buffer" in st:
                    del st["momentum_buffer"]
                    self.velocity_resets += 1
