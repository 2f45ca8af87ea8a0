"""Recording a job's gradient buckets as a bucket trace for the Go side
(``workload.ReadTrace``; ``nfabric whatif --trace PATH``).

For each chosen step the recorder keeps every bucket the framework hands
to the aggregation (a DDP bucket; one bucket per layer group for the
virtual workers): its bytes and elements, the layer groups it holds with
the mode each went through, its ready time from the start of backward,
and the measured cost of packing this worker's payload (encode) and of the
vote; and the step's forward, backward and optimizer times. It writes the
trace's JSON "steps" form (see ``go doc ./workload ReadTrace``) once the
last chosen step ends, atomically (a temporary file renamed into place).

Times are host wall-clock (``time.perf_counter``) in microseconds:

* forward: from the model's forward pre-hook to its forward hook;
* the start of backward: when autograd produces the gradient of the
  model's output (a tensor hook on the output);
* a DDP bucket's ready time: when DDP calls the hook with it, less the time
  the hook itself spent on earlier buckets of the step (the hook runs on
  the autograd thread, so its own work delays later buckets; the trace
  records the compute timeline, which the what-if prices communication
  against);
* backward: the last bucket's ready time (the trace format's default);
* optimizer: ``optimizer.step()`` of an optimizer given to
  ``attach_optimizer`` (absent otherwise).

On CUDA the device runs asynchronously; recorded steps synchronize around
the encode and vote so their costs are the device's (this perturbs only
the recorded steps). ``overhead_s`` is the time the recorder's own code
took, the figure bench/record_overhead.py reports against step time.
"""

from __future__ import annotations

import json
import numbers
import os
import tempfile
import time
import warnings
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch

from ..lowbit import Format

__all__ = ["Recorder", "StepsArg"]

StepsArg = Union[int, Iterable[int], None]

# DDP rebuilds its buckets after the first iteration, so step 0's buckets
# are not the job's: the default records steps 1 to 3.
DEFAULT_STEPS = (1, 2, 3)


MAX_STEPS = 1 << 24
"""The most steps one recording takes: Go's reader (workload.ReadTrace)
accepts at most 2^24 buckets in all steps, and every step has at least
one, so a longer recording could never be read."""

MAX_BUCKETS = MAX_STEPS
"""The most buckets one recording keeps (the same reader limit). A bucket
takes about half a kilobyte of memory until the trace is written."""


def _steps(arg: StepsArg) -> Union[range, frozenset]:
    """The chosen steps as a set with O(1) membership: a range for an int
    (no list of N numbers is built), a frozenset for a list."""
    if arg is None:
        return frozenset(DEFAULT_STEPS)
    if isinstance(arg, bool):
        raise TypeError("record_steps must be an int (how many steps from step 1) or a list of step numbers")
    if isinstance(arg, int):
        if arg < 1:
            raise ValueError(f"record_steps {arg} must be >= 1")
        if arg > MAX_STEPS:
            raise ValueError(f"record_steps {arg}: a bucket trace holds at most {MAX_STEPS} steps (the Go reader's "
                             "bucket limit); record a sample of steps (a list of step numbers)")
        return range(1, arg + 1)
    if isinstance(arg, (str, bytes)) or not hasattr(arg, "__iter__"):
        raise TypeError(f"record_steps {arg!r}: want an int (how many steps from step 1) or a list of step numbers")
    steps = set()
    for s in arg:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"record_steps: step {s!r} is not a whole number")
        if s < 0:
            raise ValueError(f"record_steps: step {s} must be >= 0")
        steps.add(int(s))
        if len(steps) > MAX_STEPS:
            raise ValueError(f"record_steps: a bucket trace holds at most {MAX_STEPS} steps (the Go reader's "
                             "bucket limit)")
    if not steps:
        raise ValueError("record_steps names no step")
    return frozenset(steps)


def _first_tensor(out) -> Optional[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return out if out.requires_grad else None
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for o in out:
            t = _first_tensor(o)
            if t is not None:
                return t
    return None


class Recorder:
    """Records chosen steps of one worker (rank 0 writes) into path."""

    def __init__(self, path: Union[str, os.PathLike], steps: StepsArg, *, model: str, workers: int, policy: str,
                 bytes_per_element: int = 4, write: bool = True):
        self.path = os.fspath(path)
        if not self.path:
            raise ValueError("record path is empty")
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"record={self.path!r}: directory {parent} does not exist")
        if not self.path.lower().endswith(".json"):
            raise ValueError(f"record={self.path!r}: a bucket trace is written as JSON (want a .json path)")
        self.steps = _steps(steps)
        self.last_step = self.steps[-1] if isinstance(self.steps, range) else max(self.steps)
        self.buckets_kept = 0
        self.write_file = write
        self.meta = {"model": model, "bytes_per_element": bytes_per_element, "workers": workers, "policy": policy}
        self.done: List[dict] = []
        self.cur: Optional[dict] = None
        self.cur_step = -1
        self.written = False
        self.overhead_s = 0.0
        self._fwd0 = 0.0
        self._bwd0: Optional[float] = None
        self._hook_s = 0.0  # this step's hook time before the current bucket
        self.sync = False
        self.expect_optimizer = False

    # -- which steps -------------------------------------------------------

    def wants(self, step: int) -> bool:
        return not self.written and step in self.steps  # O(1): a range or a frozenset

    # -- step boundaries ---------------------------------------------------

    def begin(self, step: int) -> None:
        """Starts recording step (a chosen one), at its forward."""
        t = time.perf_counter()
        self.cur = {"step": step, "buckets": []}
        self.cur_step = step
        self._fwd0 = t
        self._bwd0 = None
        self._hook_s = 0.0
        self.overhead_s += time.perf_counter() - t

    def forward_done(self, out) -> None:
        t = time.perf_counter()
        if self.cur is not None and "forward_us" not in self.cur:
            self.cur["forward_us"] = (t - self._fwd0) * 1e6
            o = _first_tensor(out)
            if o is not None:
                o.register_hook(self._backward_starts)
        self.overhead_s += time.perf_counter() - t

    def _backward_starts(self, grad):
        if self._bwd0 is None:
            self._bwd0 = time.perf_counter()
        return None

    def backward_start(self, t: Optional[float] = None) -> None:
        """Marks the start of backward (virtual workers, and DDP when the
        output hook did not fire)."""
        if self._bwd0 is None:
            self._bwd0 = time.perf_counter() if t is None else t

    def bucket(self, t_entry: float, hook_s: float, nbytes: int, elements: int,
               groups: Sequence[Tuple[str, int, str]], encode_s: float, vote_s: float,
               ready_us: Optional[float] = None) -> None:
        """One bucket: t_entry is when the framework handed it over, hook_s
        the time its hook took; groups (name, elements, mode)."""
        t = time.perf_counter()
        if self.cur is not None and self.buckets_kept >= MAX_BUCKETS:
            # The Go reader refuses more; stop here and write what is kept.
            warnings.warn(f"nfabric: the recording reached {MAX_BUCKETS} buckets (the trace reader's limit) at step "
                          f"{self.cur_step}; it ends there", RuntimeWarning, stacklevel=2)
            self.cur = None
            self.last_step = self.done[-1]["step"] if self.done else self.cur_step
            self._maybe_write()
        if self.cur is not None:
            self.buckets_kept += 1
            if ready_us is None:
                b0 = self._bwd0 if self._bwd0 is not None else self._fwd0
                ready_us = max(0.0, (t_entry - b0 - self._hook_s) * 1e6)
            prev = self.cur["buckets"][-1]["ready_us"] if self.cur["buckets"] else 0.0
            b = {"bytes": int(nbytes), "elements": int(elements), "ready_us": max(ready_us, prev),
                 "groups": [{"name": g, "elements": int(n), "mode": m} for g, n, m in groups]}
            if encode_s > 0:
                b["encode_us"] = encode_s * 1e6
            if vote_s > 0:
                b["vote_us"] = vote_s * 1e6
            self.cur["buckets"].append(b)
            self._hook_s += hook_s
        self.overhead_s += time.perf_counter() - t

    def diagnostics(self, cos: Dict[str, Dict[Format, float]]) -> None:
        """A step's cosines per group (Cosines.take): the paper's two as
        cos_binary/cos_ternary, the summed formats' in "cosines"
        (format name -> cosine), which trace version 2 carries."""
        if self.cur is not None and cos:
            d = {}
            for g, fc in cos.items():
                e = {"cos_binary": float(fc[Format.BINARY]), "cos_ternary": float(fc[Format.TERNARY])}
                extra = {str(f): float(c) for f, c in fc.items() if f not in (Format.BINARY, Format.TERNARY)}
                if extra:
                    e["cosines"] = extra
                d[g] = e
            self.cur["diagnostics"] = d

    def backward_done(self) -> None:
        """The step's backward ended (its last bucket was seen)."""
        t = time.perf_counter()
        if self.cur is not None:
            bs = self.cur["buckets"]
            self.cur["backward_us"] = bs[-1]["ready_us"] if bs else 0.0
        self.overhead_s += time.perf_counter() - t

    def optimizer(self, seconds: float) -> None:
        if self.cur is not None:
            self.cur["optimizer_us"] = seconds * 1e6
        elif self.done and self.done[-1]["step"] == self.cur_step:
            self.done[-1]["optimizer_us"] = seconds * 1e6
            self._maybe_write()

    def end(self) -> None:
        """Closes the step; writes the file after the last chosen step (the
        optimizer time of the last step lands when the optimizer runs: the
        file is written then, or by close())."""
        t = time.perf_counter()
        if self.cur is not None:
            if self.cur["buckets"]:
                self.done.append(self.cur)
            self.cur = None
        self.overhead_s += time.perf_counter() - t
        if not self.expect_optimizer:
            self._maybe_write()

    def _maybe_write(self) -> None:
        if self.done and self.done[-1]["step"] == self.last_step and not self.written:
            self.write()

    def step_finished(self) -> None:
        """After the optimizer (or at the next step's start): write once the
        last chosen step is complete."""
        self._maybe_write()

    def trace(self) -> dict:
        """The trace object as it will be written: version 2 (first) when a
        step's diagnostics carry the summed formats' "cosines", else the
        version 1 form without a "version" field, as before."""
        v2 = any("cosines" in d for s in self.done for d in s.get("diagnostics", {}).values())
        return dict({"version": 2} if v2 else {}, **self.meta, steps=list(self.done))

    def write(self) -> None:
        t = time.perf_counter()
        try:
            self._write()
        finally:
            self.overhead_s += time.perf_counter() - t

    def _write(self) -> None:
        if self.written or not self.done:
            return
        self.written = True
        if not self.write_file:
            return
        data = json.dumps(self.trace(), indent=1)
        d = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".nfabric-trace-", suffix=".json", dir=d)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(data)
                f.write("\n")
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def wrap_optimizer(optimizer: torch.optim.Optimizer, rec: "Recorder", on_step) -> None:
    """Times optimizer.step() into the recorder (an instance attribute, so
    the optimizer class is untouched); on_step() tells whether the step
    being optimized is recorded."""
    inner = optimizer.step

    def step(*a, **k):
        if not on_step():
            r = inner(*a, **k)
            rec.step_finished()
            return r
        t0 = time.perf_counter()
        r = inner(*a, **k)
        rec.optimizer(time.perf_counter() - t0)
        rec.step_finished()
        return r

    optimizer.step = step  # type: ignore[method-assign]
