"""INT8 and BFP8 groups in the DDP hook and the virtual workers (extensions
beyond the paper; ``nfabric.fixed`` holds the kernels and their math).

On W ranks, one bucket segment of a group:

* INT8: the ranks agree on the scale by an all-reduce MAX of one float32
  each (max |g| of the segment), every rank encodes its codes with it, an
  all-reduce SUM adds the codes in int32 (exact), and the sum is saturated
  once to int16, as the controller's read-side transform, then decoded to
  the mean.
* BFP8 (blocks of 64 from each parameter tensor's first element): every
  rank encodes with its own block exponents; an all-reduce MAX
  of the exponents gives each block's E, every rank aligns its own
  mantissas to E (the controller's round-to-nearest shift, done where the
  mantissas are), an all-reduce SUM adds them in int32, and the sum is
  saturated to int16 and decoded.

The result is bit for bit Go's lowbit.SumInt8/SumBFP8 of the same payloads
(what the controller returns), since saturating once after an exact sum is
the controller's arithmetic. The all-reduce carries int32 lanes; the
statistics count the format's payload (nfabric.fixed.payload_bytes), as a
controller would carry it.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import torch
import torch.distributed as dist

from .. import fixed
from ..lowbit import Format

__all__ = ["allreduce_fixed", "aggregate_fixed"]


def _split(p: torch.Tensor, lengths: Sequence[int]) -> List[torch.Tensor]:
    out, o = [], 0
    for n in lengths:
        out.append(p[o:o + n])
        o += n
    return out


def allreduce_fixed(fmt: Format, p: torch.Tensor, lengths: Sequence[int], workers: int,
                    pg: Optional[dist.ProcessGroup]) -> torch.Tensor:
    """The decoded mean over the ranks of this rank's segment p under a
    summed format (collective: every rank calls it with its own p).
    lengths are the segment's parameter tensors in order: BFP8 blocks start
    at each tensor's first element (as the Go trainer, one bucket per
    tensor), so DDP's bucket order never moves a block boundary; INT8 agrees
    one scale for the whole segment (its bucket)."""
    name = fixed.parse_sum_format(str(fmt))
    fixed.check_sum_workers(name, workers)
    if name == "int8":
        m = fixed.max_abs(p).reshape(1)
        if workers > 1:
            dist.all_reduce(m, op=dist.ReduceOp.MAX, group=pg)
        s = fixed.int8_scale(m[0])
        q = fixed.encode_int8(p, s).to(torch.int32)
        if workers > 1:
            dist.all_reduce(q, op=dist.ReduceOp.SUM, group=pg)
        return fixed.decode_int8(q.clamp(fixed.SUM_MIN, fixed.SUM_MAX).to(torch.int16), s, workers)
    enc = [fixed.encode_bfp8(t) for t in _split(p, lengths)]
    nb = [e.numel() for _, e in enc]
    top = torch.cat([e for _, e in enc]).to(torch.int32) if enc else p.new_zeros(0, dtype=torch.int32)
    if workers > 1:
        dist.all_reduce(top, op=dist.ReduceOp.MAX, group=pg)
    tops = _split(top, nb)
    a = torch.cat([fixed.align_bfp8(m, e, t) for (m, e), t in zip(enc, tops)]) if enc else p.new_zeros(0, dtype=torch.int32)
    if workers > 1:
        dist.all_reduce(a, op=dist.ReduceOp.SUM, group=pg)
    total = a.clamp(fixed.SUM_MIN, fixed.SUM_MAX).to(torch.int16)
    parts = [fixed.decode_bfp8(s, t, workers) for s, t in zip(_split(total, lengths), tops)]
    return torch.cat(parts) if parts else p.new_zeros(0)


def aggregate_fixed(fmt: Format, ps: Sequence[torch.Tensor], lengths: Sequence[int]) -> torch.Tensor:
    """The same mean of W workers' segments in one process (the virtual
    workers), through nfabric.fixed: INT8 over the whole segment, BFP8 per
    parameter tensor."""
    name = fixed.parse_sum_format(str(fmt))
    if name == "int8":
        return fixed.aggregate_workers(name, list(ps))
    split = [_split(p, lengths) for p in ps]
    return torch.cat([fixed.aggregate_workers(name, [sp[i] for sp in split]) for i in range(len(lengths))])
