"""NEURON-Fabric payload files (``.nfp``), as written by ``nfabric payload
encode`` and read by ``nfabric payload aggregate`` (Go package ``payload``).

A file is one 64-byte header line followed by payload lines laid out
exactly as the runtime writes them into the CXL-resident gradient buffer.
Header (version 1, little-endian)::

    0  magic "NFPL"   4 version   6 layout   7 format   8 gate kind   9 reserved
    10 workers (u16)  12 gate parameter (u32)  16 elements (u64)  24 base (u64)
    32 CRC-32 (IEEE) of bytes 0-31   36-63 reserved, zero

Element-major sign data is n bytes padded to a whole line; worker-major
sign data is W planes of ceil(n/8) bytes, each padded to a whole line. Gate
data (worker gate only) has the same shape and follows the signs.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from typing import Optional

import torch

from . import lowbit
from .lowbit import Format, Gate, GateKind, Layout, Spec

MAGIC = b"NFPL"
VERSION = 1
HEADER_BYTES = lowbit.LINE_BYTES
MAX_ELEMENTS = 1 << 36


def _pad_line(n: int) -> int:
    return (n + lowbit.LINE_BYTES - 1) // lowbit.LINE_BYTES * lowbit.LINE_BYTES


@dataclasses.dataclass
class Header:
    """A payload file's header: the spec, the element count and the
    flattened index of element 0 (the pattern gate depends on it)."""

    spec: Spec
    elements: int
    base: int = 0

    def validate(self) -> None:
        self.spec.validate()
        if not 0 <= self.elements <= MAX_ELEMENTS:
            raise ValueError(f"element count {self.elements} out of range [0, {MAX_ELEMENTS}]")
        if not 0 <= self.base <= 1 << 62:
            raise ValueError(f"base index {self.base} out of range")

    def plane_stride(self) -> int:
        return _pad_line(lowbit.plane_bytes(self.elements))

    def section_bytes(self) -> int:
        if self.spec.layout == Layout.WORKER_MAJOR:
            return self.spec.workers * self.plane_stride()
        return _pad_line(self.elements)

    def file_bytes(self) -> int:
        return HEADER_BYTES + self.section_bytes() * (2 if self.spec.gate_bits() else 1)

    def marshal(self) -> bytes:
        self.validate()
        s = self.spec
        kind, param = 0, 0
        if s.format == Format.TERNARY:
            kind = int(s.gate.kind)
            if s.gate.kind == GateKind.PATTERN:
                param = s.gate.effective_period()
            elif s.gate.kind == GateKind.MARGIN:
                param = s.gate.threshold
        head = MAGIC + struct.pack("<HBBBBHIQQ", VERSION, int(s.layout), int(s.format), kind, 0,
                                   s.workers, param, self.elements, self.base)
        return head + struct.pack("<I", zlib.crc32(head) & 0xFFFFFFFF) + bytes(HEADER_BYTES - 36)

    @classmethod
    def unmarshal(cls, b: bytes) -> "Header":
        if len(b) < HEADER_BYTES:
            raise ValueError(f"header is {len(b)} bytes, want {HEADER_BYTES}")
        if b[:4] != MAGIC:
            raise ValueError(f"bad magic {b[:4]!r}, want {MAGIC!r} (not a payload file?)")
        version, layout, fmt, kind, reserved, workers, param, n, base = struct.unpack_from("<HBBBBHIQQ", b, 4)
        if version != VERSION:
            raise ValueError(f"unsupported version {version}, want {VERSION}")
        (crc,) = struct.unpack_from("<I", b, 32)
        if crc != zlib.crc32(b[:32]) & 0xFFFFFFFF:
            raise ValueError("header checksum mismatch (corrupt header)")
        if reserved != 0 or any(b[36:HEADER_BYTES]):
            raise ValueError("reserved header bytes are not zero")
        gate = Gate()
        if fmt == Format.TERNARY:
            if kind == GateKind.PATTERN:
                gate = Gate(GateKind.PATTERN, param)
            elif kind == GateKind.MARGIN:
                gate = Gate(GateKind.MARGIN, threshold=param)
            elif kind == GateKind.WORKER and param == 0:
                gate = Gate(GateKind.WORKER)
            else:
                raise ValueError(f"gate kind {kind} with parameter {param} is not valid")
        elif kind != 0 or param != 0:
            raise ValueError(f"format {fmt} has no gate, header has kind {kind} parameter {param}")
        try:
            h = cls(Spec(workers, Layout(layout), Format(fmt), gate), n, base)
        except ValueError as e:
            raise ValueError(f"header: {e}") from None
        h.validate()
        return h


@dataclasses.dataclass
class File:
    """A payload held in memory: header, sign data and (worker gate) gate
    data as uint8 CPU tensors of section_bytes() each."""

    header: Header
    signs: torch.Tensor
    gates: Optional[torch.Tensor] = None

    def plane(self, k: int, gates: bool = False) -> torch.Tensor:
        """Worker k's plane (worker-major files)."""
        s, nb = self.header.plane_stride(), lowbit.plane_bytes(self.header.elements)
        data = self.gates if gates else self.signs
        assert data is not None
        return data[k * s:k * s + nb]

    def planes(self, gates: bool = False) -> torch.Tensor:
        return torch.stack([self.plane(k, gates) for k in range(self.header.spec.workers)])

    def to_bytes(self) -> bytes:
        out = self.header.marshal() + self.signs.numpy().tobytes()
        if self.gates is not None:
            out += self.gates.numpy().tobytes()
        return out

    def vote(self, spec: Optional[Spec] = None) -> torch.Tensor:
        """The aggregate under spec (default: the header's)."""
        h = self.header
        s = spec or h.spec
        n = h.elements
        if s.layout == Layout.ELEMENT_MAJOR:
            g = self.gates[:n] if s.gate_bits() and self.gates is not None else None
            return lowbit.vote_packet(self.signs[:n], s, h.base, g)
        g = self.planes(True) if s.gate_bits() and self.gates is not None else None
        return lowbit.vote_planes(self.planes(), n, s, h.base, g)


def encode(header: Header, g: torch.Tensor, tau: float = 0.0) -> File:
    """Packs W workers' gradients [W, n] into a payload under header.spec
    (the Python twin of Go's payload.Encode); header.elements is set from g."""
    g = g.detach().to("cpu", torch.float32)
    h = dataclasses.replace(header, elements=int(g.shape[1]))
    h.validate()
    if g.shape[0] != h.spec.workers:
        raise ValueError(f"{g.shape[0]} workers of gradients for a {h.spec.workers}-worker spec")
    sec = h.section_bytes()

    def section(gates: bool) -> torch.Tensor:
        out = torch.zeros(sec, dtype=torch.uint8)
        if h.spec.layout == Layout.ELEMENT_MAJOR:
            out[:h.elements] = lowbit.pack_packet_gates(g, tau) if gates else lowbit.pack_packet(g)
        else:
            s, nb = h.plane_stride(), lowbit.plane_bytes(h.elements)
            for k in range(h.spec.workers):
                out[k * s:k * s + nb] = lowbit.encode_gates(g[k], tau, k) if gates else lowbit.encode_signs(g[k], k)
        return out

    return File(h, section(False), section(True) if h.spec.gate_bits() else None)


def read(data: bytes) -> File:
    """Parses and validates a whole payload file."""
    h = Header.unmarshal(data[:HEADER_BYTES])
    if len(data) != h.file_bytes():
        raise ValueError(f"file is {len(data)} bytes, header describes {h.file_bytes()}")
    sec = h.section_bytes()
    raw = torch.frombuffer(bytearray(data[HEADER_BYTES:]), dtype=torch.uint8)
    f = File(h, raw[:sec].clone(), raw[sec:].clone() if h.spec.gate_bits() else None)
    return f
