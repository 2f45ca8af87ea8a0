"""``sign_lr="auto"``: the low-bit step size set from the FP32 warm-up.

A G-Binary or G-Ternary group's update is a vote u in {-1, 0, +1} handed
to the optimizer as ``(sign_lr / lr) * u``, so the optimizer (at ``lr``)
steps by ``sign_lr * u``: each element moves by sign_lr, whatever the
gradient's size. The paper's fixed value suits its models and learning
rates; on another model it can be orders of magnitude off (the DDP tutorial
trains twice as badly at 1e-4 as at 1e-3).

The rule: while a group runs FP32 (the warm-up, or any FP32 step before
its first vote), the hook records the mean magnitude of the group's
aggregated FP32 gradient, ``m = mean(|g_bar|)`` over the group's elements;
at the first step the group runs a vote, its rate is fixed at

    sign_lr[group] = lr * median(m over its last WINDOW FP32 steps)

so each element's vote step equals the average element's FP32 step at the
end of the warm-up: the L1 scale of scaled-sign compression, the one
error feedback uses here too (s = mean |p|, EF-SignSGD). The RMS of the
gradient, the other natural choice, weighs the few large elements and gave
steps 2-8x larger, which hurt the MLP stand-in (NOTES.md). The optimizer's
momentum then treats both paths alike. The rate stays fixed afterwards (the
optimizer's own schedule still scales it), is the same on every rank (every
rank sees the same aggregated gradient, or all-reduces its shard's sums
under FSDP2), and is saved by ``Fabric.state_dict``. A group with a rule of
its own (``@lr``) keeps it. A group that would run a vote before any FP32
step has nothing to measure: ``register`` refuses a policy that starts
low-bit without a controller, and a controller that asks for a vote first
gets FP32 for that group that step, with a warning.
"""

from __future__ import annotations

import math
import statistics
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from ..policy import Policy

__all__ = ["AutoRate", "WINDOW"]

WINDOW = 20
"""FP32 steps the median runs over (the last ones before the first vote)."""


class AutoRate:
    """Per-group measurement and resolution of sign_lr="auto"."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.on = policy.auto_sign_lr()
        self.rms: Dict[str, List[float]] = {}  # the last WINDOW steps' mean |g| per group
        self.rate: Dict[str, float] = {}  # resolved rates
        self._acc: Dict[int, Dict[str, List[float]]] = {}  # step -> group -> [sum g^2, n]
        self._lock = threading.Lock()

    def __getstate__(self) -> Dict[str, Any]:
        d = self.__dict__.copy()
        d.pop("_lock", None)
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._lock = threading.Lock()

    def setup(self, groups: Sequence[str]) -> None:
        self.groups = list(groups)

    def measuring(self, group: str) -> bool:
        """Whether an FP32 step of group is measured (auto on, rate not yet
        fixed, the group's rule is a vote without its own rate)."""
        if not self.on or group in self.rate:
            return False
        spec = self.policy.spec(group)
        return spec.lr is None

    def observe(self, step: int, group: str, mean: torch.Tensor) -> None:
        """Adds the magnitudes of (part of) a step's aggregated FP32
        gradient of group; callable from the threads that complete
        collectives."""
        if not self.measuring(group) or mean.numel() == 0:
            return
        sq = float(mean.detach().double().abs().sum())
        with self._lock:
            a = self._acc.setdefault(step, {}).setdefault(group, [0.0, 0.0])
            a[0] += sq
            a[1] += mean.numel()

    def finish(self, before: int, reduce: Optional[Callable[[torch.Tensor], None]] = None) -> None:
        """Closes every measured step < before into the per-group windows.
        reduce, when given, sums the partial [sum, n] pairs across ranks in
        place (FSDP2: each rank measured its own shard); every rank must then
        call finish at the same steps."""
        with self._lock:
            steps = sorted(s for s in self._acc if s < before)
            accs = [self._acc.pop(s) for s in steps]
        if reduce is not None:
            # One all-reduce for all closed steps: every group of each step.
            vals = torch.tensor([a.get(g, [0.0, 0.0])[i] for a in accs for g in self.groups for i in (0, 1)],
                                dtype=torch.float64)
            if vals.numel():
                reduce(vals)
            it = iter(vals.tolist())
            accs = [{g: [next(it), next(it)] for g in self.groups} for _ in accs]
        for a in accs:
            for g, (sq, n) in a.items():
                if n > 0:
                    w = self.rms.setdefault(g, [])
                    w.append(sq / n)
                    del w[:-WINDOW]

    def pending(self) -> bool:
        """Whether measured steps wait for finish()."""
        with self._lock:
            return bool(self._acc)

    def resolve(self, group: str) -> Optional[float]:
        """The group's rate, fixing it from its window on the first call;
        None when nothing was measured."""
        r = self.rate.get(group)
        if r is not None:
            return r
        w = self.rms.get(group)
        if not w:
            return None
        r = self.policy.lr * statistics.median(w)
        if not (r > 0 and math.isfinite(r)):
            return None
        self.rate[group] = r
        return r

    def state_dict(self) -> Dict[str, Any]:
        with self._lock:
            return {"rms": {g: list(v) for g, v in self.rms.items()}, "rate": dict(self.rate),
                    "pending": {int(s): {g: list(v) for g, v in a.items()} for s, a in self._acc.items()}}

    def load_state_dict(self, sd: Dict[str, Any]) -> None:
        if not isinstance(sd, dict):
            raise ValueError(f"sign_lr='auto' state in the checkpoint is malformed (a {type(sd).__name__})")
        try:
            rms = {str(g): [float(x) for x in v] for g, v in sd["rms"].items()}
            rate = {str(g): float(v) for g, v in sd["rate"].items()}
            pend = {int(s): {str(g): [float(v[0]), float(v[1])] for g, v in a.items()} for s, a in sd["pending"].items()}
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise ValueError(f"sign_lr='auto' state in the checkpoint is malformed ({type(e).__name__}: {e})") from None
        if any(not (r > 0 and math.isfinite(r)) for r in rate.values()):
            raise ValueError(f"sign_lr='auto' rates in the checkpoint are not positive numbers: {rate}")
        with self._lock:
            self.rms, self.rate, self._acc = rms, rate, pend
