"""What the DDP hook and the virtual workers share: the checked setup
(groups, policy, layout limit, controller) and the per-step mode state."""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from .. import fixed
from ..lowbit import Format, Layout
from ..policy import Policy, RuleSpec
from .auto import AutoRate
from .control import StepContext, Warmup, as_controller, resolve_modes
from .groups import Assignment, assign_groups
from .record import Recorder, StepsArg, wrap_optimizer
from .stats import RecoveryEvent, Stats

PolicyArg = Union[str, Policy]
GroupsArg = Optional[Mapping[str, Sequence[str]]]

def unwrap_optimizer(opt: Any) -> torch.optim.Optimizer:
    """The torch optimizer inside a framework's wrapper (Accelerate's
    AcceleratedOptimizer keeps it in .optimizer, Lightning's
    LightningOptimizer in ._optimizer)."""
    for _ in range(4):
        if isinstance(opt, torch.optim.Optimizer):
            return opt
        inner = getattr(opt, "optimizer", None) or getattr(opt, "_optimizer", None)
        if inner is None:
            break
        opt = inner
    if not hasattr(opt, "param_groups") or not hasattr(opt, "state"):
        raise TypeError(f"optimizer {type(opt).__name__} is not a torch.optim.Optimizer (nor a wrapper of one)")
    return opt


def model_name(model: torch.nn.Module) -> str:
    """The user's class name (FSDP2 swaps the class for FSDP<Name>)."""
    cls = type(model)
    if cls.__name__.startswith("FSDP"):
        for b in cls.__bases__:
            if b.__name__ == cls.__name__[4:]:
                return b.__name__
    return cls.__name__


def lowbit_format(s: str) -> Format:
    from ..lowbit import parse_format
    return parse_format(s)


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
    """The groups, their policy and each step's modes, with the statistics.

    Two phases: ``__init__`` checks what needs no model (policy, backend,
    controller); ``setup`` assigns the model's parameters to groups and
    checks the world size against the payload layout."""

    def __init__(self, policy: PolicyArg, groups: GroupsArg, control: object, backend: str = "collective",
                 serve: Optional[str] = None):
        control = resolve_control(backend, control, serve)
        self.backend = backend
        self.control_object = control
        self.policy = Policy.parse(policy) if isinstance(policy, str) else policy
        if not isinstance(self.policy, Policy):
            raise TypeError(f"policy must be a policy string or nfabric.policy.Policy, not {type(policy).__name__}")
        self.policy.validate_rates()
        self.groups_arg = groups
        self.controller = as_controller(control)
        self.stats = Stats()
        self.current_step = 0
        self.loss: Optional[float] = None
        self.optimizer: Optional[torch.optim.Optimizer] = None
        self.velocity_resets = 0
        self.recorder: Optional[Recorder] = None
        self.record_diag = False
        # sign_lr="auto": each vote group's measured rate, and the FP32
        # update statistics it is measured from (auto.py).
        self.auto = AutoRate(self.policy)
        # FSDP2: sums each rank's partial auto-rate measurements (None: every
        # rank measured the whole aggregate).
        self.auto_reduce: Optional[Callable[[torch.Tensor], None]] = None
        self.bound = False
        self.planned_steps: Optional[int] = None
        self._warned_no_low = False

    def setup(self, model: torch.nn.Module, workers: int) -> None:
        """Assigns model's parameters to groups and checks the world size."""
        # Checked first: a fraction (2.5) used to pass and fail only at the
        # first step, when the batch was split.
        if isinstance(workers, bool) or not isinstance(workers, numbers.Integral):
            raise ValueError(f"workers {workers!r}: want a whole number")
        workers = int(workers)
        self.assignment: Assignment = assign_groups(model, self.groups_arg)
        self.groups: List[str] = self.assignment.groups
        self.policy.check_groups(self.groups)
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
        summed += [str(Format(f)) for f in getattr(self.control_object, "diag_formats", ()) or () if Format(f).sum()]
        for f in sorted(set(summed)):
            fixed.check_sum_workers(f, workers)
        self.layout = layout
        self.modes: Dict[str, Format] = self.policy.modes(self.groups)
        self.auto.setup(self.groups)
        self.bound = True

    def start_recording(self, model: torch.nn.Module, record: object, record_steps: StepsArg,
                        record_diagnostics: bool, write: bool) -> None:
        """Opt-in recording of chosen steps as a bucket trace (record.py)."""
        if record is None:
            return
        if isinstance(record, Recorder):
            self.recorder = record
        else:
            es = self.assignment.params[0].param.element_size()
            self.recorder = Recorder(record, record_steps, model=model_name(model), workers=self.workers,
                                     policy=str(self.policy), bytes_per_element=es, write=write)
        self.record_diag = bool(record_diagnostics)

    def recording(self) -> bool:
        """Whether the current step is being recorded."""
        r = self.recorder
        return r is not None and r.cur is not None and r.cur_step == self.current_step

    def attach_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Lets a mode switch reset the momentum of the switched group, and
        a recording time the optimizer's step. Warns when a parameter group
        of the optimizer runs at another learning rate than policy.lr (the
        low-bit update is handed over as (group_lr / policy.lr) * u, so the
        optimizer must run at policy.lr for the group to step by group_lr).
        Framework wrappers (Accelerate's AcceleratedOptimizer, Lightning's
        LightningOptimizer) are unwrapped to the torch optimizer."""
        optimizer = unwrap_optimizer(optimizer)
        self.optimizer = optimizer
        for i, pg in enumerate(optimizer.param_groups):
            lr = pg.get("lr")
            if isinstance(lr, torch.Tensor):
                lr = float(lr)
            if isinstance(lr, (int, float)) and lr != self.policy.lr:
                warnings.warn(f"nfabric: optimizer parameter group {i} runs at lr {lr:g} but policy.lr is "
                              f"{self.policy.lr:g}: the low-bit groups are handed (group rate / {self.policy.lr:g}) * u, "
                              f"so they step {lr / self.policy.lr:g}x their rate (Policy.parse(..., lr={lr:g}) or an "
                              "optimizer at policy.lr fixes it)", UserWarning, stacklevel=2)
                break
        if self.recorder is not None:
            self.recorder.expect_optimizer = True
            wrap_optimizer(optimizer, self.recorder, lambda: self.recorder is not None and self.recorder.wants(self.current_step - 1))

    def check_plan(self, planned_steps: Optional[int]) -> None:
        """Warns when a Warmup controller's FP32 steps reach the planned
        number of steps (no low-bit step would run)."""
        if planned_steps is None:
            return
        if isinstance(planned_steps, bool) or not isinstance(planned_steps, numbers.Integral) or planned_steps < 1:
            raise ValueError(f"steps={planned_steps!r}: want the planned number of training steps (a whole number >= 1)")
        self.planned_steps = int(planned_steps)
        warm = getattr(self.control_object, "steps", None) if isinstance(self.control_object, Warmup) else \
            getattr(self.control_object, "config", {}).get("warmup") if hasattr(self.control_object, "config") else None
        if isinstance(warm, numbers.Integral) and warm >= planned_steps and self._may_vote():
            warnings.warn(f"nfabric: the warm-up of {warm} FP32 steps outlasts the {planned_steps} planned steps: "
                          "no low-bit step will run", UserWarning, stacklevel=3)

    def _may_vote(self) -> bool:
        return self.controller is not None or any(self.policy.spec(g).low_bit() for g in self.groups)

    def check_low_bit_ran(self) -> None:
        """Warns, once, when steps ran, the setup could run low-bit, and none
        did (a warm-up longer than the job, a controller that never admitted)."""
        if self.stats.steps and not self.stats.low_bit_steps and self._may_vote() and not self._warned_no_low:
            self._warned_no_low = True
            warnings.warn(f"nfabric: {self.stats.steps} steps ran and none of them low-bit (policy {self.policy}; "
                          f"controller {type(self.control_object).__name__}): every step took the FP32 path",
                          UserWarning, stacklevel=3)

    def end_of_step_checks(self) -> None:
        """At the planned last step: the no-low-bit warning."""
        if self.planned_steps is not None and self.stats.steps == self.planned_steps:
            self.check_low_bit_ran()

    # -- checkpoints -------------------------------------------------------

    def mode_state(self) -> Dict[str, Any]:
        """What every aggregation keeps between steps, as plain values (the
        residuals are the caller's)."""
        ctl = getattr(self.control_object, "state_dict", None)
        return {
            "step": self.current_step,
            "workers": self.workers,
            "policy": str(self.policy),
            "groups": list(self.groups),
            "modes": {g: str(f) for g, f in self.modes.items()},
            "loss": self.loss,
            "velocity_resets": self.velocity_resets,
            "stats": self.stats.state_dict(),
            "auto": self.auto.state_dict(),
            "control": ctl() if callable(ctl) else None,
        }

    def load_mode_state(self, sd: Dict[str, Any]) -> None:
        """Restores mode_state(); ValueError when it belongs to another
        setup (world size, policy, groups) or is malformed."""
        try:
            step, workers, pol, groups = int(sd["step"]), int(sd["workers"]), str(sd["policy"]), list(sd["groups"])
            modes = {str(g): lowbit_format(str(m)) for g, m in sd["modes"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"the checkpoint's nfabric state is malformed ({type(e).__name__}: {e})") from None
        if workers != self.workers:
            raise ValueError(f"the checkpoint's nfabric state is of {workers} workers, this run has {self.workers}")
        if pol != str(self.policy):
            raise ValueError(f"the checkpoint's nfabric state is of policy {pol!r}, this run's is {str(self.policy)!r}")
        if groups != list(self.groups) or set(modes) != set(self.groups):
            raise ValueError(f"the checkpoint's nfabric state has groups {groups}, this model {self.groups}")
        if step < 0:
            raise ValueError(f"the checkpoint's nfabric step {step} is negative")
        # Everything is read into new objects first: a malformed state
        # changes nothing.
        stats, auto = Stats(), AutoRate(self.policy)
        stats.load_state_dict(sd.get("stats"))
        auto.load_state_dict(sd.get("auto"))
        auto.setup(self.groups)
        try:
            loss = None if sd.get("loss") is None else float(sd["loss"])
            resets = int(sd.get("velocity_resets", 0))
        except (TypeError, ValueError) as e:
            raise ValueError(f"the checkpoint's nfabric state is malformed ({e})") from None
        ctl = sd.get("control")
        if ctl is not None:
            load = getattr(self.control_object, "load_state_dict", None)
            if load is None:
                raise ValueError(f"the checkpoint holds controller state but {type(self.control_object).__name__} "
                                 "has no load_state_dict")
            load(ctl)
        self.stats, self.auto, self.current_step, self.modes = stats, auto, step, modes
        self.loss, self.velocity_resets = loss, resets

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
        """The factor a group's update is handed to the optimizer with:
        group_lr / lr, with sign_lr="auto" groups at their measured rate."""
        mode = self.modes[group]
        if mode.vote() and self.auto.on and self.policy.spec(group).lr is None:
            rate = self.auto.resolve(group)
            if rate is None:  # apply() never lets a vote run unresolved
                raise RuntimeError(f"group {group}: sign_lr='auto' has no measured rate")
            return rate / self.policy.lr
        return self.policy.scale(group, mode)

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
        the momentum of groups whose rule changed (an attached optimizer).
        With sign_lr="auto", a group's first vote fixes its rate from the FP32
        steps measured so far; with none measured it runs FP32 this step."""
        if self.auto.on:
            need = [g for g in self.groups if modes[g].vote() and self.auto.measuring(g)]
            if need or not self.auto_reduce:
                self.auto.finish(self.current_step, self.auto_reduce)
            for g in need:
                if self.auto.resolve(g) is None:
                    warnings.warn(f"nfabric: step {self.current_step}: group {g} would run {modes[g]} with "
                                  "sign_lr='auto' before any FP32 step was measured; it runs FP32 this step "
                                  "(give it an FP32 warm-up)", RuntimeWarning, stacklevel=2)
                    modes = dict(modes, **{g: Format.FP32})
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
