"""NEURON-Fabric aggregation under FSDP2 (``torch.distributed.fsdp.fully_shard``).

FSDP2 reduce-scatters each unit's gradients once per step: every rank
holds the full (unsharded) gradient of the unit, laid out as W rows, row r
holding, for each parameter in turn, the rows of dim 0 that rank r owns
(padded to equal size), and receives the reduction of its own row. A
reduce-scatter is the aggregation half of an all-reduce, so each rank can
aggregate its own shard from every rank's payload for that shard:
``Fabric.bind`` replaces every unit's reduce-scatter
(``FSDPModule.set_custom_reduce_scatter``) with one that, per layer group
of the unit and under the step's mode,

* FP32: runs FSDP's own reduce-scatter (the whole unit when every group is
  on FP32 this step, else one reduce-scatter of the FP32 groups' columns):
  FSDP's bits, at the reduce dtype;
* G-Binary / G-Ternary: each rank packs the signs (and worker-gate bits)
  of its whole gradient, one plane per destination shard, exchanges them
  with an all-to-all (rank r receives every rank's planes of its shard
  only: 1/32 of FSDP's bytes), and votes its shard as the DDP hook votes a
  bucket: the positional gate on each element's index in the flattened
  parameter vector, error feedback and the worker gate's thresholds over
  whole parameter tensors (each rank has them), the same scale;
* INT8 / BFP8 (beyond the paper): the INT8 scale (one per unit and group,
  an all-reduce MAX) or BFP8's block exponents (per parameter tensor, an
  all-reduce MAX) are agreed first, then each rank sends every shard its
  int8 codes (BFP8: mantissas aligned to the agreed exponents) and sums its
  own exactly, saturating once, as the controller does.

A NaN or Inf in a low-bit group on any rank (a one-element all-reduce MAX)
sends the unit to FSDP's own reduce-scatter on every rank that step. The
controller is asked on rank 0 before a step's first unit and its answer
broadcast, as under DDP; the step ends when backward ends (an autograd
final callback). The updates are bit for bit those of the DDP hook and the
virtual workers on the same gradients (the tests check 2 and 4 gloo ranks).

Refused at bind, with the reason: HSDP and replicated meshes (FSDP would
average the shard group's votes over the replicas in floating point, which
is not a vote of all W workers), ``MixedPrecisionPolicy(reduce_dtype=
torch.float16)``, ``set_gradient_divide_factor`` and
``set_force_sum_reduction_for_comms`` when a group can run low-bit (FSDP
pre- and post-divides the reduce-scatter's data, which a vote does not
commute with), sharding on a dimension other than 0
(``shard_placement_fn``), several parameter groups in one unit (per-
parameter meshes), a custom reduce-scatter already set, the controller
backend, and cosine diagnostics (``diag_every``, ``record_diagnostics``:
use DDP or the virtual workers to calibrate). ``reduce_dtype=
torch.bfloat16`` works: the vote is exact and the update ``u * scale`` is
rounded to bfloat16, as FSDP's own output is.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from .. import fixed, lowbit
from ..lowbit import Format
from .core import Segments, ef_commit, ef_input, encode, nonfinite, update, worker_tau
from .stats import RecoveryEvent

__all__ = ["check", "bind", "reduce_dtypes", "units"]

try:  # the torch versions with FSDP2 (2.6 and later)
    from torch.distributed.fsdp._fully_shard._fsdp_collectives import DefaultReduceScatter as _DefaultRS
except Exception:  # noqa: BLE001 - older torch: check() refuses before any use
    _DefaultRS = object  # type: ignore[assignment,misc]


@dataclasses.dataclass
class Piece:
    """A run of one parameter's elements (its flattened index flat_base
    onward): what Segments needs for the gate and the vote."""

    name: str
    numel: int
    flat_base: int


def units(model: torch.nn.Module) -> List[Tuple[str, Any]]:
    """The model's fully_shard units, (name, module), root first."""
    from .hook import _fsdp2_module_class
    cls = _fsdp2_module_class()
    return [(n, m) for n, m in model.named_modules() if cls is not None and isinstance(m, cls)]


def _param_groups(unit: Any) -> list:
    return list(unit._get_fsdp_state()._fsdp_param_groups)


def check(fabric: Any, model: torch.nn.Module) -> None:
    """Refuses (ValueError, saying why) the FSDP2 configurations this
    aggregation does not support, before anything is changed."""
    need = ("set_custom_reduce_scatter", "_get_fsdp_state")
    if _DefaultRS is object or not all(hasattr(model, a) for a in need):
        raise ValueError(f"this torch ({torch.__version__}) lacks the FSDP2 reduce-scatter hook nfabric uses "
                         "(FSDPModule.set_custom_reduce_scatter): use torch >= 2.6 (tested on 2.15)")
    may_low = fabric.controller is not None or any(fabric.policy.spec(g).low_bit() for g in fabric.policy.rules if g)
    if getattr(fabric.control_object, "diag_every", 0) or fabric._record_args[2]:
        raise ValueError("cosine diagnostics (diag_every, record_diagnostics) run under DDP or the virtual workers, "
                         "not FSDP2: calibrate the admission ladder there")
    world = dist.get_world_size(fabric.pg)
    pnames = {id(p): n for n, p in model.named_parameters()}
    for name, unit in units(model):
        where = f"FSDP unit {name or '(root)'}"
        pgs = _param_groups(unit)
        if len(pgs) > 1:
            raise ValueError(f"{where} has {len(pgs)} parameter groups (per-parameter meshes): one custom "
                             "reduce-scatter cannot serve them; nfabric needs one mesh per unit")
        for pg in pgs:
            mesh = type(pg.mesh_info).__name__
            if "HSDP" in mesh or "DDP" in mesh:
                raise ValueError(f"{where}: HSDP / replicated meshes are refused: FSDP would average each shard "
                                 "group's votes over the replicas in floating point, not vote over all W workers; "
                                 "use a 1-D mesh (fully_shard over every rank) or DDP")
            if type(pg._reduce_scatter_comm).__name__ not in ("DefaultReduceScatter", "UnitReduceScatter"):
                raise ValueError(f"{where} already has a custom reduce-scatter "
                                 f"({type(pg._reduce_scatter_comm).__name__}); nfabric would replace it")
            if not hasattr(pg, "_prepare_reduce_scatter_inputs"):
                raise ValueError(f"this torch's FSDP2 ({torch.__version__}) does not expose the reduce-scatter "
                                 "input layout nfabric reads: tested on torch 2.15")
            rsg = getattr(pg, "_reduce_scatter_process_group", None)
            if rsg is None or rsg.size() != world:
                raise ValueError(f"{where} reduce-scatters over {None if rsg is None else rsg.size()} ranks, the "
                                 f"process group nfabric was given has {world}: pass process_group= FSDP's mesh group")
            for fp in pg.fsdp_params:
                d = fp.fsdp_placement.dim
                if d != 0:
                    raise ValueError(f"{where}: parameter {pnames.get(id(fp.sharded_param), '?')} is sharded on dim {d}; "
                                     "nfabric supports FSDP2's default Shard(0) only")
                if fp.sharded_param.dim() == 0:
                    raise ValueError(f"{where}: a 0-dimensional parameter ({pnames.get(id(fp.sharded_param), '?')}) cannot "
                                     "be sharded on dim 0")
            if may_low:
                if any(_reduce_dtype(fp) == torch.float16 for fp in pg.fsdp_params):
                    raise ValueError(f"{where}: MixedPrecisionPolicy(reduce_dtype=torch.float16) makes FSDP divide "
                                     "the gradients before and after the reduce-scatter, which a vote cannot undo; "
                                     "use reduce_dtype=torch.bfloat16 or torch.float32")
                if getattr(pg, "gradient_divide_factor", None) is not None:
                    raise ValueError(f"{where}: set_gradient_divide_factor changes FSDP's reduction, which the "
                                     "low-bit path does not reproduce; leave it unset")
                if getattr(pg, "force_sum_reduction_for_comms", False):
                    raise ValueError(f"{where}: set_force_sum_reduction_for_comms makes FSDP pre- and post-divide; "
                                     "leave it off")


def reduce_dtypes(model: torch.nn.Module) -> Dict[str, torch.dtype]:
    """Each parameter's reduce dtype (MixedPrecisionPolicy.reduce_dtype, or
    its own), by name: the dtype its error-feedback residual is kept in."""
    names = {id(p): n for n, p in model.named_parameters()}
    out = {}
    for _, unit in units(model):
        for pg in _param_groups(unit):
            for fp in pg.fsdp_params:
                n = names.get(id(fp.sharded_param))
                if n is not None:
                    out[n] = _reduce_dtype(fp) or fp.sharded_param.dtype
    return out


def _reduce_dtype(fp: Any) -> Optional[torch.dtype]:
    """An FSDPParam's reduce dtype from its MixedPrecisionPolicy (set before
    FSDP's lazy init, unlike the attribute it derives)."""
    mp = getattr(fp, "mp_policy", None)
    return getattr(mp, "reduce_dtype", None) or getattr(fp, "reduce_dtype", None)


def bind(fabric: Any, model: torch.nn.Module) -> None:
    """Sets every unit's reduce-scatter to nfabric's."""
    bound = []
    for name, unit in units(model):
        pg = _param_groups(unit)[0] if _param_groups(unit) else None
        if pg is None:
            continue
        comm = UnitReduceScatter(fabric, name or "(root)")
        unit.set_custom_reduce_scatter(comm)
        prep = pg._prepare_reduce_scatter_inputs

        def prepare(fsdp_params, grads, world, prep=prep, comm=comm):
            sizes = prep(fsdp_params, grads, world)
            comm.pending = (list(fsdp_params), tuple(sizes))
            return sizes
        pg._prepare_reduce_scatter_inputs = prepare
        bound.append((name or "(root)", unit, comm))
    fabric.units = bound
    world = fabric.workers
    if world > 1:
        fabric.auto_reduce = lambda t: dist.all_reduce(t, group=fabric.pg)


class UnitLayout:
    """Where a unit's groups sit in its reduce-scatter input (W rows of
    `row` elements) and which of their elements each shard holds."""

    def __init__(self, fabric: Any, fsdp_params: Sequence[Any], sizes: Sequence[torch.Size], world: int, rank: int):
        self.world, self.rank = world, rank
        a = fabric.assignment
        self.cols: Dict[str, List[Tuple[Any, int, int, int, int]]] = {}  # group -> (info, col0, chunk, c, rest)
        col = 0
        for fp, ps in zip(fsdp_params, sizes):
            info = a.info(fp.sharded_param)
            shape = tuple(info.param.shape)
            if tuple(ps[1:]) != shape[1:] or ps[0] % world or ps[0] < shape[0]:
                raise RuntimeError(f"FSDP laid out {info.name} as {tuple(ps)}, not as dim-0 chunks of {shape}")
            chunk = ps.numel() // world
            rest = chunk // (ps[0] // world) if ps[0] else 0
            self.cols.setdefault(info.group, []).append((info, col, chunk, ps[0] // world, rest))
            col += chunk
        self.row = col
        self.groups = [g for g in fabric.groups if g in self.cols]
        self.n = {g: sum(m[0].numel for m in ms) for g, ms in self.cols.items()}
        # full[g]: the group's whole parameters concatenated (model order of
        # the unit), for error feedback and the worker gate's thresholds.
        self.full = {g: Segments([m[0] for m in ms], _offsets([m[0].numel for m in ms])) for g, ms in self.cols.items()}
        # dest[g][r]: the group's elements in row r, as runs of the full
        # vector; mine[g]: the same runs for this rank, as columns of its row.
        self.dest: Dict[str, List[Segments]] = {}
        self.mine: Dict[str, Segments] = {}
        for g, ms in self.cols.items():
            offs = _offsets([m[0].numel for m in ms])
            per = []
            for r in range(world):
                pieces, src, dst = [], [], []
                for (info, col0, _chunk, c, rest), off in zip(ms, offs):
                    start = r * c * rest
                    k = max(0, min(c * rest, info.numel - start))
                    if k:
                        pieces.append(Piece(info.name, k, info.flat_base + start))
                        src.append(off + start)
                        dst.append(col0)
                per.append(Segments(pieces, src))  # type: ignore[arg-type]
                if r == rank:
                    self.mine[g] = Segments(list(pieces), dst)  # type: ignore[arg-type]
            self.dest[g] = per

    def gather_full(self, g: str, inp: torch.Tensor) -> torch.Tensor:
        """The group's whole gradients (the full vector) from the input."""
        rows = inp.view(self.world, self.row)
        parts = [rows[:, col0:col0 + chunk].reshape(-1)[:info.numel] for info, col0, chunk, _c, _r in self.cols[g]]
        return torch.cat(parts) if len(parts) > 1 else parts[0].contiguous()

    def columns(self, gs: Sequence[str]) -> List[Tuple[int, int]]:
        """The groups' column ranges in a row (padding included)."""
        return [(col0, chunk) for g in gs for _info, col0, chunk, _c, _r in self.cols[g]]


def _offsets(lengths: Sequence[int]) -> List[int]:
    out, o = [], 0
    for n in lengths:
        out.append(o)
        o += n
    return out


class UnitReduceScatter(_DefaultRS):  # type: ignore[misc,valid-type]
    """One FSDP unit's reduce-scatter through the Fabric (see the module
    doc). FSDP allocates the buffers as its default does."""

    def __init__(self, fabric: Any, name: str):
        self.fabric, self.name = fabric, name
        self.pending: Optional[Tuple[list, tuple]] = None
        self._layouts: Dict[Tuple[Any, ...], UnitLayout] = {}

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, group: dist.ProcessGroup,
                 op: Any, async_op: bool = False) -> Optional[dist.Work]:
        f = self.fabric
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            work = reduce_scatter(f, self, output_tensor, input_tensor, group, op)
        finally:
            f.stats.add_time(time.perf_counter() - t0, time.thread_time() - c0)
        if async_op and work is None:
            return _Done()
        return work

    def layout(self, world: int, rank: int) -> UnitLayout:
        if self.pending is None:
            raise RuntimeError(f"FSDP unit {self.name}: the reduce-scatter ran without its input layout "
                               "(nfabric's hook on FSDP's input preparation did not run)")
        params, sizes = self.pending
        key = (tuple(id(p) for p in params), sizes)
        lay = self._layouts.get(key)
        if lay is None:
            lay = self._layouts[key] = UnitLayout(self.fabric, params, sizes, world, rank)
        return lay


class _Done:
    """A finished Work for FSDP's async_op calls (the CPU path is synchronous)."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def _end_callback(fabric: Any) -> None:
    if fabric._open:
        fabric._end_step()


def reduce_scatter(f: Any, comm: UnitReduceScatter, output: torch.Tensor, inp: torch.Tensor,
                   group: dist.ProcessGroup, op: Any) -> Optional[dist.Work]:
    """The unit's reduce-scatter under this step's modes (module doc)."""
    t_entry = time.perf_counter()
    if not f._open:
        f._begin_step(inp.device)
        try:
            torch.autograd.Variable._execution_engine.queue_callback(lambda: _end_callback(f))
        except RuntimeError:
            f._open = False
            raise RuntimeError("nfabric: an FSDP2 reduce-scatter ran outside backward; nfabric ends its step when "
                               "backward ends") from None
    w, rank = f.workers, f.rank
    lay = comm.layout(w, rank)
    comm.pending = None
    es = inp.element_size()
    f.buckets[comm.name] = [m[0].name for g in lay.groups for m in lay.cols[g]]
    low = [g for g in lay.groups if f.modes[g] != Format.FP32]
    f._enc_s = f._vote_s = 0.0
    fell = False
    if low and w > 1 and op != dist.ReduceOp.AVG:
        raise RuntimeError(f"nfabric: FSDP unit {comm.name} asked for a reduce-scatter with {op}, not AVG (a float16 "
                           "reduce dtype, a gradient divide factor or forced sums set after bind): the low-bit path "
                           "cannot reproduce it")
    if low:
        rules = {g: f.rule(g) for g in low}
        inputs = {}
        for g in low:
            res = f._residual(lay.full[g], inp) if rules[g].ef else None
            inputs[g] = (ef_input(lay.gather_full(g, inp), res, rules[g]), res)
        flag = torch.stack([nonfinite(inputs[g][0]) for g in low]).max().reshape(1)
        if w > 1:
            t = time.perf_counter()
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
            f.stats.add_wait(time.perf_counter() - t)
            f.stats.add_header(4)
        if flag.item() > 0:
            fell = True
            f.stats.event(RecoveryEvent(f.current_step, "nonfinite", tuple(low), None))
            if rank == 0:
                f.report_nonfinite(low)
            low = []
    if not low:
        # FSDP's own reduce-scatter of the whole unit.
        _DefaultRS.__call__(comm, output_tensor=output, input_tensor=inp, group=group, op=op)
        for g in lay.groups:
            f.stats.add(g, Format.FP32, es * lay.n[g], lay.n[g], es)
            f.auto.observe(f.current_step, g, lay.mine[g].gather(output))
        _record(f, lay, t_entry, es, fell)
        return None
    output.zero_()  # padding stays zero; every group's columns are written below
    fp = [g for g in lay.groups if g not in rules]
    if fp:
        cols = lay.columns(fp)
        rows = inp.view(w, lay.row)
        part = torch.cat([rows[:, c0:c0 + n] for c0, n in cols], dim=1).reshape(-1)
        out = part.new_empty(part.numel() // w)
        _DefaultRS.__call__(comm, output_tensor=out, input_tensor=part, group=group, op=op)
        o = 0
        for c0, n in cols:
            output[c0:c0 + n].copy_(out[o:o + n])
            o += n
        for g in fp:
            f.stats.add(g, Format.FP32, es * lay.n[g], lay.n[g], es)
            f.auto.observe(f.current_step, g, lay.mine[g].gather(output))
    votes = [g for g in low if rules[g].rule.vote()]
    sums = [g for g in low if rules[g].rule.sum()]
    if votes:
        _votes(f, lay, votes, rules, inputs, output, group)
    for g in sums:
        _sums(f, lay, g, rules[g], inputs[g][0], output, group)
    for g in low:
        p, res = inputs[g]
        if res is not None:
            ef_commit(p, res, lay.full[g])
            f._store_residual(lay.full[g], res)
    _record(f, lay, t_entry, es, False)
    return None


def _record(f: Any, lay: UnitLayout, t_entry: float, es: int, fell: bool) -> None:
    if f.recording():
        groups = [(g, lay.n[g], "fp32" if fell else str(f.modes[g])) for g in lay.groups]
        n = sum(lay.n.values())
        f.recorder.bucket(t_entry, time.perf_counter() - t_entry, es * n, n, groups, f._enc_s, f._vote_s)


def _all_to_all(send: torch.Tensor, splits: List[int], mine: int, world: int, group: dist.ProcessGroup
                ) -> List[torch.Tensor]:
    """Every rank's `mine` bytes for this rank, as W views."""
    recv = send.new_empty(mine * world)
    if world == 1:
        recv.copy_(send)
    else:
        dist.all_to_all_single(recv, send, output_split_sizes=[mine] * world, input_split_sizes=splits, group=group)
    return list(recv.view(world, mine)) if mine else [recv[:0]] * world


def _votes(f: Any, lay: UnitLayout, votes: List[str], rules: Dict[str, Any], inputs: Dict[str, Any],
           output: torch.Tensor, group: dist.ProcessGroup) -> None:
    """G-Binary / G-Ternary groups: planes per destination, an all-to-all,
    the vote of this rank's shard."""
    w, rank = f.workers, f.rank
    t = time.perf_counter()
    taus = {g: worker_tau(inputs[g][0], lay.full[g], rules[g]) for g in votes
            if rules[g].rule == Format.TERNARY and rules[g].gate.kind == lowbit.GateKind.WORKER}
    parts: List[List[torch.Tensor]] = []
    try:
        for r in range(w):
            row = []
            for g in votes:
                seg = lay.dest[g][r]
                p = seg.gather(inputs[g][0])
                tau = seg.gather(taus[g]) if g in taus else None
                s, gt = encode(p, rules[g], seg, rank, tau)
                row.append(s)
                if gt is not None:
                    row.append(gt)
            parts.append(row)
    except lowbit.NonFiniteError:  # agreed on before; cannot happen
        raise
    sends = [torch.cat(row) if len(row) > 1 else row[0] for row in parts]
    splits = [s.numel() for s in sends]
    f._enc_s += time.perf_counter() - t
    t = time.perf_counter()
    outs = _all_to_all(torch.cat(sends), splits, splits[rank], w, group)
    f.stats.add_wait(time.perf_counter() - t)
    t = time.perf_counter()
    o = 0
    for g in votes:
        seg = lay.mine[g]
        nb = lowbit.plane_bytes(seg.n)
        signs = [x[o:o + nb] for x in outs]
        o += nb
        gates = None
        if g in taus:
            gates = [x[o:o + nb] for x in outs]
            o += nb
        if seg.n:  # a shard may hold none of the group's elements (FSDP pads)
            vals = torch.empty(seg.n, dtype=output.dtype, device=output.device)
            update(signs, gates, seg, rules[g], f.layout, f.scale(g), vals)
            seg.scatter(output, vals)
        sent = sum(lowbit.plane_bytes(lay.dest[g][r].n) for r in range(w)) * (2 if g in taus else 1)
        f.stats.add(g, f.modes[g], sent, lay.n[g], output.element_size())
    f._vote_s += time.perf_counter() - t


def _sums(f: Any, lay: UnitLayout, g: str, rule: Any, p: torch.Tensor, output: torch.Tensor,
          group: dist.ProcessGroup) -> None:
    """INT8 / BFP8: agree the scale or exponents, send each shard its codes,
    sum this rank's exactly, saturate once, decode."""
    w, rank = f.workers, f.rank
    name = fixed.parse_sum_format(str(rule.rule))
    full = lay.full[g]
    if name == "int8":
        m = fixed.max_abs(p).reshape(1)
        if w > 1:
            dist.all_reduce(m, op=dist.ReduceOp.MAX, group=group)
        s = fixed.int8_scale(m[0])
        codes = fixed.encode_int8(p, s).reshape(-1)
        tops = None
    else:
        enc = [fixed.encode_bfp8(v) for _info, v in full.tensors(p)]
        nbs = [e.numel() for _, e in enc]
        top = torch.cat([e for _, e in enc]).to(torch.int32)
        if w > 1:
            dist.all_reduce(top, op=dist.ReduceOp.MAX, group=group)
        tops = list(torch.split(top, nbs))
        codes = torch.cat([fixed.align_bfp8(mt, e, tp) for (mt, e), tp in zip(enc, tops)]).to(torch.int8)
    sends = [lay.dest[g][r].gather(codes) for r in range(w)]
    splits = [x.numel() for x in sends]
    mine = lay.mine[g]
    outs = _all_to_all(torch.cat(sends).view(torch.uint8), splits, mine.n, w, group)
    total = torch.stack([x.view(torch.int8) for x in outs]).to(torch.int32).sum(dim=0)
    total = total.clamp(fixed.SUM_MIN, fixed.SUM_MAX).to(torch.int16)
    if name == "int8":
        mean = fixed.decode_int8(total, s, w)
    else:
        # Each element's block maximum: its tensor's block (index // 64 from
        # the tensor's first element), whichever shard holds it.
        tensor_tops = {info.name: tp for (info, _v), tp in zip(full.tensors(p), tops)}
        e = torch.cat([tensor_tops[pc.name][(pc.flat_base - _base(full, pc.name) +
                                             torch.arange(pc.numel)) // fixed.BFP_BLOCK] for pc in mine.params]) \
            if mine.n else torch.zeros(0, dtype=torch.int32)
        mean = (torch.ldexp(total.double(), (e.to(torch.int64) - 7).double()) / float(w)).float()
    mine.scatter(output, mean.to(output.dtype) * f.scale(g))  # as the DDP hook's _finish
    f.stats.add(g, f.modes[g], sum(splits) + (4 if name == "int8" else sum(t.numel() for t in tops)), lay.n[g],
                output.element_size())


def _base(full: Segments, name: str) -> int:
    for info in full.params:
        if info.name == name:
            return info.flat_base
    raise KeyError(name)
