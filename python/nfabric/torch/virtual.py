"""Virtual workers: the paper's methodology on one device.

Each batch is split into W shards (``torch.tensor_split`` along dim 0, as
the DDP test's ranks split it), one forward and backward runs per shard,
and the W per-shard gradients are aggregated through the same functions
the DDP hook uses (``nfabric.torch.core``): per group, the FP32 mean, or
each worker's packed sign plane and the vote. The result is left in each
parameter's ``.grad`` for an ordinary optimizer step, scaled as the policy
says (the optimizer must run at ``policy.lr``).

Differences from DDP, stated: a NaN or Inf sends the whole group (not a
bucket) to FP32 for that step; BatchNorm running statistics are updated
once per shard on the one model (DDP keeps rank 0's).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

import torch

from .. import lowbit
from ..lowbit import Format
from .core import Cosines, Segments, ef_commit, ef_input, encode, payload_bytes, vote
from .fabric import GroupsArg, ModeState, PolicyArg
from .fixed import aggregate_fixed
from .record import StepsArg
from .stats import RecoveryEvent

__all__ = ["VirtualWorkers", "split"]

Batch = Any


def split(batch: Batch, workers: int) -> List[Batch]:
    """Splits a tensor, or a tuple/list/dict of tensors, into W shards along
    dim 0 (torch.tensor_split: sizes differ by at most one)."""
    if isinstance(batch, torch.Tensor):
        if batch.shape[0] < workers:
            raise ValueError(f"a batch of {batch.shape[0]} does not split into {workers} non-empty shards")
        return list(torch.tensor_split(batch, workers))
    if isinstance(batch, dict):
        parts = {k: split(v, workers) for k, v in batch.items()}
        return [{k: parts[k][i] for k in batch} for i in range(workers)]
    if isinstance(batch, (tuple, list)):
        parts = [split(v, workers) for v in batch]
        return [type(batch)(p[i] for p in parts) for i in range(workers)]
    raise TypeError(f"cannot split a batch of type {type(batch).__name__} (want tensors, tuples, lists or dicts)")


def _default_loss(model: torch.nn.Module, shard: Batch) -> torch.Tensor:
    x, y = shard
    return torch.nn.functional.cross_entropy(model(x), y)


class VirtualWorkers(ModeState):
    """W virtual workers of one model on one device.

    ``step(batch)`` runs forward/backward per shard and aggregates;
    ``loss_fn(model, shard) -> loss`` defaults to cross-entropy on
    ``(inputs, targets)`` shards.
    """

    def __init__(self, model: torch.nn.Module, workers: int, policy: PolicyArg = "g-binary", groups: GroupsArg = None,
                 control: object = None, loss_fn: Optional[Callable[[torch.nn.Module, Batch], torch.Tensor]] = None,
                 record: Optional[str] = None, record_steps: StepsArg = None, record_diagnostics: bool = False):
        super().__init__(policy, groups, control)
        self.setup(model, workers)
        if self.auto.on and self.controller is None and any(self.policy.spec(g).sign() and
                                                            self.policy.spec(g).lr is None for g in self.groups):
            raise ValueError("sign_lr='auto' sets each vote group's rate from its FP32 warm-up steps, and with no "
                             "controller the policy's low-bit groups vote from step 0: give control=Warmup(N)")
        self.start_recording(model, record, record_steps, record_diagnostics, True)
        self.bind_control()
        self.model = model
        self.loss_fn = loss_fn or _default_loss
        self.segments: Dict[str, Segments] = {}
        for g in self.groups:
            members = self.assignment.members(g)
            offs, o = [], 0
            for p in members:
                offs.append(o)
                o += p.numel
            self.segments[g] = Segments(members, offs)
        # ef[g]: [W, n] residuals of the group, created on first use.
        self.ef: Dict[str, torch.Tensor] = {}
        self._enc_s = self._vote_s = self._backward_us = 0.0
        self._last_mode = Format.FP32

    def close(self) -> None:
        """Writes a recording that has not been written yet."""
        if self.recorder is not None:
            self.recorder.end()
            self.recorder.write()

    def observe(self, loss: float) -> None:
        self.loss = float(loss)

    def shard_grads(self, batch: Batch) -> tuple:
        """Forward and backward of each shard: the per-group gradients
        {group: [W, n]} and the mean loss (weighted by shard size)."""
        shards = split(batch, self.workers)
        grads: Dict[str, List[torch.Tensor]] = {g: [] for g in self.groups}
        total, count = 0.0, 0
        rec = self.recording()
        fwd = bwd = 0.0
        for shard in shards:
            self.model.zero_grad(set_to_none=False)
            t0 = time.perf_counter()
            loss = self.loss_fn(self.model, shard)
            t1 = time.perf_counter()
            loss.backward()
            if rec:
                if loss.is_cuda:
                    torch.cuda.synchronize(loss.device)
                fwd += t1 - t0
                bwd += time.perf_counter() - t1
            n = _shard_len(shard)
            total += float(loss.detach()) * n
            count += n
            for g in self.groups:
                grads[g].append(torch.cat([_grad(p.param).reshape(-1) for p in self.segments[g].params]))
        if rec:
            # One worker's step: the mean over the W shards.
            self.recorder.cur["forward_us"] = fwd / len(shards) * 1e6
            self._backward_us = bwd / len(shards) * 1e6
        return {g: torch.stack(v) for g, v in grads.items()}, total / count

    def step(self, batch: Batch) -> float:
        """One data-parallel step's gradients: afterwards each parameter's
        .grad holds the aggregate; call optimizer.step(). Returns the loss.

        A recorded step (record=) keeps one bucket per group, ready when one
        worker's backward ends (the virtual workers see gradients only
        then, so the trace claims no overlap of communication with
        backward), with the group's encode and vote cost per worker."""
        rec = self.recorder
        if rec is not None:
            rec.step_finished()
            if rec.wants(self.current_step):
                rec.begin(self.current_step)
        self.apply(self.ask())
        grads, loss = self.shard_grads(batch)
        for g in self.groups:
            t0 = time.perf_counter()
            self._enc_s = self._vote_s = 0.0
            self._aggregate(g, grads[g])
            if self.recording():
                n = self.segments[g].n
                mode = self._last_mode
                self.recorder.bucket(t0, 0.0, 4 * n, n, [(g, n, str(mode))], self._enc_s / self.workers,
                                     self._vote_s, ready_us=self._backward_us)
        if self.diag_now():
            cos = Cosines(self.diag_formats())
            for g in self.groups:
                if self.modes[g] == Format.FP32 and bool(torch.isfinite(grads[g]).all()):
                    planes = torch.stack([lowbit.encode_signs(grads[g][k]) for k in range(self.workers)])
                    cos.add(g, planes, self.segments[g], self._mean(grads[g]), grads[g])
            self.send_diag(cos.take())
        if self.recording():
            self.recorder.backward_done()
            self.recorder.end()
        self.stats.end_step()
        self.current_step += 1
        self.end_of_step_checks()
        return loss

    def aggregate(self, group: str, g: torch.Tensor) -> torch.Tensor:
        """The update of one group from W workers' gradients [W, n] (the
        group's parameters concatenated in model order), as the hook
        computes it, scale included."""
        seg = self.segments[group]
        rule = self.rule(group)
        if rule.rule == Format.FP32:
            mean = self._mean(g)
            self.auto.observe(self.current_step, group, mean)
            return mean
        res = self.ef.get(group)
        if rule.ef and res is None:
            res = torch.zeros_like(g)
            self.ef[group] = res
        ps = [ef_input(g[k], res[k] if rule.ef else None, rule) for k in range(self.workers)]
        if any(not bool(torch.isfinite(p).all()) for p in ps):
            self.stats.event(RecoveryEvent(self.current_step, "nonfinite", (group,)))
            self.report_nonfinite([group])
            return self._mean(g)
        if rule.rule.sum():  # INT8, BFP8: nfabric.torch.fixed
            return aggregate_fixed(rule.rule, ps, seg.lengths).to(g.dtype) * self.scale(group)
        rec = self.recording()
        t0 = self._clock(rec, g)
        enc = [encode(p, rule, seg, k) for k, p in enumerate(ps)]
        signs = torch.stack([s for s, _ in enc])
        gates = torch.stack([t for _, t in enc]) if enc[0][1] is not None else None
        t1 = self._clock(rec, g)
        u = vote(signs, gates, seg, rule, self.layout)
        if rec:
            t2 = self._clock(rec, g)
            self._enc_s += t1 - t0
            self._vote_s += t2 - t1
        if rule.ef:
            for k in range(self.workers):
                ef_commit(ps[k], res[k], seg)
        return u.to(g.dtype) * self.scale(group)

    def _clock(self, rec: bool, t: torch.Tensor) -> float:
        if rec and t.is_cuda:
            torch.cuda.synchronize(t.device)
        return time.perf_counter()

    def _mean(self, g: torch.Tensor) -> torch.Tensor:
        # As DDP's FP32 path: divide by W, then sum over workers.
        return (g / self.workers).sum(dim=0)

    def _aggregate(self, group: str, g: torch.Tensor) -> None:
        seg = self.segments[group]
        rule = self.rule(group)
        before = len(self.stats.events)
        upd = self.aggregate(group, g)
        fell_back = len(self.stats.events) > before and self.stats.events[-1].reason == "nonfinite"
        mode = Format.FP32 if fell_back else rule.rule
        self._last_mode = mode
        es = g.element_size()
        self.stats.add(group, mode, payload_bytes(rule.with_rule(mode), seg.n, es), seg.n, es)
        for p, v in seg.tensors(upd):
            if p.param.grad is None:
                p.param.grad = torch.zeros_like(p.param)
            p.param.grad.copy_(v.view_as(p.param))


def _grad(p: torch.Tensor) -> torch.Tensor:
    return p.grad if p.grad is not None else torch.zeros_like(p)


def _shard_len(shard: Batch) -> int:
    if isinstance(shard, torch.Tensor):
        return int(shard.shape[0])
    if isinstance(shard, dict):
        return _shard_len(next(iter(shard.values())))
    return _shard_len(shard[0])
