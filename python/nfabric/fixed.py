"""The conservative formats INT8 and BFP8 on torch tensors, bit for bit as
Go's ``lowbit`` (``go doc ./lowbit Int8`` is the numeric contract both follow).
They go beyond the paper (Sec. 1: "more conservative formats are compatible
with the same admission framework"): the controller sums integer lanes and
the host decodes the sum to the workers' mean.

INT8, one scale per bucket the W workers agree on first (a max-reduce of
one float32 each, SwitchML-style)::

    M      = max over workers and elements of |g|
    s      = float32(M) / 127                 (0 when M = 0)
    q[k,i] = clamp(roundHalfEven(g[k,i] / s), -127, 127)   in float32; s = 0 gives 0
    S[i]   = clamp(sum_k q[k,i], -32768, 32767)             exact for W <= 258
    mean   = float32(float64(S[i]) * float64(s) / W)

BFP8, 64-element blocks, each worker its own exponent::

    e[k]   = frexp exponent of the block's max |g| (M = f 2^e, f in [0.5, 1)),
             clamped to [-127, 127]; -127 for an all-zero block
    m[k,i] = clamp(roundHalfEven(g[k,i] 2^(7 - e[k])), -127, 127)   exact in float64
    E      = max_k e[k];  d = min(E - e[k], 8)
    a[k,i] = m[k,i] if d = 0 else (m[k,i] + 2^(d-1)) >> d   (arithmetic shift)
    S[i]   = clamp(sum_k a[k,i], -32768, 32767)
    mean   = float32(float64(S[i]) 2^(E - 7) / W)

NaN and +-Inf never encode: :class:`nfabric.lowbit.NonFiniteError`. The
format names and constants come from ``_formats``, generated from Go's
format table.

Kernels: the encoders, the sums and the decoders run Go's lowbit functions
through the C ABI (nfabric._golib, version 2) on CPU tensors of the
library's dtypes (float32 gradients, int8 codes, int16 sums) when the
library is loaded, and torch ops otherwise (CUDA, other dtypes,
NFABRIC_LOWBIT=torch): the same bits either way.
"""

from __future__ import annotations

from typing import Sequence, Tuple

import math

import torch

from . import _formats, _golib
from .lowbit import NonFiniteError

__all__ = [
    "FORMATS", "SUM_FORMATS", "BFP_BLOCK", "format_number", "parse_sum_format", "bits_per_element",
    "max_abs", "int8_scale", "encode_int8", "sum_codes", "decode_int8",
    "bfp_blocks", "encode_bfp8", "align_bfp8", "sum_bfp8", "decode_bfp8", "aggregate_workers", "payload_bytes",
    "MAX_SUM_WORKERS", "check_sum_workers",
]

FORMATS = _formats.FORMATS
"""Go's format table: (number, name, aliases, family, bits, paper) rows."""
SUM_FORMATS = tuple(row[1] for row in FORMATS if row[3] == "sum")
"""The summed formats' names, in table order: ("int8", "bfp8")."""
BFP_BLOCK = _formats.BFP_BLOCK
INT8_MAX = _formats.INT8_MAX
SUM_MIN, SUM_MAX = _formats.SUM_MIN, _formats.SUM_MAX
MAX_SUM_WORKERS = SUM_MAX // INT8_MAX
"""The most workers whose lane sums are exact: 258 (258 * 127 = 32766
fits int16; 259 codes of 127 saturate at 32767). An aggregate of more
workers would silently clamp toward a smaller mean, so aggregate_workers,
the DDP hook and the virtual workers refuse it; the kernels themselves
(sum_codes, sum_bfp8) keep the controller's saturating arithmetic."""


def format_number(name: str) -> int:
    """The number of a format (as in Go and the payload header), from its
    name or an alias, in any case."""
    v = name.strip().lower()
    for num, n, aliases, _family, _bits, _paper in FORMATS:
        if v == n or v in aliases:
            return num
    raise ValueError(f"unknown format {name!r} (want one of {', '.join(r[1] for r in FORMATS)})")


def parse_sum_format(name: str) -> str:
    """The canonical name of a summed format (int8, bfp8) or ValueError."""
    row = FORMATS[format_number(name)]
    if row[3] != "sum":
        raise ValueError(f"{row[1]} is not a summed format (want one of {', '.join(SUM_FORMATS)})")
    return row[1]


def bits_per_element(name: str) -> float:
    """Bits one worker sends per element (8 INT8, 8.125 BFP8); INT8's scale
    agreement is apart (SCALE_BITS per worker and bucket)."""
    return FORMATS[format_number(parse_sum_format(name))][4]


def _check_finite(g: torch.Tensor) -> None:
    bad = ~torch.isfinite(g.reshape(-1))
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise NonFiniteError(i, float(g.reshape(-1)[i]))


def max_abs(g: torch.Tensor) -> torch.Tensor:
    """max |g| as a 0-d float32 tensor (0 for no elements): one worker's
    contribution to the INT8 scale agreement. Raises NonFiniteError."""
    _check_finite(g)
    if g.numel() == 0:
        return torch.zeros((), dtype=torch.float32, device=g.device)
    return g.float().abs().max()


# MAX_INT8_SCALE is the largest scale an agreement produces, float32(max
# float32 / 127), Go's lowbit.MaxInt8Scale: a larger one would decode a full
# code to Inf.
MAX_INT8_SCALE = float(torch.tensor(torch.finfo(torch.float32).max / INT8_MAX, dtype=torch.float32))


def check_int8_scale(scale: float) -> None:
    """Raise ValueError for a scale no agreement can produce: a negative one
    (-0 included), NaN, Inf, or one above MAX_INT8_SCALE (Go's
    lowbit.CheckInt8Scale)."""
    if scale != scale or math.copysign(1.0, scale) < 0:
        raise ValueError(f"int8 scale {scale} is not a number >= +0 (an agreement gives max |g| / 127)")
    if scale > MAX_INT8_SCALE:
        raise ValueError(f"int8 scale {scale} exceeds {MAX_INT8_SCALE}, the largest an agreement gives")


def int8_scale(m: torch.Tensor) -> torch.Tensor:
    """The agreed scale s = M / 127 in float32 (0 for M = 0)."""
    m = m.to(torch.float32)
    return torch.where(m > 0, m / INT8_MAX, torch.zeros_like(m))


def encode_int8(g: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """int8 codes q = clamp(roundHalfEven(g / s), -127, 127), dividing in
    float32; s = 0 gives zeros. Raises NonFiniteError, and ValueError for
    a scale no agreement can produce (check_int8_scale, as Go's EncodeInt8)."""
    check_int8_scale(float(scale))
    if g.dtype == torch.float32 and _golib.fixed_usable(g):
        flat = g.reshape(-1).contiguous()
        dst = torch.empty(flat.numel(), dtype=torch.int8)
        err = _golib.errbuf()
        i = _golib.lib().nfl_encode_int8(dst.data_ptr(), flat.data_ptr(), flat.numel(), float(scale), err, len(err))
        if i == -2:
            raise ValueError(err.value.decode(errors="replace"))
        if i >= 0:
            raise NonFiniteError(int(i), float(flat[i]))
        return dst.view(g.shape)
    _check_finite(g)
    s = scale.to(device=g.device, dtype=torch.float32)
    if float(s) == 0:
        return torch.zeros(g.shape, dtype=torch.int8, device=g.device)
    x = (g.float() / s).double().clamp(-INT8_MAX, INT8_MAX)
    return torch.round(x).to(torch.int8)


def sum_codes(codes: torch.Tensor) -> torch.Tensor:
    """int16 lane sums S[i] = clamp(sum_k codes[k, i], -32768, 32767) of
    [W, n] codes (INT8 codes or aligned BFP8 mantissas), summed exactly."""
    if codes.dtype == torch.int8 and codes.dim() == 2 and codes.shape[0] > 0 and _golib.fixed_usable(codes):
        rows = codes.contiguous()
        dst = torch.empty(rows.shape[1], dtype=torch.int16)
        err = _golib.errbuf()
        rc = _golib.lib().nfl_sum_int8(dst.data_ptr(), _golib.ptrs(rows), rows.shape[0], rows.shape[1], err, len(err))
        _golib.check(rc, err, "sum_codes")
        return dst
    return codes.to(torch.int32).sum(dim=0).clamp(SUM_MIN, SUM_MAX).to(torch.int16)


def decode_int8(total: torch.Tensor, scale: torch.Tensor, workers: int) -> torch.Tensor:
    """The mean float32(clamp(float64(S) * float64(s) / W, +-max float32)):
    at the largest scale 127 s rounds above max float32, and a mean must
    not read back as Inf (Go's DecodeInt8). Raises ValueError for a scale
    no agreement can produce."""
    check_int8_scale(float(scale))
    if total.dtype == torch.int16 and _golib.fixed_usable(total):
        src = total.reshape(-1).contiguous()
        dst = torch.empty(src.numel(), dtype=torch.float32)
        err = _golib.errbuf()
        rc = _golib.lib().nfl_decode_int8(dst.data_ptr(), src.data_ptr(), src.numel(), float(scale), workers, err, len(err))
        _golib.check(rc, err, "decode_int8")
        return dst.view(total.shape)
    fmax = torch.finfo(torch.float32).max
    return (total.double() * float(scale) / float(workers)).clamp(-fmax, fmax).float()


def bfp_blocks(n: int) -> int:
    """BFP8 blocks (and exponents) of n elements: ceil(n / 64)."""
    return (n + BFP_BLOCK - 1) // BFP_BLOCK


def _blocked(g: torch.Tensor) -> torch.Tensor:
    """g (n elements) padded with zeros to whole blocks, [blocks, 64]."""
    n = g.numel()
    pad = bfp_blocks(n) * BFP_BLOCK - n
    return torch.cat([g.reshape(-1), g.new_zeros(pad)]).view(-1, BFP_BLOCK)


def encode_bfp8(g: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """One worker's BFP8 payload of g (n elements): int8 mantissas [n] and
    int8 block exponents [ceil(n/64)]. Raises NonFiniteError."""
    if g.dtype == torch.float32 and _golib.fixed_usable(g):
        flat = g.reshape(-1).contiguous()
        n = flat.numel()
        mant = torch.empty(n, dtype=torch.int8)
        exp = torch.empty(bfp_blocks(n), dtype=torch.int8)
        i = _golib.lib().nfl_encode_bfp8(mant.data_ptr(), exp.data_ptr(), flat.data_ptr(), n)
        if i >= 0:
            raise NonFiniteError(int(i), float(flat[i]))
        return mant, exp
    _check_finite(g)
    n = g.numel()
    b = _blocked(g.double())
    m = b.abs().max(dim=1).values
    _, e = torch.frexp(m)
    e = torch.where(m == 0, torch.full_like(e, -127), e.clamp(-127, 127))
    x = torch.ldexp(b, (7 - e).to(torch.float64).unsqueeze(1)).clamp(-INT8_MAX, INT8_MAX)
    mant = torch.round(x).to(torch.int8).reshape(-1)[:n]
    return mant, e.to(torch.int8)


def align_bfp8(mant: torch.Tensor, exp: torch.Tensor, block_max: torch.Tensor) -> torch.Tensor:
    """One worker's mantissas aligned to the blocks' largest exponent E:
    a = m when d = E - e = 0, else (m + 2^(d-1)) >> d with d capped at 8
    (round to nearest, ties toward +inf), as int32."""
    n = mant.numel()
    d = (block_max.to(torch.int32) - exp.to(torch.int32)).clamp(max=8)
    dd = d.repeat_interleave(BFP_BLOCK)[:n].to(mant.device)
    m = mant.to(torch.int32)
    half = torch.where(dd > 0, torch.ones_like(dd) << (dd - 1).clamp(min=0), torch.zeros_like(dd))
    return torch.div(m + half, torch.ones_like(dd) << dd, rounding_mode="floor")


def sum_bfp8(mants: torch.Tensor, exps: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The controller's transform of W workers' BFP8 payloads (mantissas
    [W, n], exponents [W, blocks]): int16 sums [n] and block maxima E."""
    if mants.dtype == torch.int8 and exps.dtype == torch.int8 and mants.dim() == 2 and mants.shape[0] > 0 and \
            exps.shape == (mants.shape[0], bfp_blocks(mants.shape[1])) and _golib.fixed_usable(mants, exps):
        m, e = mants.contiguous(), exps.contiguous()
        w, n = m.shape
        total = torch.empty(n, dtype=torch.int16)
        top = torch.empty(e.shape[1], dtype=torch.int8)
        err = _golib.errbuf()
        rc = _golib.lib().nfl_sum_bfp8(total.data_ptr(), top.data_ptr(), _golib.ptrs(m), _golib.ptrs(e), w, n, err, len(err))
        _golib.check(rc, err, "sum_bfp8")
        return total, top
    e = exps.to(torch.int32).max(dim=0).values
    aligned = torch.stack([align_bfp8(mants[k], exps[k], e) for k in range(mants.shape[0])])
    return sum_codes(aligned), e.to(torch.int8)


def decode_bfp8(total: torch.Tensor, block_max: torch.Tensor, workers: int) -> torch.Tensor:
    """The mean float32(float64(S) 2^(E - 7) / W)."""
    n = total.numel()
    if total.dtype == torch.int16 and block_max.dtype == torch.int8 and block_max.numel() == bfp_blocks(n) and \
            _golib.fixed_usable(total, block_max):
        src, e = total.reshape(-1).contiguous(), block_max.reshape(-1).contiguous()
        dst = torch.empty(n, dtype=torch.float32)
        err = _golib.errbuf()
        rc = _golib.lib().nfl_decode_bfp8(dst.data_ptr(), src.data_ptr(), e.data_ptr(), n, workers, err, len(err))
        _golib.check(rc, err, "decode_bfp8")
        return dst
    e = block_max.to(torch.int64).repeat_interleave(BFP_BLOCK)[:n].to(total.device)
    return (torch.ldexp(total.double(), (e - 7).double()) / float(workers)).float()


def check_sum_workers(fmt: str, workers: int) -> None:
    """Refuses an aggregate of more workers than the int16 lane sums hold
    exactly (MAX_SUM_WORKERS), with a ValueError naming the format and W."""
    if workers > MAX_SUM_WORKERS:
        raise ValueError(f"{parse_sum_format(fmt)}: {workers} workers is more than the {MAX_SUM_WORKERS} whose int16 "
                         f"lane sums are exact ({MAX_SUM_WORKERS} x {INT8_MAX} = {MAX_SUM_WORKERS * INT8_MAX}); the "
                         "sums would saturate and shrink the mean: use fewer workers, or g-binary/g-ternary/fp32")


def aggregate_workers(fmt: str, g: Sequence[torch.Tensor]) -> torch.Tensor:
    """The decoded mean of W workers' gradients (one bucket, blocks and
    the INT8 scale over the flattened elements) under a summed format, in
    one process: what W ranks compute with the hook. The result has the
    workers' (common) shape, for INT8 and BFP8 alike. Raises ValueError
    for no workers, unequal shapes or more than MAX_SUM_WORKERS workers."""
    fmt = parse_sum_format(fmt)
    w = len(g)
    if w == 0:
        raise ValueError(f"{fmt}: aggregate of no workers")
    shape = g[0].shape
    for k, x in enumerate(g):
        if x.shape != shape:
            raise ValueError(f"{fmt}: worker {k}'s gradient has shape {tuple(x.shape)}, worker 0's {tuple(shape)}")
    check_sum_workers(fmt, w)
    flat = [x.reshape(-1) for x in g]
    if fmt == "int8":
        m = torch.stack([max_abs(x) for x in flat]).max()
        s = int8_scale(m)
        return decode_int8(sum_codes(torch.stack([encode_int8(x, s) for x in flat])), s, w).view(shape)
    enc = [encode_bfp8(x) for x in flat]
    total, e = sum_bfp8(torch.stack([m for m, _ in enc]), torch.stack([x for _, x in enc]))
    return decode_bfp8(total, e, w).view(shape)


def payload_bytes(fmt: str, n: int) -> int:
    """Bytes one worker sends for n elements of one bucket: n codes, plus
    the 4-byte scale agreement (INT8) or one exponent per block (BFP8)."""
    return n + (4 if parse_sum_format(fmt) == "int8" else bfp_blocks(n))
