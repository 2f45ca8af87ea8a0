"""The DDP communication hook: NEURON-Fabric aggregation in
``torch.nn.parallel.DistributedDataParallel``.

Per gradient bucket and layer group:

* FP32 (calibration, recovery, groups the policy keeps on FP32, and every
  bucket where some rank holds a NaN or Inf): the mean by all-reduce,
  exactly PyTorch's ``allreduce_hook`` when the whole bucket is FP32.
* G-Binary / G-Ternary through the ``collective`` backend: every rank packs
  the signs of its gradient (b = 1{g > 0}, eight elements a byte) on the
  device, all-gathers the packed planes, and computes the controller's
  read response, the vote u = sgn(2c - W) (times the zero gate for
  G-Ternary), where the data is. The gate uses each element's index in the
  model's flattened parameter vector, recovered from the bucket's
  parameters, so a bucket boundary never moves the 2-of-3 pattern.
* INT8 / BFP8 (beyond the paper): nfabric.torch.fixed's all-reduces, or,
  on the ``controller`` backend, the all-gathered codes written into
  nfabric serve's sum regions (the same bits).

Before a low-bit bucket is encoded, the ranks agree on a one-element flag
(all-reduce, MAX): a NaN or Inf on any rank sends that bucket to FP32 on
every rank. On the collective backend the hook then returns without
waiting: the planes' all-gather runs while backward computes the next
buckets, and the vote into the bucket runs when they arrive (the future
DDP waits for before it reads the bucket). Modes change only at step boundaries; a controller is asked on
rank 0 before each step's first bucket and its answer is broadcast.
"""

import atexit
import json
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from ..lowbit import Format
from .. import fixed, lowbit
from .core import Cosines, Segments, ef_commit, ef_input, encode, nonfinite, payload_bytes, update
from .fabric import GroupsArg, ModeState, PolicyArg
from .fixed import allreduce_fixed
from .record import StepsArg
from .stats import RecoveryEvent

__all__ = ["register", "Fabric", "AllRanks", "STATE_FORMAT"]

STATE_FORMAT = "nfabric.fabric/1"
"""The format tag of Fabric.state_dict()."""


def fsdp_device(t: torch.Tensor) -> torch.device:
    """Where a parameter's data lives (a DTensor's local shard's device)."""
    local = getattr(t, "to_local", None)
    return local().device if callable(local) else t.device


# A DDP model's Reducer (C++) holds its process group. Freed with the model
# while it is the group's last owner, it destroys a gloo group with the GIL
# held, and the group's destructor joins worker threads, one of which may be
# waiting for the GIL to free a Python tensor or callback of a collective
# that has just finished: the process hangs for good (pytorch/pytorch#56297;
# it happens when the model outlives destroy_process_group(), as in
# pytorch/examples' DDP tutorial, and our hook's Python buckets and
# callbacks make it likely). So every DDP model a Fabric binds has its
# group held from Python too, until the model is gone; the Reducer is then
# never the last owner, and Python frees the group with the GIL released.
_held_groups: List[Tuple["weakref.ref[torch.nn.Module]", Any]] = []


def _hold_group(model: torch.nn.Module) -> None:
    """Holds model's process group until model is freed (looked at by the
    next bind and at exit, never inside the model's own teardown)."""
    _release_groups()
    pg = getattr(model, "process_group", None)
    if pg is not None:
        _held_groups.append((weakref.ref(model), pg))


@atexit.register
def _release_groups() -> None:
    """Drops the held groups whose models are gone (at exit too, while the
    interpreter is whole; a model alive then keeps its group held)."""
    _held_groups[:] = [(m, pg) for m, pg in _held_groups if m() is not None]


def _global_rank(pg: Optional[dist.ProcessGroup], rank: int) -> int:
    if pg is None or pg is dist.group.WORLD:
        return rank
    fn = getattr(dist, "get_global_rank", None) or getattr(dist.distributed_c10d, "_get_global_rank")
    return fn(pg, rank)


def _all_gather_bytes(send: torch.Tensor, world: int, pg: Optional[dist.ProcessGroup],
                      recv: Optional[torch.Tensor] = None, async_op: bool = False):
    """Every rank's packed bytes, as W views of one [W, n] receive buffer
    (recv, reused across steps, or a fresh one). The tensor form where the
    backend has it (NCCL, torch >= 1.13 names it all_gather_into_tensor or
    _all_gather_base); gloo has only the list form. async_op: returns
    (views, work) with the transfer still under way."""
    if world == 1:
        return ([send], None) if async_op else [send]
    n = send.numel()
    if recv is None or recv.numel() != world * n or recv.dtype != send.dtype or recv.device != send.device:
        recv = torch.empty(world * n, dtype=send.dtype, device=send.device)
    outs = list(recv.view(world, n))
    backend = dist.get_backend(pg)
    into = getattr(dist, "all_gather_into_tensor", None) or getattr(dist, "_all_gather_base", None)
    if backend == "nccl" and into is not None:
        work = into(recv, send, group=pg, async_op=async_op)
    else:
        work = dist.all_gather(outs, send, group=pg, async_op=async_op)
    return (outs, work) if async_op else outs


def wrapper_kind(model: object) -> str:
    """"ddp" or "fsdp" (FSDP2's fully_shard) for a model the hook can bind
    to; TypeError saying what to do for anything else."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return "ddp"
    fsdp2 = _fsdp2_module_class()
    if fsdp2 is not None and isinstance(model, fsdp2):
        return "fsdp"
    name = type(model).__name__
    if name == "FullyShardedDataParallel":
        raise TypeError("nfabric supports FSDP2 (torch.distributed.fsdp.fully_shard), not the FSDP1 "
                        "FullyShardedDataParallel wrapper: shard the model with fully_shard(module) instead")
    if isinstance(model, torch.nn.DataParallel):
        raise TypeError("torch.nn.DataParallel runs one process, with no collective to hook: use "
                        "DistributedDataParallel (one process per device), or nfabric.torch.VirtualWorkers")
    if isinstance(model, torch.nn.Module):
        inner = [n for n, m in model.named_modules() if fsdp2 is not None and isinstance(m, fsdp2)]
        if inner:
            raise TypeError(f"{name} has fully_shard()ed submodules ({', '.join(inner[:3])}) but is not itself "
                            "fully_shard()ed: shard the root module too (fully_shard(model)), then bind it")
        raise TypeError(f"nfabric needs the model after DistributedDataParallel(model) or fully_shard(model) "
                        f"wrapped it (in several processes, after init_process_group); got a plain {name}. "
                        "Under Lightning use nfabric.torch.lightning.NFabric, under Accelerate bind the model "
                        "accelerator.prepare returns; in one process use nfabric.torch.VirtualWorkers")
    raise TypeError(f"nfabric binds to a torch.nn.Module wrapped by DistributedDataParallel or fully_shard, "
                    f"not {name}")


def _fsdp2_module_class():
    """FSDP2's FSDPModule, or None on a torch without it (1.13's fsdp
    package does not even import on Python 3.11: any failure means none)."""
    try:
        from torch.distributed.fsdp import FSDPModule  # torch >= 2.6
        return FSDPModule
    except Exception:  # noqa: BLE001
        pass
    try:
        from torch.distributed._composable.fsdp import FSDPModule  # type: ignore[no-redef]
        return FSDPModule
    except Exception:  # noqa: BLE001
        return None


class Fabric(ModeState):
    """NEURON-Fabric aggregation for a data-parallel job: groups, policy,
    modes, statistics and checkpointable state.

    Create it with the policy alone (``Fabric("backbone=g-binary,head=fp32",
    control=...)``), before the model is wrapped, and ``bind`` it to the
    wrapped model (a DistributedDataParallel model, or an FSDP2
    ``fully_shard``ed one) once the framework has built it;
    ``nfabric.torch.register(model, policy, ...)`` does both at once. The
    constructor checks what needs no model (policy, backend, controller),
    bind the rest (groups, world size, the server), before training starts.

    ``assignment.report()`` tells which parameters went where,
    ``stats.summary()`` the bytes on the wire per group and mode against the
    dense path, the low-bit step fraction and the recovery events.
    ``state_dict()`` / ``load_state_dict()`` (the torch.distributed.checkpoint
    ``Stateful`` protocol) save and restore the step, modes, statistics,
    sign_lr="auto" rates, the controller's state and the error-feedback
    residuals (per rank).

    steps: the planned number of training steps, if known: a warm-up that
    outlasts it, or a job that ends with no low-bit step, is warned about.
    """

    def __init__(self, policy: PolicyArg = "g-binary", groups: GroupsArg = None, control: object = None,
                 backend: str = "collective", process_group: Optional[dist.ProcessGroup] = None,
                 serve: Optional[str] = None, token: Optional[str] = None, record: Optional[str] = None,
                 record_steps: StepsArg = None, record_diagnostics: bool = False, steps: Optional[int] = None):
        if isinstance(policy, torch.nn.Module):
            raise TypeError("Fabric(...) takes the policy, not the model: Fabric(policy, ...).bind(model), or "
                            "nfabric.torch.register(model, policy, ...)")
        super().__init__(policy, groups, control, backend, serve)
        self.pg = process_group
        self.serve_address, self.token = serve, token
        self._record_args = (record, record_steps, record_diagnostics)
        self._planned = steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise ValueError(f"steps={steps!r}: want the planned number of training steps (a whole number >= 1)")
        self.kind: Optional[str] = None
        self.rank = 0
        self.ctrl = None
        self._layouts: Dict[Tuple[int, Tuple[int, ...]], Dict[str, Segments]] = {}
        self._open = False
        # Error-feedback residuals by parameter name (every element of the
        # parameter, flattened), made at bind for the groups whose rule
        # has +ef: what state_dict saves per rank.
        self.residuals: Dict[str, torch.Tensor] = {}
        # buckets[i]: the parameter names of bucket i in the latest step
        # (DDP rebuilds its buckets after the first step; FSDP2: units).
        self.buckets: Dict[int, List[str]] = {}
        self._enc_s = self._vote_s = 0.0
        self._fell = False
        self._diag = None
        # Receive buffers of the planes' all-gather, per bucket index: the
        # same sizes every step, so no allocation (and no first-touch page
        # faults) per bucket. DDP waits for every bucket's future before
        # the step ends, so a buffer is free again by the next step.
        self._recv: Dict[int, torch.Tensor] = {}
        self._pending_state: Optional[Dict[str, Any]] = None
        self.units = None  # FSDP2: the bound units (nfabric.torch.fsdp)

    def bind(self, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None) -> "Fabric":
        """Binds to the wrapped model: DistributedDataParallel (a
        communication hook) or an FSDP2 model (a custom reduce-scatter per
        fully_shard unit, nfabric.torch.fsdp). Every check runs here, before
        training: groups, policy, the world size against the layout, the
        backend and server, and for FSDP2 the configurations it refuses.
        optimizer: as attach_optimizer. Returns self."""
        if self.bound:
            raise RuntimeError("this Fabric is already bound to a model; make a new one for another model")
        kind = wrapper_kind(model)
        if not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialized (call init_process_group first)")
        world = dist.get_world_size(self.pg)
        inner = model.module if kind == "ddp" else model
        if kind == "fsdp":
            from . import fsdp
            fsdp.check(self, model)
        self.setup(inner, world)
        self.kind = kind
        self.rank = dist.get_rank(self.pg)
        if self.backend == "controller":
            if kind == "fsdp":
                raise ValueError("backend='controller' (the payload lines through nfabric serve) runs under DDP "
                                 "only; under FSDP2 use the default backend='collective' (the same bits)")
            from .serve import Client, ControllerBackend
            gates = {g: self.policy.spec(g).gate for g in self.groups}
            self.ctrl = ControllerBackend(Client(self.serve_address, self.token), self.assignment, world, self.layout,
                                          gates)
        if world > 1:
            # Every rank must take part in the per-step mode broadcast, or
            # none: check that all ranks were given a controller (or none).
            have = torch.tensor([1.0 if self.controller is not None else 0.0, 1.0])
            if dist.get_backend(self.pg) == "nccl":  # NCCL reduces device tensors only
                have = have.cuda()
            dist.all_reduce(have, group=self.pg)
            if have[0].item() not in (0.0, have[1].item()):
                raise ValueError(f"control= was given on {int(have[0].item())} of {world} ranks: give the same "
                                 "controller on every rank (only rank 0's is asked; the others follow its broadcast)")
        if self.auto.on and self.controller is None and any(self.policy.spec(g).sign() and
                                                            self.policy.spec(g).lr is None for g in self.groups):
            raise ValueError("sign_lr='auto' sets each vote group's rate from its FP32 warm-up steps, and with no "
                             "controller the policy's low-bit groups vote from step 0: give control=Warmup(N)")
        if self.rank == 0:
            self.bind_control()
        self._src = _global_rank(self.pg, 0)
        self._make_residuals(model, kind)
        record, record_steps, record_diag = self._record_args
        self.start_recording(inner, record, record_steps, record_diag, self.rank == 0)
        if kind == "ddp":
            self._record_hooks(model)
            model.register_comm_hook(self, _hook)
            _hold_group(model)
        else:
            from . import fsdp
            self._record_hooks(model)
            fsdp.bind(self, model)
        self.check_plan(self._planned)
        if optimizer is not None:
            self.attach_optimizer(optimizer)
        if self._pending_state is not None:
            st, self._pending_state = self._pending_state, None
            self.load_state_dict(st)
        return self

    def _make_residuals(self, model: torch.nn.Module, kind: str) -> None:
        dtypes = {}
        if kind == "fsdp":
            from . import fsdp
            dtypes = fsdp.reduce_dtypes(model)
        for info in self.assignment.params:
            if self.policy.spec(info.group).ef:
                dt = dtypes.get(info.name, info.param.dtype)
                dev = fsdp_device(info.param)
                self.residuals[info.name] = torch.zeros(info.numel, dtype=dt, device=dev)

    def observe(self, loss: float) -> None:
        """Reports the training loss to the controller (read on rank 0)."""
        self.loss = float(loss)

    # -- checkpoints ---------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """This rank's state, for torch.distributed.checkpoint (the Stateful
        protocol: DCP saves it beside the model, each rank under its own
        key ``rank<N>``) or torch.save: the step, modes, statistics,
        sign_lr="auto" rates and the controller's state (JSON text), and the
        error-feedback residuals by parameter name. Before bind it returns
        what load_state_dict was given (if anything)."""
        if not self.bound:
            if self._pending_state is not None:
                return self._pending_state
            raise RuntimeError("state_dict() needs a bound Fabric (bind(model) first) or a loaded state")
        mode = json.dumps(self.mode_state(), sort_keys=True)
        res = {n: t.detach().clone() for n, t in self.residuals.items()}
        return {"format": STATE_FORMAT, f"rank{self.rank}": {"mode": mode, "residuals": res}}

    def all_ranks(self) -> "AllRanks":
        """An adapter whose state_dict holds every rank's state (for a
        checkpoint rank 0 alone writes: Accelerate's
        ``accelerator.register_for_checkpointing(fabric.all_ranks())``)."""
        return AllRanks(self)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restores state_dict()'s values for this rank (its ``rank<N>``
        entry); before bind it is kept and applied by bind. ValueError when
        the state is of another setup (world size, policy, groups,
        parameter shapes) or malformed."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not an nfabric Fabric state (want a dict with format {STATE_FORMAT!r})")
        if not self.bound:
            self._pending_state = state
            return
        mine = state.get(f"rank{self.rank}")
        if not isinstance(mine, dict) or "mode" not in mine or "residuals" not in mine:
            have = sorted(k for k in state if k.startswith("rank"))
            raise ValueError(f"the nfabric state has no entry for rank {self.rank} (it has {have})")
        mode = mine["mode"]
        try:
            mode = json.loads(mode) if isinstance(mode, (str, bytes)) else mode
        except ValueError as e:
            raise ValueError(f"the checkpoint's nfabric state is not valid JSON ({e})") from None
        res = mine["residuals"]
        if not isinstance(res, dict) or set(res) != set(self.residuals):
            raise ValueError(f"the checkpoint's residuals are for parameters {sorted(res)[:5] if isinstance(res, dict) else res!r}..., this run keeps "
                             f"{sorted(self.residuals)[:5]}... (another model or policy)")
        if not isinstance(mode, dict):
            raise ValueError(f"the checkpoint's nfabric state is a {type(mode).__name__}, not a JSON object")
        for n, t in res.items():
            if not isinstance(t, torch.Tensor) or t.shape != self.residuals[n].shape:
                raise ValueError(f"the checkpoint's residual of {n} has shape "
                                 f"{tuple(getattr(t, 'shape', ()))}, the parameter {tuple(self.residuals[n].shape)}")
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"the checkpoint's residual of {n} holds NaN or Inf")
        self.load_mode_state(mode)
        for n, t in res.items():
            self.residuals[n].copy_(t)

    def _record_hooks(self, ddp_model: torch.nn.Module) -> None:
        rec = self.recorder
        if rec is None:
            return
        rec.sync = next(ddp_model.parameters()).is_cuda

        def pre(_m, _inp):
            rec.step_finished()
            if rec.wants(self.current_step) and rec.cur_step != self.current_step:
                rec.begin(self.current_step)

        def post(_m, _inp, out):
            if self.recording():
                rec.forward_done(out)

        ddp_model.register_forward_pre_hook(pre)
        ddp_model.register_forward_hook(post)

    def close(self) -> None:
        """Frees what this rank holds on nfabric serve (its device, and on
        rank 0 the control session); closing the process does it too.
        Writes a recording that has not been written yet."""
        if self.recorder is not None:
            self.recorder.end()
            self.recorder.write()
        if self.ctrl is not None:
            self.ctrl.close()
        close = getattr(self.control_object, "close", None)
        if close is not None and self.rank == 0:
            close()
        self.check_low_bit_ran()

    # -- step boundaries -------------------------------------------------

    def _begin_step(self, device: torch.device) -> None:
        self._open = True
        self.buckets = {}
        self._diag = Cosines(self.diag_formats()) if self.diag_now() else None
        if self.controller is None:
            self.apply(self.policy.modes(self.groups))
            return
        codes = torch.zeros(len(self.groups), dtype=torch.int64)
        if self.rank == 0:
            modes = self.ask()
            codes = torch.tensor([int(modes[g]) for g in self.groups], dtype=torch.int64)
        if self.workers > 1:
            if dist.get_backend(self.pg) == "nccl":
                codes = codes.to(device)
            dist.broadcast(codes, src=self._src, group=self.pg)
            self.stats.add_header(8 * len(self.groups))
        self.apply({g: Format(int(c)) for g, c in zip(self.groups, codes.tolist())})

    def _end_step(self) -> None:
        if self._diag is not None and self.rank == 0:
            self.send_diag(self._diag.take())
        if self.recording():
            self.recorder.backward_done()
            self.recorder.end()
        self.stats.end_step()
        self.current_step += 1
        self._open = False
        self.end_of_step_checks()

    # -- buckets -----------------------------------------------------------

    def _layout(self, bucket: dist.GradBucket) -> Dict[str, Segments]:
        params = bucket.parameters()
        key = (bucket.index(), tuple(id(p) for p in params))
        lay = self._layouts.get(key)
        if lay is not None:
            return lay
        buf = bucket.buffer()
        grads = bucket.gradients()
        base, size = buf.data_ptr(), buf.element_size()
        per: Dict[str, Tuple[list, list]] = {}
        off = 0
        for p, g in zip(params, grads):
            info = self.assignment.info(p)
            o = (g.data_ptr() - base) // size
            if not (0 <= o and o + p.numel() <= buf.numel()):
                o = off  # not a view of the buffer: the buffer is the concatenation
            off = o + p.numel()
            ps, os = per.setdefault(info.group, ([], []))
            ps.append(info)
            os.append(o)
        lay = {g: Segments(*per[g]) for g in self.groups if g in per}
        self._layouts[key] = lay
        return lay

    def _allreduce_mean(self, t: torch.Tensor):
        t.div_(self.workers)
        return dist.all_reduce(t, group=self.pg, async_op=True)

    def hook(self, bucket: dist.GradBucket) -> torch.futures.Future:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return self._hook_bucket(bucket, t0)
        finally:
            self.stats.add_time(time.perf_counter() - t0, time.thread_time() - c0)

    def _hook_bucket(self, bucket: dist.GradBucket, t0: float) -> torch.futures.Future:
        buf = bucket.buffer()
        if not self._open:
            self._begin_step(buf.device)
        lay = self._layout(bucket)
        self._enc_s = self._vote_s = 0.0
        self._fell = False
        self.buckets[bucket.index()] = [info.name for seg in lay.values() for info in seg.params]
        low = [g for g in lay if self.modes[g] != Format.FP32]
        if low:
            fut = self._mixed(bucket, buf, lay, low)
        elif self._diag is not None:
            fut = self._fp32_with_diag(buf, lay)
        else:
            for g, seg in lay.items():
                self.stats.add(g, Format.FP32, buf.element_size() * seg.n, seg.n, buf.element_size())
            step = self.current_step
            measure = [g for g in lay if self.auto.measuring(g)]

            def done(f: torch.futures.Future) -> torch.Tensor:
                out = f.value()[0]
                for g in measure:
                    self.auto.observe(step, g, lay[g].gather(out))
                return out
            fut = self._allreduce_mean(buf).get_future().then(done)
        if self.recording():
            groups = [(g, seg.n, "fp32" if self._fell else str(self.modes[g])) for g, seg in lay.items()]
            self.recorder.bucket(t0, time.perf_counter() - t0, buf.numel() * buf.element_size(), buf.numel(),
                                 groups, self._enc_s, self._vote_s)
        if bucket.is_last():
            self._end_step()
        return fut

    def _fp32_with_diag(self, buf: torch.Tensor, lay: Dict[str, Segments]):
        """An FP32 bucket on a diagnostics step: the planes are all-gathered
        too (counted as header bytes), and the votes compared with the mean;
        the controller's summed formats (INT8/BFP8 rungs, and all of them on
        a recorded diagnostics step) are all-reduced first (_diag_sums)."""
        bad = torch.stack([nonfinite(lay[g].gather(buf)) for g in lay]).max().reshape(1)
        if self.workers > 1:
            dist.all_reduce(bad, op=dist.ReduceOp.MAX, group=self.pg)
        planes = None
        if bad.item() == 0:
            parts = [lowbit.encode_signs(lay[g].gather(buf)) for g in lay]
            sizes = [t.numel() for t in parts]
            outs = _all_gather_bytes(torch.cat(parts), self.workers, self.pg)
            self.stats.add_header(4 + sum(sizes))
            planes = (sizes, outs)
        summed = self._diag_sums(buf, lay) if planes is not None else None
        self._allreduce_mean(buf).wait()
        o = 0
        for g, seg in lay.items():
            self.auto.observe(self.current_step, g, seg.gather(buf))
            self.stats.add(g, Format.FP32, buf.element_size() * seg.n, seg.n, buf.element_size())
            if planes is not None:
                sizes, outs = planes
                n = sizes.pop(0)
                signs = torch.stack([x[o:o + n] for x in outs])
                o += n
                self._diag.add(g, signs, seg, seg.gather(buf), summed=summed[g] if summed else None)
        fut: torch.futures.Future = torch.futures.Future()
        fut.set_result(buf)
        return fut

    def _diag_sums(self, buf: torch.Tensor, lay: Dict[str, Segments]
                   ) -> Optional[Dict[str, Dict[Format, torch.Tensor]]]:
        """The decoded aggregates of the diagnostics' summed formats (the
        controller's INT8/BFP8 rungs), from the ranks' own gradients, before
        the FP32 all-reduce overwrites the bucket: Go's
        train.StepFormatCosines arithmetic, one bucket per parameter tensor
        (allreduce_fixed on each tensor alone: INT8 one scale per tensor
        agreed by an all-reduce MAX, BFP8 blocks from the tensor's first
        element). Counted as header bytes, as the diagnostics' planes are;
        None when no summed format is measured."""
        if not self._diag.sums:
            return None
        out: Dict[str, Dict[Format, torch.Tensor]] = {}
        for g, seg in lay.items():
            p = seg.gather(buf)
            out[g] = {}
            for f in self._diag.sums:
                parts = [allreduce_fixed(f, v, [info.numel], self.workers, self.pg)
                         for info, v in seg.tensors(p)]
                out[g][f] = torch.cat(parts) if parts else p.new_zeros(0)
                self.stats.add_header(sum(fixed.payload_bytes(str(f), info.numel) for info in seg.params))
        return out

    def _fallback(self, bucket: dist.GradBucket, buf: torch.Tensor, lay: Dict[str, Segments], low: List[str]):
        self._fell = True
        self.stats.event(RecoveryEvent(self.current_step, "nonfinite", tuple(low), bucket.index()))
        if self.rank == 0:
            self.report_nonfinite(low)
        for g, seg in lay.items():
            self.stats.add(g, Format.FP32, buf.element_size() * seg.n, seg.n, buf.element_size())
        return self._allreduce_mean(buf).get_future().then(lambda f: f.value()[0])

    def _mixed(self, bucket: dist.GradBucket, buf: torch.Tensor, lay: Dict[str, Segments], low: List[str]):
        rules = {g: self.rule(g) for g in low}
        inputs = {}
        for g in low:
            seg = lay[g]
            res = self._residual(seg, buf) if rules[g].ef else None
            inputs[g] = (ef_input(seg.gather(buf), res, rules[g]), res)
        enc = None
        if self.ctrl is None:
            # The sign encoders find a NaN or Inf in the same pass (no separate
            # scan of those groups; the summed formats' groups are scanned);
            # the ranks still agree before any plane moves.
            votes = [g for g in low if not rules[g].rule.sum()]
            enc = self._encode_low(buf, lay, votes, rules, inputs) if votes else ([], [])
            flags = [torch.full((), 1.0 if enc is None else 0.0, device=buf.device)]
            flags += [nonfinite(inputs[g][0]) for g in low if rules[g].rule.sum()]
            flag = torch.stack(flags).max().reshape(1)
        else:
            flag = torch.stack([nonfinite(p) for p, _ in inputs.values()]).max().reshape(1)
        if self.workers > 1:
            t = time.perf_counter()
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.pg)
            self.stats.add_wait(time.perf_counter() - t)
            self.stats.add_header(4)
        if flag.item() > 0:
            return self._fallback(bucket, buf, lay, low)
        # The FP32 groups of the bucket reduce while the low-bit planes move
        # and are voted (and, through the controller backend, encoded).
        fp = [g for g in lay if g not in rules]
        work, fpvec = None, None
        if fp:
            fpvec = torch.cat([lay[g].gather(buf) for g in fp]) if len(fp) > 1 else lay[fp[0]].gather(buf).clone()
            work = self._allreduce_mean(fpvec)
        summed = [g for g in low if rules[g].rule.sum()]
        low = [g for g in low if g not in summed]
        for g in summed:  # INT8, BFP8: nfabric.torch.fixed, or nfabric serve's sum regions
            if self.ctrl is not None:
                mean = self._fixed_via_controller(rules[g].rule, lay[g], inputs[g][0])
            else:
                mean = allreduce_fixed(rules[g].rule, inputs[g][0], lay[g].lengths, self.workers, self.pg)
            self._finish(g, lay[g], buf, mean, rules, inputs)
        if low and self.ctrl is None and self.workers > 1 and not self.recording():
            return self._overlapped(bucket.index(), buf, lay, rules, inputs, enc, fp, fpvec, work)
        if low and self.ctrl is not None:
            self._via_controller(buf, lay, low, rules, inputs)
        elif low:
            self._via_collective(buf, lay, rules, inputs, enc)
        if work is not None:
            t = time.perf_counter()
            work.wait()
            self.stats.add_wait(time.perf_counter() - t)
            self._scatter_fp32(buf, lay, fp, fpvec)
        fut: torch.futures.Future = torch.futures.Future()
        fut.set_result(buf)
        return fut

    def _scatter_fp32(self, buf: torch.Tensor, lay: Dict[str, Segments], fp: List[str], fpvec: torch.Tensor,
                      count: bool = True, step: Optional[int] = None) -> None:
        step = self.current_step if step is None else step
        o = 0
        for g in fp:
            seg = lay[g]
            seg.scatter(buf, fpvec[o:o + seg.n])
            self.auto.observe(step, g, fpvec[o:o + seg.n])
            o += seg.n
            if count:
                self.stats.add(g, Format.FP32, buf.element_size() * seg.n, seg.n, buf.element_size())

    def _overlapped(self, index: int, buf: torch.Tensor, lay: Dict[str, Segments], rules, inputs, enc,
                    fp: List[str], fpvec: Optional[torch.Tensor], work) -> torch.futures.Future:
        """The collective backend without waiting: the planes' all-gather
        (and the FP32 groups' all-reduce) start here and the hook returns,
        so backward goes on to the next bucket while they move; the vote
        and the writes into the bucket run when they arrive (on the thread
        that completes them), and DDP waits for the returned future before
        it reads the bucket. The same calls as the waiting path, so the
        same bits; only the traffic is counted here, on the hook's thread,
        so it lands in this step's statistics."""
        parts, voted = enc
        sizes = [t.numel() for t in parts]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        send = torch.cat(parts) if len(parts) > 1 else parts[0]
        recv = self._recv.get(index)
        if recv is None or recv.numel() != self.workers * send.numel():
            recv = self._recv[index] = torch.empty(self.workers * send.numel(), dtype=send.dtype, device=send.device)
        outs, gwork = _all_gather_bytes(send, self.workers, self.pg, recv, async_op=True)
        step = self.current_step
        for g, _, _ in voted:
            self.stats.add(g, self.modes[g], payload_bytes(rules[g], lay[g].n), lay[g].n, buf.element_size())
        for g in fp:
            self.stats.add(g, Format.FP32, buf.element_size() * lay[g].n, lay[g].n, buf.element_size())

        def finish(f: torch.futures.Future) -> torch.Tensor:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                # value() raises a collective's error; never Work.wait() here:
                # this runs inside the completion of that work.
                for sub in (f.value() if work is not None else [f]):
                    sub.value()
                for g, i, has_gates in voted:
                    a, n = starts[i], sizes[i]
                    gates = [o[starts[i + 1]:starts[i + 1] + n] for o in outs] if has_gates else None
                    self._finish(g, lay[g], buf, ([o[a:a + n] for o in outs], gates), rules, inputs, count=False)
                if work is not None:
                    self._scatter_fp32(buf, lay, fp, fpvec, count=False, step=step)
                return buf
            finally:
                self.stats.add_time(time.perf_counter() - t0, time.thread_time() - c0)

        futs = [gwork.get_future()] + ([work.get_future()] if work is not None else [])
        done = futs[0] if len(futs) == 1 else torch.futures.collect_all(futs)
        return done.then(finish)

    def _finish(self, g: str, seg: Segments, buf: torch.Tensor, u, rules, inputs, count: bool = True) -> None:
        """Error feedback, then the update into the bucket: u is the int8
        aggregate, or a (signs, gates) pair of received planes to vote."""
        p, res = inputs[g]
        if res is not None:
            ef_commit(p, res, seg)
            self._store_residual(seg, res)
        if isinstance(u, torch.Tensor):
            seg.scatter(buf, u.to(buf.dtype) * self.scale(g))
        else:
            # p may be a view of buf: it is not read after this point.
            out = buf[seg.offsets[0]:seg.offsets[0] + seg.n] if seg.contiguous else buf.new_empty(seg.n)
            update(u[0], u[1], seg, rules[g], self.layout, self.scale(g), out)
            if not seg.contiguous:
                seg.scatter(buf, out)
        if count:
            self.stats.add(g, self.modes[g], payload_bytes(rules[g], seg.n), seg.n, buf.element_size())

    def _encode_low(self, buf: torch.Tensor, lay: Dict[str, Segments], low: List[str], rules, inputs):
        """This rank's planes of the low-bit groups, as (parts, index), or
        None when a gradient holds a NaN or Inf."""
        rec = self.recording()
        t = self._clock(rec, buf)
        parts, index = [], []
        try:
            for g in low:
                p, _ = inputs[g]
                s, gt = encode(p, rules[g], lay[g], self.rank)
                index.append((g, len(parts), gt is not None))
                parts.append(s)
                if gt is not None:
                    parts.append(gt)
        except lowbit.NonFiniteError:
            return None
        finally:
            if rec:
                self._enc_s += self._clock(rec, buf) - t
        return parts, index

    def _via_collective(self, buf: torch.Tensor, lay: Dict[str, Segments], rules, inputs, enc) -> None:
        """Each rank's planes (enc, from _encode_low) all-gathered, the vote
        on every rank."""
        rec = self.recording()
        parts, index = enc
        t = self._clock(rec, buf)
        sizes = [t.numel() for t in parts]
        send = torch.cat(parts) if len(parts) > 1 else parts[0]
        if rec:
            self._enc_s += self._clock(rec, buf) - t
        t = time.perf_counter()
        outs = _all_gather_bytes(send, self.workers, self.pg)
        self.stats.add_wait(time.perf_counter() - t)
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        t = self._clock(rec, buf)
        self._vote_many(buf, lay, rules, inputs, outs, starts, sizes, index)
        if rec:
            self._vote_s += self._clock(rec, buf) - t

    def _clock(self, rec: bool, buf: torch.Tensor) -> float:
        """perf_counter, after the device's queued work when recording on a
        GPU (so encode and vote costs are the device's)."""
        if rec and buf.is_cuda:
            torch.cuda.synchronize(buf.device)
        return time.perf_counter()

    def _vote_many(self, buf, lay, rules, inputs, outs, starts, sizes, index) -> None:
        for g, i, has_gates in index:
            a, n = starts[i], sizes[i]
            signs = [o[a:a + n] for o in outs]  # views of the received buffers
            gates = None
            if has_gates:
                b = starts[i + 1]
                gates = [o[b:b + n] for o in outs]
            self._finish(g, lay[g], buf, (signs, gates), rules, inputs)

    def _via_controller(self, buf: torch.Tensor, lay: Dict[str, Segments], low: List[str], rules, inputs) -> None:
        """The planes, one per parameter tensor, all-gathered, written as
        payload lines into this rank's nfabric serve device under the step's
        mode latch, and the aggregate read back."""
        rec = self.recording()
        t = self._clock(rec, buf)
        parts, index = [], []
        for g in low:
            p, _ = inputs[g]
            for info, view in lay[g].tensors(p):
                s, _ = encode(view, rules[g], Segments([info], [0]), self.rank)
                index.append((g, info, len(parts)))
                parts.append(s)
        sizes = [t.numel() for t in parts]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        send = torch.cat(parts)
        if rec:
            self._enc_s += self._clock(rec, buf) - t
        outs = _all_gather_bytes(send, self.workers, self.pg)
        items = [(info, torch.stack([o[starts[i]:starts[i] + sizes[i]] for o in outs]), self.modes[g])
                 for g, info, i in index]
        t = self._clock(rec, buf)
        us = self.ctrl.aggregate(items, self.current_step)  # the vote, by nfabric serve's controller model
        if rec:
            self._vote_s += self._clock(rec, buf) - t
        for g in low:
            u = torch.cat([us[j] for j, (gg, _, _) in enumerate(index) if gg == g])
            self._finish(g, lay[g], buf, u, rules, inputs)

    def _fixed_via_controller(self, fmt: Format, seg: Segments, p: torch.Tensor) -> torch.Tensor:
        """allreduce_fixed through this rank's nfabric serve device: the INT8
        scale agreed by an all-reduce MAX, every rank's codes (BFP8: its
        mantissas and block exponents, blocks from each tensor's first
        element) all-gathered and written per parameter tensor into the
        tensor's sum region, the int16 sums (and E) read back and decoded
        to the mean as nfabric.torch.fixed does: the same bits."""
        name = fixed.parse_sum_format(str(fmt))
        views = seg.tensors(p)
        s = None
        if name == "int8":
            m = fixed.max_abs(p).reshape(1)
            if self.workers > 1:
                dist.all_reduce(m, op=dist.ReduceOp.MAX, group=self.pg)
            s = fixed.int8_scale(m[0])
            parts = [fixed.encode_int8(v, s) for _, v in views]
        else:
            parts = []
            for _, v in views:
                parts.extend(fixed.encode_bfp8(v))
        sizes = [t.numel() for t in parts]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        send = torch.cat(parts).view(torch.uint8) if parts else p.new_zeros(0, dtype=torch.uint8)
        outs = [o.view(torch.int8) for o in _all_gather_bytes(send, self.workers, self.pg)]

        def stacked(i: int) -> torch.Tensor:
            return torch.stack([o[starts[i]:starts[i] + sizes[i]] for o in outs])
        step = 2 if name == "bfp8" else 1
        items = [(info, name, stacked(step * j), stacked(step * j + 1) if name == "bfp8" else None)
                 for j, (info, _) in enumerate(views)]
        got = self.ctrl.sum_fixed(items, self.current_step) if items else []
        if name == "int8":
            dec = [fixed.decode_int8(t, s, self.workers) for t, _ in got]
        else:
            dec = [fixed.decode_bfp8(t, e, self.workers) for t, e in got]
        return torch.cat(dec).to(p.device) if dec else p.new_zeros(0)

    # -- error feedback ----------------------------------------------------

    def _residual(self, seg: Segments, buf: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.residuals[info.name] for info in seg.params]) if len(seg.params) > 1 else \
            self.residuals[seg.params[0].name].clone()

    def _store_residual(self, seg: Segments, res: torch.Tensor) -> None:
        for info, s0, n in zip(seg.params, seg.starts, seg.lengths):
            self.residuals[info.name].copy_(res[s0:s0 + n])


class AllRanks:
    """Every rank's Fabric state in one dict, for frameworks whose
    checkpoints rank 0 alone writes (Lightning's, Accelerate's
    ``register_for_checkpointing``): ``state_dict()`` gathers the ranks'
    entries (a collective: every rank calls it, as those frameworks do),
    residuals moved to the CPU; ``load_state_dict`` on each rank takes its
    own entry."""

    def __init__(self, fabric: "Fabric") -> None:
        self.fabric = fabric

    def state_dict(self) -> Dict[str, Any]:
        f = self.fabric
        mine = f.state_dict()
        for k, v in mine.items():
            if k.startswith("rank"):
                v["residuals"] = {n: t.cpu() for n, t in v["residuals"].items()}
        if not dist.is_initialized() or f.workers == 1:
            return mine
        parts: List[Any] = [None] * f.workers
        dist.all_gather_object(parts, mine, group=f.pg)
        out: Dict[str, Any] = {}
        for p in parts:
            out.update(p)
        return out

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.fabric.load_state_dict(state)


# No "from __future__ import annotations" in this file: DDP checks that the
# hook's annotations are the GradBucket and Future classes themselves.
def _hook(state: "Fabric", bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    return state.hook(bucket)


def register(model: torch.nn.Module, policy: PolicyArg = "g-binary",
             groups: GroupsArg = None, control: object = None, backend: str = "collective",
             process_group: Optional[dist.ProcessGroup] = None, serve: Optional[str] = None,
             token: Optional[str] = None, record: Optional[str] = None, record_steps: StepsArg = None,
             record_diagnostics: bool = False, optimizer: Optional[torch.optim.Optimizer] = None,
             steps: Optional[int] = None) -> Fabric:
    """Runs NEURON-Fabric aggregation in model's gradient synchronization:
    ``Fabric(policy, ...).bind(model, optimizer)``.

    model: a DistributedDataParallel model (the hook is its communication
    hook) or an FSDP2 model (``fully_shard``; each unit's reduce-scatter is
    replaced, see nfabric.torch.fsdp for what is refused).
    policy: a policy string (``"backbone=g-binary,head=fp32"``) or
    nfabric.policy.Policy, whose learning rates scale the low-bit update
    (the optimizer must run at ``policy.lr``; ``sign_lr="auto"`` measures
    each vote group's rate from its FP32 warm-up). groups: module-name
    patterns per group (default: the final classifier in ``head``, the rest
    in ``backbone``). control: None (the policy's modes), a local controller
    (nfabric.torch.control) or any object with ``decide(ctx)``. backend:
    ``"collective"`` (the packed planes exchanged, the vote where the data
    is) or ``"controller"`` (DDP only: the payload lines through the
    controller model of the ``nfabric serve`` at ``serve``; bit-identical
    updates). control may also be the address of an ``nfabric serve`` (a
    ServeControl with the plane's defaults) or a
    ``nfabric.torch.serve.ServeControl``. optimizer: checked against
    policy.lr and reset on mode switches (attach_optimizer). steps: the
    planned number of steps (warm-up and no-low-bit warnings). Every check
    (groups, policy, world size against the layout, backend, the server
    and its API version) runs here, before training starts.

    record: a .json path to record steps ``record_steps`` (an int N: steps
    1..N; a list of step numbers; default 1, 2, 3) as a bucket trace for
    ``nfabric whatif`` (rank 0 writes it; see nfabric.torch.record);
    record_diagnostics also measures the cosine diagnostics of the FP32
    groups on those steps (an all-gather of their sign planes; DDP only),
    which ``nfabric whatif --plan recorded`` turns into an admission plan.
    """
    fabric = Fabric(policy, groups, control, backend, process_group, serve, token, record, record_steps,
                    record_diagnostics, steps)
    return fabric.bind(model, optimizer)
