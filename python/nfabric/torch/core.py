"""The one aggregation mechanism the DDP hook and the virtual workers share:
a group's elements inside a flat vector (a DDP bucket, or the model's
gradients), what one worker encodes from them, and the vote of W workers'
payloads into the update."""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Optional, Tuple, Union

import torch

from .. import fixed, lowbit
from ..lowbit import Format, GateKind, Layout
from ..policy import RuleSpec
from .groups import ParamInfo


@dataclasses.dataclass
class Segments:
    """A group's elements inside one flat source vector: runs of whole
    parameter tensors (DDP never splits a tensor across buckets)."""

    params: List[ParamInfo]
    offsets: List[int]  # where each tensor starts in the source vector

    def __post_init__(self) -> None:
        self.lengths = [p.numel for p in self.params]
        self.n = sum(self.lengths)
        starts, s = [], 0
        for ln in self.lengths:
            starts.append(s)
            s += ln
        self.starts = starts  # where each tensor starts in the group vector
        self.contiguous = all(self.offsets[i] + self.lengths[i] == self.offsets[i + 1] for i in range(len(self.params) - 1))
        self._flat: Dict[torch.device, torch.Tensor] = {}
        self._keep: Dict[Tuple[int, torch.device], torch.Tensor] = {}

    def flat_index(self, device: torch.device) -> torch.Tensor:
        """Each element's index in the model's flattened parameter vector."""
        t = self._flat.get(device)
        if t is None:
            t = torch.cat([torch.arange(p.flat_base, p.flat_base + p.numel, dtype=torch.int64) for p in self.params]).to(device)
            self._flat[device] = t
        return t

    def keep(self, period: int, device: torch.device) -> torch.Tensor:
        """The period-p pattern gate's keep mask over the group's elements,
        tiled per parameter tensor from its flattened index."""
        key = (period, device)
        t = self._keep.get(key)
        if t is None:
            t = torch.cat([lowbit.pattern_keeps(period, p.flat_base, p.numel, device) for p in self.params])
            self._keep[key] = t
        return t

    def gather(self, src: torch.Tensor) -> torch.Tensor:
        if not self.params:  # an FSDP2 shard may hold none of a group's elements
            return src[:0]
        if self.contiguous:
            return src[self.offsets[0]:self.offsets[0] + self.n]
        return torch.cat([src[o:o + n] for o, n in zip(self.offsets, self.lengths)])

    def scatter(self, dst: torch.Tensor, vals: torch.Tensor) -> None:
        if not self.params:
            return
        if self.contiguous:
            dst[self.offsets[0]:self.offsets[0] + self.n].copy_(vals)
            return
        for o, s, n in zip(self.offsets, self.starts, self.lengths):
            dst[o:o + n].copy_(vals[s:s + n])

    def tensors(self, v: torch.Tensor) -> List[Tuple[ParamInfo, torch.Tensor]]:
        """Views of a group vector, one per parameter tensor."""
        return [(p, v[s:s + n]) for p, s, n in zip(self.params, self.starts, self.lengths)]


def lowbit_spec(rule: RuleSpec, workers: int, layout: Layout) -> lowbit.Spec:
    return lowbit.Spec(workers, layout, rule.rule, rule.gate if rule.rule == Format.TERNARY else lowbit.Gate())


def ef_input(g: torch.Tensor, residual: Optional[torch.Tensor], rule: RuleSpec) -> torch.Tensor:
    """The payload source p: g, or g + e with error feedback."""
    if not rule.ef or residual is None:
        return g
    return g + residual


def ef_commit(p: torch.Tensor, residual: torch.Tensor, seg: Segments) -> None:
    """e <- p - s (2b - 1), s = mean |p| over each parameter tensor (summed in
    float64, as the Go trainer does), b = 1{p > 0}."""
    for _, (s0, n) in enumerate(zip(seg.starts, seg.lengths)):
        pp = p[s0:s0 + n]
        sc = pp.abs().double().mean().float() if n else torch.zeros((), device=p.device)
        residual[s0:s0 + n] = pp - sc * ((pp > 0).to(pp.dtype) * 2 - 1)


def worker_tau(p: torch.Tensor, seg: Segments, rule: RuleSpec) -> torch.Tensor:
    """Per-element worker-gate thresholds: gate_tau (0 means 1) times the
    mean |p| of the element's parameter tensor."""
    rel = rule.gate_tau or 1.0
    parts = []
    for s0, n in zip(seg.starts, seg.lengths):
        m = p[s0:s0 + n].abs().double().mean().float() if n else torch.zeros((), device=p.device)
        parts.append((rel * m).expand(n))
    return torch.cat(parts) if parts else p.new_zeros(0)


def nonfinite(p: torch.Tensor) -> torch.Tensor:
    """A 0-d float tensor, 1 when p holds a NaN or Inf (no host sync)."""
    return lowbit.any_nonfinite(p).to(torch.float32)


def encode(p: torch.Tensor, rule: RuleSpec, seg: Segments, worker: Optional[int] = None,
           tau: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """One worker's payload of a group: its sign plane and, for the worker
    gate, its gate plane (thresholds tau, default worker_tau(p, seg, rule):
    give them when p holds parts of parameter tensors, as an FSDP2 shard
    does). Raises lowbit.NonFiniteError."""
    signs = lowbit.encode_signs(p, worker)
    gates = None
    if rule.rule == Format.TERNARY and rule.gate.kind == GateKind.WORKER:
        gates = lowbit.encode_gates(p, worker_tau(p, seg, rule) if tau is None else tau, worker)
    return signs, gates


def vote(signs: torch.Tensor, gates: Optional[torch.Tensor], seg: Segments, rule: RuleSpec, layout: Layout) -> torch.Tensor:
    """The int8 aggregate of W workers' planes [W, nb] of the group, through
    the layout (element-major: the runtime's gather into the paper's packet,
    then the packet vote)."""
    w = signs.shape[0]
    spec = lowbit_spec(rule, w, layout)
    idx = seg.flat_index(signs.device)
    keep = None
    if rule.rule == Format.TERNARY and rule.gate.kind == GateKind.PATTERN:
        keep = seg.keep(rule.gate.effective_period(), signs.device)
    if layout == Layout.ELEMENT_MAJOR:
        packet = lowbit.planes_to_packet(signs, seg.n)
        gp = lowbit.planes_to_packet(gates, seg.n) if gates is not None else None
        return lowbit.vote_packet(packet, spec, idx, gp, keep)
    return lowbit.vote_planes(signs, seg.n, spec, idx, gates, keep)


def update(signs, gates, seg: Segments, rule: RuleSpec, layout: Layout, scale: float,
           out: torch.Tensor) -> None:
    """Writes the group's FP32 update scale * vote(...) into out (seg.n
    values): the same values as ``vote(...).to(out.dtype) * scale``. signs
    and gates may be sequences of W received planes (no stacking); worker-
    major planes go through lowbit.vote_update (on the Go library for CPU
    tensors: the vote and the decode, no int8 vector between)."""
    if layout == Layout.WORKER_MAJOR:
        w = signs.shape[0] if isinstance(signs, torch.Tensor) else len(signs)
        dev = out.device
        keep = None
        if rule.rule == Format.TERNARY and rule.gate.kind == GateKind.PATTERN:
            keep = seg.keep(rule.gate.effective_period(), dev)
        lowbit.vote_update(signs, seg.n, lowbit_spec(rule, w, layout), scale, seg.flat_index(dev), gates, keep, out)
        return
    stack = (lambda t: t if t is None or isinstance(t, torch.Tensor) else torch.stack(list(t)))
    out.copy_(vote(stack(signs), stack(gates), seg, rule, layout).to(out.dtype) * scale)


def payload_bytes(rule: RuleSpec, n: int, element_size: int = 4) -> int:
    """Bytes one worker sends for n elements of a group under rule
    (element_size: the dense path's bytes an element)."""
    if rule.rule == Format.FP32:
        return element_size * n
    if rule.rule.sum():
        return fixed.payload_bytes(str(rule.rule), n)
    planes = 2 if rule.rule == Format.TERNARY and rule.gate.kind == GateKind.WORKER else 1
    return planes * lowbit.plane_bytes(n)


class Cosines:
    """Per-group accumulators of the diagnostics the admission ladder reads:
    the cosine to the FP32 mean, over a step's elements, of the G-Binary
    and G-Ternary (the paper's 2-of-3 gate) votes and of every summed
    format in ``formats`` (INT8, BFP8: extensions beyond the paper), as
    Go's train.StepFormatCosines computes them: the summed formats'
    aggregates are the decoded lane sums of nfabric.fixed, one bucket per
    parameter tensor (INT8 agrees one scale per tensor, BFP8 blocks start
    at each tensor's first element), so a ladder with INT8/BFP8 rungs has
    a cosine for each of them.

    A format outside the ladder's rungs is not measured (the plane reads
    an absent cosine as "not measured": that rung admits nothing)."""

    def __init__(self, formats: Iterable[Union[Format, str]] = ()) -> None:
        want = {f if isinstance(f, Format) else lowbit.parse_format(str(f)) for f in formats}
        self.sums: Tuple[Format, ...] = tuple(f for f in Format if f.sum() and f in want)
        self.acc: Dict[str, Dict[Format, List[float]]] = {}

    def _acc(self, group: str, f: Format, u: torch.Tensor, m: torch.Tensor) -> None:
        a = self.acc.setdefault(group, {}).setdefault(f, [0.0, 0.0, 0.0])
        for i, v in enumerate([float(u @ m), float(u @ u), float(m @ m)]):
            a[i] += v

    def add(self, group: str, signs: torch.Tensor, seg: Segments, mean: torch.Tensor,
            grads: Optional[torch.Tensor] = None, summed: Optional[Dict[Format, torch.Tensor]] = None) -> None:
        """signs: the W workers' sign planes [W, nb] of the group's elements;
        mean: their FP32 mean. The summed formats need either grads, the W
        workers' gradients [W, n] (encoded here, in one process), or summed,
        each format's decoded aggregate [n] of the group's elements computed
        elsewhere with the same buckets (the DDP hook: one
        nfabric.torch.fixed.allreduce_fixed per parameter tensor)."""
        spec = lowbit.Spec(signs.shape[0], Layout.WORKER_MAJOR, Format.BINARY)
        u = lowbit.vote_planes(signs, seg.n, spec, 0).to(torch.float64)
        t = u * seg.keep(3, u.device).to(torch.float64)
        m = mean.to(torch.float64)
        self._acc(group, Format.BINARY, u, m)
        self._acc(group, Format.TERNARY, t, m)
        if not self.sums:
            return
        if summed is not None:
            for f in self.sums:
                v = summed.get(f)
                if v is None or v.shape != (seg.n,):
                    raise ValueError(f"group {group}: the {f} cosine needs its aggregate [{seg.n}], got "
                                     f"{None if v is None else tuple(v.shape)}")
                self._acc(group, f, v.to(torch.float64), m)
            return
        if grads is None or grads.dim() != 2 or grads.shape[1] != seg.n:
            raise ValueError(f"group {group}: the {', '.join(map(str, self.sums))} cosines need the workers' "
                             f"gradients [W, {seg.n}]")
        for f in self.sums:
            name = str(f)
            parts = [fixed.aggregate_workers(name, [grads[k, s:s + n] for k in range(grads.shape[0])])
                     for s, n in zip(seg.starts, seg.lengths)]
            v = torch.cat(parts) if parts else m.new_zeros(0)
            self._acc(group, f, v.to(torch.float64), m)

    def take(self) -> Dict[str, Dict[Format, float]]:
        """Each group's cosine per measured format (G-Binary, G-Ternary,
        then the summed formats), and a fresh start. A zero vector's cosine
        is 0, as Go's."""
        def cos(dot: float, nu: float, nm: float) -> float:
            return dot / (nu * nm) ** 0.5 if nu > 0 and nm > 0 else 0.0
        out = {g: {f: cos(*a) for f, a in fs.items()} for g, fs in self.acc.items()}
        self.acc = {}
        return out
