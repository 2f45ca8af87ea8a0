"""NEURON-Fabric's low-bit gradient payloads on torch tensors.

The semantics are exactly those of the Go package ``lowbit`` (``go doc
./lowbit``), on CPU and CUDA tensors. For W workers, worker k and gradient
element i::

    b[k,i] = 1{g[k,i] > 0}            zero, -0 and negative values encode as 0
    c[i]   = popcount(b[0,i] .. b[W-1,i])
    a[i]   = 2 c[i] - W               the signed vote margin
    u[i]   = sgn(a[i])                G-Binary; 0 on a tie (W even)
    t[i]   = m[i] u[i]                G-Ternary, with a zero gate m[i] in {0, 1}

The gate's element index i is the element's index in the model's flattened
parameter vector (``base``), never its index inside a DDP bucket. NaN and
+-Inf never become a sign: the encoders raise :class:`NonFiniteError` naming
the first offending element, and the caller keeps that bucket on FP32.

Layouts (bit order as in Go):

* worker-major plane: worker k's signs of n elements in ``ceil(n/8)`` bytes,
  byte j bit q = b[k, 8 j + q] (LSB first); any W from 1 to 1024.
* element-major packet (the paper's): byte i bit k = b[k, i], W <= 8.

Gates: the paper's 2-of-3 pattern (element i zeroed when i mod 3 == 2) is
the default; a period-P pattern, a vote-margin gate (|a| < T zeroed) and
per-worker gate bits (worker k votes only where |g| > tau) are extensions
beyond the paper, as in Go.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import torch

from . import _golib

__all__ = [
    "LINE_BYTES", "PACKET_ELEMENTS", "PLANE_ELEMENTS", "MAX_PACKET_WORKERS", "MAX_WORKERS",
    "Format", "Layout", "GateKind", "Gate", "PAPER_GATE", "Spec", "NonFiniteError",
    "parse_format", "parse_layout", "parse_gate", "plane_bytes", "lines",
    "check_finite", "encode_signs", "encode_gates", "pack_packet", "pack_packet_gates",
    "planes_to_packet", "packet_to_planes", "count_packet", "count_planes",
    "gate_keeps", "pattern_keeps", "any_nonfinite", "vote_packet", "vote_planes", "vote_update", "decode",
    "aggregate", "kernels",
]

from .formats import (LINE_BYTES, MAX_PACKET_WORKERS, MAX_WORKERS, PACKET_ELEMENTS, PAPER_GATE,  # noqa: F401
                      PLANE_ELEMENTS, Format, Gate, GateKind, Layout, NonFiniteError, Spec, lines, parse_format,
                      parse_gate, parse_layout, plane_bytes)

_BIT_WEIGHTS = {}  # device -> uint8 tensor [1, 2, 4, ..., 128]
_SHIFTS = {}
_POPCOUNT = {}


def _weights(device: torch.device) -> torch.Tensor:
    t = _BIT_WEIGHTS.get(device)
    if t is None:
        t = torch.tensor([1 << q for q in range(8)], dtype=torch.uint8, device=device)
        _BIT_WEIGHTS[device] = t
    return t


def _shifts(device: torch.device) -> torch.Tensor:
    t = _SHIFTS.get(device)
    if t is None:
        t = torch.arange(8, dtype=torch.uint8, device=device)
        _SHIFTS[device] = t
    return t


def _popcount_table(device: torch.device) -> torch.Tensor:
    t = _POPCOUNT.get(device)
    if t is None:
        t = torch.tensor([bin(b).count("1") for b in range(256)], dtype=torch.uint8, device=device)
        _POPCOUNT[device] = t
    return t


def any_nonfinite(g: torch.Tensor) -> torch.Tensor:
    """A 0-d bool tensor: whether g holds a NaN or Inf (no host sync). max
    propagates NaN and |Inf| is Inf, so one reduction decides; it is many
    times faster than isfinite on CPU."""
    if g.numel() == 0:
        return torch.zeros((), dtype=torch.bool, device=g.device)
    return ~torch.isfinite(g.reshape(-1).abs().amax())


def check_finite(g: torch.Tensor, worker: Optional[int] = None) -> None:
    """Raises NonFiniteError for the first NaN or Inf of g (flattened)."""
    flat = g.reshape(-1)
    if bool(any_nonfinite(flat)):
        i = int(torch.nonzero(~torch.isfinite(flat))[0].item())
        raise NonFiniteError(i, float(flat[i].item()), worker)


# (x * _GATHER) >> 56 moves bit 8q of x to bit 56 + q: the eight 0/1 bytes
# of a little-endian word become one byte, LSB first. Every partial product
# lands on a distinct bit, so no carry disturbs bits 56-63.
_GATHER = 0x0102040810204080
_SPREAD = {}  # device -> int64 [256]: byte b -> eight 0/1 bytes, LSB first
_VOTE8 = {}   # device -> int64 [65536]: (up | un << 8) -> eight int8 votes


def _spread_table(device: torch.device) -> torch.Tensor:
    t = _SPREAD.get(device)
    if t is None:
        v = [sum(((b >> q) & 1) << (8 * q) for q in range(8)) for b in range(256)]
        t = torch.tensor(v, dtype=torch.int64, device=device)
        _SPREAD[device] = t
    return t


def _vote_table(device: torch.device) -> torch.Tensor:
    t = _VOTE8.get(device)
    if t is None:
        bits = _spread_table(torch.device("cpu")).view(torch.int8).view(256, 8)
        lanes = bits.view(1, 256, 8) - bits.view(256, 1, 8)  # [un, up, lane]: +1, 0 or -1 per lane
        t = lanes.reshape(65536, 8).contiguous().view(torch.int64).reshape(-1).to(device)
        _VOTE8[device] = t
    return t


def _pack_bits(bits: torch.Tensor) -> torch.Tensor:
    """Packs a bool/uint8 vector of 0/1 into bytes, LSB first, zero-padded."""
    n = bits.numel()
    nb = plane_bytes(n)
    b = bits.reshape(-1).to(torch.uint8)
    if nb * 8 != n:
        b = torch.cat([b, b.new_zeros(nb * 8 - n)])
    if b.storage_offset() % 8:
        b = b.clone()  # a wider view needs an aligned start
    words = b.view(torch.int64)
    return ((words * _GATHER) >> 56).to(torch.uint8)


def _unpack_bits(planes: torch.Tensor, n: int) -> torch.Tensor:
    """Unpacks [..., nb] uint8 planes into [..., n] uint8 bits, LSB first."""
    t = _spread_table(planes.device)[planes.long()]
    return t.view(torch.uint8).reshape(*planes.shape[:-1], planes.shape[-1] * 8)[..., :n]


def unpack_planes(pos: torch.Tensor, nz: torch.Tensor, n: int) -> torch.Tensor:
    """The int8 values u of n elements from result planes (Go's
    UnpackPlanes): +1 where pos and nz are set, -1 where only nz is, else 0
    (pos without nz is 0). pos and nz are uint8 planes of at least
    plane_bytes(n) bytes."""
    nb = plane_bytes(n)
    if pos.numel() < nb or nz.numel() < nb:
        raise ValueError(f"unpack_planes: planes of {pos.numel()} and {nz.numel()} bytes, want {nb}")
    pos, nz = pos.reshape(-1)[:nb], nz.reshape(-1)[:nb]
    if _go_planes(pos, nz):
        pos, nz = pos.contiguous(), nz.contiguous()
        u = torch.empty(n, dtype=torch.int8)
        _golib.lib().nfl_unpack_planes(u.data_ptr(), pos.data_ptr(), nz.data_ptr(), n)
        return u
    up = _unpack_bits(pos & nz, n).to(torch.int8)
    return up - _unpack_bits(nz & ~pos, n).to(torch.int8)


def encode_signs(g: torch.Tensor, worker: Optional[int] = None) -> torch.Tensor:
    """The G-Binary bit-plane of g (flattened): bit i is 1{g[i] > 0}.

    Returns ceil(n/8) uint8 bytes on g's device, unused bits of the last byte
    clear. A NaN or Inf raises NonFiniteError.
    """
    if g.dtype == torch.float32 and _golib.usable(g):
        return _go_encode(g, worker, None)
    check_finite(g, worker)
    return _pack_bits(g.reshape(-1) > 0)


def kernels() -> str:
    """Which kernels CPU tensors run: the Go library's set ("avx2" or "go",
    see nfabric._golib) or "torch" (the torch-op code, also what CUDA
    tensors always run)."""
    return _golib.implementation()


def _go_encode(g: torch.Tensor, worker: Optional[int], tau: Optional[float]) -> torch.Tensor:
    """encode_signs (tau None) or encode_gates through the Go library."""
    L = _golib.lib()
    flat = g.reshape(-1).contiguous()
    n = flat.numel()
    dst = torch.empty(plane_bytes(n), dtype=torch.uint8)
    if tau is None:
        i = L.nfl_encode_signs(dst.data_ptr(), flat.data_ptr(), n)
    else:
        err = _golib.errbuf()
        i = L.nfl_encode_gates(dst.data_ptr(), flat.data_ptr(), n, tau, err, len(err))
        if i == -2:
            raise ValueError(err.value.decode(errors="replace"))
    if i >= 0:
        raise NonFiniteError(int(i), float(flat[i].item()), worker)
    return dst


def _check_tau(tau: float) -> None:
    if not (tau >= 0) or tau == float("inf"):
        raise ValueError(f"gate threshold {tau} must be finite and non-negative")


def encode_gates(g: torch.Tensor, tau: Union[float, torch.Tensor], worker: Optional[int] = None) -> torch.Tensor:
    """The worker gate's bit-plane (an extension beyond the paper): bit i is
    1{|g[i]| > tau}. tau is a finite non-negative number, or a tensor of
    per-element thresholds (float32, as Go compares float32 values)."""
    if isinstance(tau, torch.Tensor):
        check_finite(g, worker)
        return _pack_bits(g.reshape(-1).abs() > tau.reshape(-1))
    _check_tau(float(tau))
    if g.dtype == torch.float32 and _golib.usable(g):
        return _go_encode(g, worker, float(tau))
    check_finite(g, worker)
    flat = g.reshape(-1)
    t = torch.tensor(float(tau), dtype=flat.dtype, device=flat.device)
    return _pack_bits(flat.abs() > t)


def _workers_matrix(g: Union[torch.Tensor, Sequence[torch.Tensor]]) -> torch.Tensor:
    if isinstance(g, torch.Tensor):
        if g.dim() != 2:
            raise ValueError(f"gradients must be [workers, elements], got shape {tuple(g.shape)}")
        return g
    n = {t.numel() for t in g}
    if len(n) > 1:
        raise ValueError(f"workers have different element counts {sorted(n)}")
    return torch.stack([t.reshape(-1) for t in g])


def _check_workers_finite(g: torch.Tensor) -> None:
    for k in range(g.shape[0]):
        check_finite(g[k], k)


def _pack_packet_bits(bits: torch.Tensor) -> torch.Tensor:
    w = bits.shape[0]
    if w < 1 or w > MAX_PACKET_WORKERS:
        raise ValueError(f"element-major packets carry 1 to {MAX_PACKET_WORKERS} workers, not {w}")
    wt = _weights(bits.device)[:w].view(w, 1)
    return (bits.to(torch.uint8) * wt).sum(dim=0, dtype=torch.uint8)


def pack_packet(g: Union[torch.Tensor, Sequence[torch.Tensor]]) -> torch.Tensor:
    """The paper's element-major packets of W <= 8 workers: bit k of byte i
    is 1{g[k][i] > 0}; bits at or above W are 0. Returns n uint8 bytes."""
    m = _workers_matrix(g)
    _check_workers_finite(m)
    return _pack_packet_bits(m > 0)


def pack_packet_gates(g: Union[torch.Tensor, Sequence[torch.Tensor]], tau: float) -> torch.Tensor:
    """Element-major gate packets (worker gate extension): bit k of byte i
    is 1{|g[k][i]| > tau}."""
    _check_tau(float(tau))
    m = _workers_matrix(g)
    _check_workers_finite(m)
    return _pack_packet_bits(m.abs() > torch.tensor(float(tau), dtype=m.dtype, device=m.device))


def planes_to_packet(planes: torch.Tensor, n: int) -> torch.Tensor:
    """Gathers W <= 8 worker bit-planes [W, nb] of n elements into
    element-major packets: bit k of byte i = bit i of planes[k]. planes may
    be a sequence of W planes."""
    if _go_planes(planes):
        rows = _plane_rows(planes, n, "planes_to_packet")
        dst = torch.empty(n, dtype=torch.uint8)
        err = _golib.errbuf()
        rc = _golib.lib().nfl_planes_to_packet(dst.data_ptr(), _golib.ptrs(rows), len(rows), n, err, len(err))
        _golib.check(rc, err, "planes_to_packet")
        return dst
    return _pack_packet_bits(_unpack_bits(_stacked(planes), n))


def _go_planes(*xs) -> bool:
    """Whether the Go library takes these uint8 planes (tensors, sequences
    of tensors or None): all on the CPU and the library loaded."""
    ts = []
    for x in xs:
        if isinstance(x, torch.Tensor):
            ts.append(x)
        elif x is not None:
            ts.extend(x)
    return all(t.dtype == torch.uint8 for t in ts) and _golib.usable(*ts)


def _stacked(planes):
    """Planes given as a sequence of 1-D tensors, as one [W, nb] tensor."""
    if planes is None or isinstance(planes, torch.Tensor):
        return planes
    return torch.stack([p.reshape(-1) for p in planes])


def _plane_rows(planes: Union[torch.Tensor, Sequence[torch.Tensor]], n: int, what: str) -> List[torch.Tensor]:
    """W planes as contiguous CPU uint8 rows of at least ceil(n/8) bytes,
    views of the caller's memory where they already are."""
    rows = list(planes.unbind(0)) if isinstance(planes, torch.Tensor) else list(planes)
    nb = plane_bytes(n)
    out = []
    for k, r in enumerate(rows):
        r = r.reshape(-1)
        if r.numel() < nb:
            raise ValueError(f"{what}: plane {k} holds {r.numel()} bytes, want {nb}")
        if r.dtype != torch.uint8:
            raise ValueError(f"{what}: plane {k} is {r.dtype}, want torch.uint8")
        out.append(r.contiguous())
    return out


def packet_to_planes(packet: torch.Tensor, workers: int) -> torch.Tensor:
    """Scatters element-major packets of n elements into W bit-planes [W, nb]."""
    sh = _shifts(packet.device)[:workers].view(workers, 1)
    bits = (packet.view(1, -1) >> sh) & 1
    return torch.stack([_pack_bits(bits[k]) for k in range(workers)])


def count_packet(packet: torch.Tensor, workers: int) -> torch.Tensor:
    """The sign count of element-major packets: popcount(byte & (2^W - 1)),
    bits at or above W ignored. Returns uint8 counts."""
    if workers < 1 or workers > MAX_PACKET_WORKERS:
        raise ValueError(f"element-major packets carry 1 to {MAX_PACKET_WORKERS} workers, not {workers}")
    if _golib.usable(packet) and packet.dtype == torch.uint8:
        src = packet.contiguous()
        dst = torch.empty_like(src)
        _golib.lib().nfl_count_packet(dst.data_ptr(), src.data_ptr(), src.numel(), workers)
        return dst
    mask = (1 << workers) - 1
    return _popcount_table(packet.device)[(packet & mask).long()]


def count_planes(planes: torch.Tensor, n: int) -> torch.Tensor:
    """The sign count of each of n elements over worker-major planes [W, nb]:
    c[i] = sum_k bit i of planes[k]. Returns int16 counts."""
    if _golib.usable(planes) and planes.dtype == torch.uint8:
        rows = _plane_rows(planes, n, "count_planes")
        c = torch.empty(n, dtype=torch.int16)  # Go's uint16; counts <= 1024
        _golib.lib().nfl_count_planes(c.data_ptr(), _golib.ptrs(rows), len(rows), n)
        return c
    w = planes.shape[0]
    c = torch.zeros(n, dtype=torch.int16, device=planes.device)
    for k in range(w):
        c += _unpack_bits(planes[k], n)
    return c


def _flat_index(base: Union[int, torch.Tensor], n: int, device: torch.device) -> torch.Tensor:
    if isinstance(base, torch.Tensor):
        if base.numel() != n:
            raise ValueError(f"{base.numel()} flattened indices for {n} elements")
        return base.to(device=device, dtype=torch.int64)
    if base < 0:
        raise ValueError(f"negative base element index {base}")
    return torch.arange(base, base + n, dtype=torch.int64, device=device)


def gate_keeps(gate: Gate, base: Union[int, torch.Tensor], margin: torch.Tensor) -> torch.Tensor:
    """Which elements the gate keeps, as Go's RefGateKeeps: the pattern gate
    on the flattened index (base + i, or base[i] when base is a tensor of
    indices), the margin gate on |a| >= threshold. The worker gate keeps
    everything here (it gates per worker, before the vote)."""
    n = margin.numel()
    if gate.kind == GateKind.PATTERN:
        p = gate.effective_period()
        if isinstance(base, int):
            return pattern_keeps(p, base, n, margin.device)
        return _flat_index(base, n, margin.device) % p != p - 1
    if gate.kind == GateKind.MARGIN:
        return margin.abs() >= gate.threshold
    return torch.ones(n, dtype=torch.bool, device=margin.device)


def pattern_keeps(period: int, base: int, n: int, device: torch.device) -> torch.Tensor:
    """The period-p pattern gate's keep mask of elements base .. base+n-1:
    False where the index mod p is p-1 (a tiled period, no integer math
    per element)."""
    if base < 0:
        raise ValueError(f"negative base element index {base}")
    one = torch.ones(period, dtype=torch.bool, device=device)
    one[period - 1] = False
    o = base % period
    reps = (o + n + period - 1) // period
    return one.repeat(max(reps, 1))[o:o + n]


def _check_spec(spec: Spec, layout: Layout, base: Union[int, torch.Tensor]) -> None:
    if spec.layout != layout:
        raise ValueError(f"spec layout is {Layout(spec.layout)}, kernel wants {layout}")
    if isinstance(base, int) and base < 0:
        raise ValueError(f"negative base element index {base}")
    spec.validate()


_L01, _L55, _L33, _L0F = 0x0101010101010101, 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F
_L08, _L10 = 0x0808080808080808, 0x1010101010101010


def _i64(v: int) -> int:
    """A 64-bit lane constant as the signed value torch's int64 holds."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _popcount8(x: torch.Tensor) -> torch.Tensor:
    """The set bits of each byte lane of int64 words (Go's popcount8). The
    masks clear what the arithmetic shifts bring into the top lane."""
    x = x - ((x >> 1) & _L55)
    x = (x & _L33) + ((x >> 2) & _L33)
    return (x + (x >> 4)) & _L0F


def _packet_words(p: torch.Tensor) -> Tuple[torch.Tensor, int]:
    n = p.numel()
    pad = (-n) % 8
    if pad:
        p = torch.cat([p.reshape(-1), p.new_zeros(pad)])
    p = p.reshape(-1).contiguous()
    if p.storage_offset() % 8:
        p = p.clone()
    return p.view(torch.int64), n


def vote_packet(signs: torch.Tensor, spec: Spec, base: Union[int, torch.Tensor] = 0,
                gates: Optional[torch.Tensor] = None, keep: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Aggregates element-major packets into int8 u (G-Binary) or m*u
    (G-Ternary) per element, eight elements a word as Go's portable kernel
    does. base is the flattened index of element 0 (or a tensor of each
    element's flattened index); keep, if given, the pattern gate's keep
    mask. gates holds the per-worker gate packets for the worker gate."""
    _check_spec(spec, Layout.ELEMENT_MAJOR, base)
    if _golib.usable(signs, gates) and signs.dtype == torch.uint8:
        return _go_vote_packet(signs, spec, base, gates, keep)
    w = spec.workers
    mask = _i64(((1 << w) - 1) * _L01)
    x, n = _packet_words(signs)
    if spec.gate_bits():
        if gates is None or gates.numel() < signs.numel():
            raise ValueError("the worker gate needs a gate packet per sign packet")
        g, _ = _packet_words(gates[:n])
        g = g & mask
        d = _popcount8(x & g) + 8 * _L01 - _popcount8(~x & g)  # P - N + 8 per lane, in [0, 16]
        pos = ((d + 7 * _L01) & _L10) >> 4
        neg = (~(d + 8 * _L01) & _L10) >> 4
    else:
        c = _popcount8(x & mask)
        pos = ((c + (7 - w // 2) * _L01) & _L08) >> 3          # 2c > W
        neg = (~(c + (8 - (w + 1) // 2) * _L01) & _L08) >> 3   # 2c < W
        if spec.format == Format.TERNARY and spec.gate.kind == GateKind.MARGIN:
            t = spec.gate.threshold
            km = torch.zeros_like(c)
            hi = (w + t + 1) // 2
            if hi <= 8:
                km |= ((c + (8 - hi) * _L01) & _L08) >> 3
            if w - t >= 0:
                lo = (w - t) // 2
                km |= (~(c + (8 - (lo + 1)) * _L01) & _L08) >> 3
            pos, neg = pos & km, neg & km
    u = (pos | (neg * 0xFF)).view(torch.int8)[:n]
    if spec.format == Format.TERNARY and spec.gate.kind == GateKind.PATTERN:
        m = keep if keep is not None else gate_keeps(spec.gate, base, u)
        u = u * m.to(torch.int8)
    return u


def _go_gate(spec: Spec, base: Union[int, torch.Tensor], keep: Optional[torch.Tensor]) -> Tuple[int, int, int, int, bool]:
    """The (format, gate kind, gate parameter, base) the Go kernel gets, and
    whether the pattern gate is left to the caller: Go's pattern gate
    takes a contiguous base, so a tensor of flattened indices or a given
    keep mask votes G-Binary there and is gated here (t = m u)."""
    g = spec.gate
    if spec.format != Format.TERNARY:
        return int(spec.format), 0, 0, 0, False
    if g.kind == GateKind.PATTERN:
        if keep is not None or not isinstance(base, int):
            return int(Format.BINARY), 0, 0, 0, True
        return int(spec.format), int(g.kind), g.effective_period(), base, False
    return int(spec.format), int(g.kind), g.threshold if g.kind == GateKind.MARGIN else 0, 0, False


def _go_vote_packet(signs: torch.Tensor, spec: Spec, base: Union[int, torch.Tensor],
                    gates: Optional[torch.Tensor], keep: Optional[torch.Tensor]) -> torch.Tensor:
    flat = signs.reshape(-1).contiguous()
    n = flat.numel()
    gp = None
    if spec.gate_bits():
        if gates is None or gates.numel() < n:
            raise ValueError("the worker gate needs a gate packet per sign packet")
        gp = gates.reshape(-1)[:n].contiguous()
    fmt, kind, param, gbase, gate_here = _go_gate(spec, base, keep)
    u = torch.empty(n, dtype=torch.int8)
    err = _golib.errbuf()
    rc = _golib.lib().nfl_vote_packet(u.data_ptr(), flat.data_ptr(), None if gp is None else gp.data_ptr(), n,
                                      spec.workers, fmt, kind, param, gbase, err, len(err))
    _golib.check(rc, err, "vote_packet")
    if gate_here:
        m = keep if keep is not None else gate_keeps(spec.gate, base, u)
        u = u * m.to(torch.int8)
    return u


def _go_vote_planes(signs, n: int, spec: Spec, base: Union[int, torch.Tensor], gates,
                    keep: Optional[torch.Tensor],
                    out: Optional[Tuple[torch.Tensor, torch.Tensor]] = None) -> Tuple[torch.Tensor, torch.Tensor, bool]:
    """Go's VotePlanes: the result planes (pos, nz), written into out (two
    contiguous uint8 tensors of plane_bytes(n); new ones when None), and
    whether the pattern gate is still to apply (see _go_gate)."""
    rows = _plane_rows(signs, n, "vote")
    if len(rows) != spec.workers:
        raise ValueError(f"vote: {len(rows)} sign planes for {spec.workers} workers")
    grows = None
    if spec.gate_bits():
        if gates is None:
            raise ValueError("the worker gate needs one gate plane per worker, shaped like the sign planes")
        grows = _plane_rows(gates, n, "vote")
        if len(grows) != spec.workers:
            raise ValueError("the worker gate needs one gate plane per worker, shaped like the sign planes")
    fmt, kind, param, gbase, gate_here = _go_gate(spec, base, keep)
    nb = plane_bytes(n)
    pos, nz = out if out is not None else (torch.empty(nb, dtype=torch.uint8), torch.empty(nb, dtype=torch.uint8))
    err = _golib.errbuf()
    rc = _golib.lib().nfl_vote_planes(pos.data_ptr(), nz.data_ptr(), _golib.ptrs(rows),
                                      None if grows is None else _golib.ptrs(grows), spec.workers, n,
                                      fmt, kind, param, gbase, err, len(err))
    _golib.check(rc, err, "vote")
    return pos, nz, gate_here


class _SlicedCounter:
    """A bit-sliced counter over byte lanes (Go's bitCounter): slice b holds
    bit b of every element's count, eight elements a byte, so adding a
    worker's plane is a few bitwise operations on n/8 bytes."""

    def __init__(self, workers: int, like: torch.Tensor):
        self.m = max(1, int(workers).bit_length())
        self.s = [torch.zeros_like(like) for _ in range(self.m)]

    def add(self, x: torch.Tensor) -> None:
        for b in range(self.m):
            carry = self.s[b] & x
            self.s[b] ^= x
            x = carry

    def gt(self, k: int) -> torch.Tensor:
        """Lanes whose count is greater than k (k >= 0)."""
        if k >= 1 << self.m:
            return torch.zeros_like(self.s[0])
        gt = torch.zeros_like(self.s[0])
        eq = torch.full_like(self.s[0], -1)
        for b in range(self.m - 1, -1, -1):
            if (k >> b) & 1 == 0:
                gt |= eq & self.s[b]
                eq &= ~self.s[b]
            else:
                eq &= self.s[b]
        return gt

    def gt_counter(self, other: "_SlicedCounter") -> torch.Tensor:
        """Lanes where this count is greater than other's (equal widths)."""
        gt = torch.zeros_like(self.s[0])
        eq = torch.full_like(self.s[0], -1)
        for b in range(self.m - 1, -1, -1):
            gt |= eq & self.s[b] & ~other.s[b]
            eq &= ~(self.s[b] ^ other.s[b])
        return gt


def _words(planes: torch.Tensor) -> torch.Tensor:
    """[W, nb] uint8 planes as [W, ceil(nb/8)] int64 words (zero-padded), so
    the bitwise kernels touch eight bytes an element."""
    w, nb = planes.shape
    pad = (-nb) % 8
    if pad:
        planes = torch.cat([planes, planes.new_zeros(w, pad)], dim=1)
    planes = planes.contiguous()
    if planes.storage_offset() % 8:
        planes = planes.clone()
    return planes.view(torch.int64)


def vote_planes(signs: Union[torch.Tensor, Sequence[torch.Tensor]], n: int, spec: Spec, base: Union[int, torch.Tensor] = 0,
                gates: Optional[torch.Tensor] = None, keep: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Aggregates worker-major planes [W, nb] (or a sequence of W planes) of
    n elements into int8 u or m*u per element (Go's VotePlanes followed by UnpackPlanes), through a
    bit-sliced counter as Go's portable kernel does. keep, if given, is the
    pattern gate's precomputed keep mask (what gate_keeps returns)."""
    _check_spec(spec, Layout.WORKER_MAJOR, base)
    if _go_planes(signs, gates):
        pos, nz, gate_here = _go_vote_planes(signs, n, spec, base, gates, keep, _golib.scratch_planes(plane_bytes(n)))
        u = unpack_planes(pos, nz, n)
        if gate_here:
            m = keep if keep is not None else gate_keeps(spec.gate, base, u)
            u = u * m.to(torch.int8)
        return u
    signs, gates = _stacked(signs), _stacked(gates)
    w = spec.workers
    if signs.dim() != 2 or signs.shape[0] != w:
        raise ValueError(f"vote: {signs.shape[0] if signs.dim() else 0} sign planes for {w} workers")
    if signs.shape[1] < plane_bytes(n):
        raise ValueError(f"vote: planes hold {signs.shape[1]} bytes, want {plane_bytes(n)}")
    sw = _words(signs[:, :plane_bytes(n)])
    ternary = spec.format == Format.TERNARY
    kind = spec.gate.kind
    if spec.gate_bits():
        if gates is None or tuple(gates.shape) != tuple(signs.shape):
            raise ValueError("the worker gate needs one gate plane per worker, shaped like the sign planes")
        gw = _words(gates[:, :plane_bytes(n)])
        c, cn = _SlicedCounter(w, sw[0]), _SlicedCounter(w, sw[0])
        for k in range(w):
            c.add(sw[k] & gw[k])
            cn.add(~sw[k] & gw[k])
        up, un = c.gt_counter(cn), cn.gt_counter(c)
    else:
        c = _SlicedCounter(w, sw[0])
        for k in range(w):
            c.add(sw[k])
        up = c.gt(w // 2)               # 2c > W
        un = ~c.gt((w + 1) // 2 - 1)    # 2c < W
        if ternary and kind == GateKind.MARGIN:
            t = spec.gate.threshold
            km = torch.zeros_like(up)
            hi = (w + t + 1) // 2
            if hi >= 1:
                km |= c.gt(hi - 1)
            if w - t >= 0:
                km |= ~c.gt((w - t) // 2)
            up, un = up & km, un & km
    idx = up.view(torch.uint8).long() | (un.view(torch.uint8).long() << 8)
    u = _vote_table(up.device)[idx].view(torch.int8)[:n]
    if ternary and kind == GateKind.PATTERN:
        mask = keep if keep is not None else gate_keeps(spec.gate, base, u)
        u = u * mask.to(torch.int8)
    return u


def vote_update(signs: Union[torch.Tensor, Sequence[torch.Tensor]], n: int, spec: Spec, scale: float, base: Union[int, torch.Tensor] = 0,
                gates: Optional[torch.Tensor] = None, keep: Optional[torch.Tensor] = None,
                out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The FP32 update scale * u (or scale * m u) of worker-major planes, what
    decode(vote_planes(...), scale) gives, written into out (n float32
    values; allocated when None) without the int8 vector between: on the Go
    library, VotePlanes then DecodePlanes on the result planes."""
    if out is None:
        dev = signs.device if isinstance(signs, torch.Tensor) else signs[0].device
        out = torch.empty(n, dtype=torch.float32, device=dev)
    if out.numel() != n:
        raise ValueError(f"vote_update: out holds {out.numel()} values, want {n}")
    go = _go_planes(signs, gates) and _golib.usable(out) and out.dtype == torch.float32 and out.is_contiguous()
    if not go:
        out.copy_(decode(vote_planes(signs, n, spec, base, gates, keep), scale, out.dtype))
        return out
    _check_spec(spec, Layout.WORKER_MAJOR, base)
    pos, nz, gate_here = _go_vote_planes(signs, n, spec, base, gates, keep, _golib.scratch_planes(plane_bytes(n)))
    if gate_here:
        m = keep if keep is not None else gate_keeps(spec.gate, base, torch.empty(n, dtype=torch.int8))
        kp = _pack_bits(m)
        nz &= kp
        pos &= kp
    _golib.lib().nfl_decode_planes(out.data_ptr(), pos.data_ptr(), nz.data_ptr(), n, scale)
    return out


def decode(u: torch.Tensor, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The FP32 update scale * u[i] for aggregate values u in {-1, 0, +1}."""
    return u.to(dtype) * torch.tensor(scale, dtype=dtype, device=u.device)


def aggregate(g: Union[torch.Tensor, Sequence[torch.Tensor]], spec: Spec, base: Union[int, torch.Tensor] = 0,
              tau: float = 0.0) -> torch.Tensor:
    """The aggregate of W workers' gradients [W, n] under spec, through the
    spec's layout: encode each worker, vote. For the worker gate, tau is the
    absolute threshold (|g| > tau). Raises NonFiniteError naming the worker."""
    m = _workers_matrix(g)
    spec.validate()
    if m.shape[0] != spec.workers:
        raise ValueError(f"{m.shape[0]} workers of gradients for a {spec.workers}-worker spec")
    n = m.shape[1]
    if spec.layout == Layout.ELEMENT_MAJOR:
        gates = pack_packet_gates(m, tau) if spec.gate_bits() else None
        return vote_packet(pack_packet(m), spec, base, gates)
    signs = torch.stack([encode_signs(m[k], k) for k in range(spec.workers)])
    gates = torch.stack([encode_gates(m[k], tau, k) for k in range(spec.workers)]) if spec.gate_bits() else None
    return vote_planes(signs, n, spec, base, gates)
