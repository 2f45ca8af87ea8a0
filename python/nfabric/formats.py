"""The payload vocabulary: formats, layouts, gates and one aggregation's
spec, with their parsers, as in Go's ``lowbit`` (names, numbers and
aliases from ``_formats``, generated from Go's format table).

This module needs no torch: ``nfabric.policy`` (rule specs and policies)
builds on it and imports on a machine without torch; ``nfabric.lowbit``
re-exports it beside the tensor kernels.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Optional

from . import _formats

__all__ = [
    "LINE_BYTES", "PACKET_ELEMENTS", "PLANE_ELEMENTS", "MAX_PACKET_WORKERS", "MAX_WORKERS",
    "Format", "Layout", "GateKind", "Gate", "PAPER_GATE", "Spec", "NonFiniteError",
    "parse_format", "parse_layout", "parse_gate", "plane_bytes", "lines",
]

LINE_BYTES = 64
"""Size of a CXL cache line in bytes."""
PACKET_ELEMENTS = LINE_BYTES
"""Elements one element-major packet line holds."""
PLANE_ELEMENTS = LINE_BYTES * 8
"""Elements one worker-major bit-plane line holds."""
MAX_PACKET_WORKERS = 8
"""Most workers an element-major packet carries."""
MAX_WORKERS = 1024
"""Most workers the worker-major layout supports."""


class Format(enum.IntEnum):
    """A gradient payload format (numbered as in Go and the payload header;
    names and aliases from ``_formats``, generated from Go's table). INT8
    and BFP8 are the summed formats beyond the paper (``nfabric.fixed``)."""

    FP32 = 0
    BINARY = 1
    TERNARY = 2
    INT8 = 3
    BFP8 = 4

    def __str__(self) -> str:
        return _formats.FORMATS[int(self)][1]

    def vote(self) -> bool:
        """Aggregated by the sign vote (G-Binary, G-Ternary)."""
        return _formats.FORMATS[int(self)][3] == "vote"

    def sum(self) -> bool:
        """Aggregated by an integer lane sum decoded to the mean (INT8, BFP8)."""
        return _formats.FORMATS[int(self)][3] == "sum"


class Layout(enum.IntEnum):
    """How worker payloads are arranged in cache lines."""

    ELEMENT_MAJOR = 0
    WORKER_MAJOR = 1

    def __str__(self) -> str:
        return "element-major" if self == Layout.ELEMENT_MAJOR else "worker-major"

    def max_workers(self) -> int:
        """The most workers the layout carries."""
        return MAX_PACKET_WORKERS if self == Layout.ELEMENT_MAJOR else MAX_WORKERS


class GateKind(enum.IntEnum):
    """The G-Ternary zero gate's kind."""

    PATTERN = 0
    WORKER = 1
    MARGIN = 2


@dataclasses.dataclass(frozen=True)
class Gate:
    """A G-Ternary zero gate. ``Gate()`` is the paper's 2-of-3 pattern.

    ``period`` applies to the pattern gate (0 means 3; 2 to 64),
    ``threshold`` to the margin gate (|a| < threshold is zeroed; 1 to 2048).
    """

    kind: GateKind = GateKind.PATTERN
    period: int = 0
    threshold: int = 0

    def effective_period(self) -> int:
        return 3 if self.period == 0 else self.period

    def extension(self) -> bool:
        """Whether the gate goes beyond the paper's evaluation."""
        return not (self.kind == GateKind.PATTERN and self.effective_period() == 3)

    def validate(self) -> None:
        if self.kind == GateKind.PATTERN:
            p = self.effective_period()
            if p < 2 or p > 64:
                raise ValueError(f"gate pattern period {p} out of range [2, 64]")
        elif self.kind == GateKind.MARGIN:
            if self.threshold < 1 or self.threshold > 2 * MAX_WORKERS:
                raise ValueError(f"gate margin threshold {self.threshold} out of range [1, {2 * MAX_WORKERS}]")
        elif self.kind != GateKind.WORKER:
            raise ValueError(f"unknown gate kind {self.kind}")

    def __str__(self) -> str:
        if self.kind == GateKind.PATTERN:
            return f"pattern:{self.effective_period()}"
        if self.kind == GateKind.WORKER:
            return "worker"
        return f"margin:{self.threshold}"


PAPER_GATE = Gate(GateKind.PATTERN, 3)
"""The paper's evaluated gate: the fixed 2-of-3 pattern."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """One low-bit aggregation: workers, layout, format and (G-Ternary) gate."""

    workers: int
    layout: Layout = Layout.WORKER_MAJOR
    format: Format = Format.BINARY
    gate: Gate = Gate()

    def gate_bits(self) -> bool:
        """Whether workers write gate bits beside their signs."""
        return self.format == Format.TERNARY and self.gate.kind == GateKind.WORKER

    def validate(self) -> None:
        if self.format not in (Format.BINARY, Format.TERNARY):
            raise ValueError(f"format {self.format} has no low-bit aggregate")
        limit = Layout(self.layout).max_workers()
        if self.workers < 1 or self.workers > limit:
            raise ValueError(f"{Layout(self.layout)} payloads carry 1 to {limit} workers, not {self.workers}")
        if self.format == Format.TERNARY:
            self.gate.validate()


class NonFiniteError(ValueError):
    """A NaN or infinite gradient, which never becomes a sign: the bucket that
    holds it stays on FP32."""

    def __init__(self, index: int, value: float, worker: Optional[int] = None):
        self.index, self.value, self.worker = index, value, worker
        who = "" if worker is None else f"worker {worker}: "
        super().__init__(f"{who}element {index} is {value}, not a finite number")


def parse_format(s: str) -> Format:
    """Accepts each format's name or alias in any case, as Go's
    ParseFormat: fp32 (float32), g-binary (binary), g-ternary (ternary),
    int8 and bfp8 (the table in ``_formats``)."""
    v = s.strip().lower()
    for num, name, aliases, _family, _bits, _paper in _formats.FORMATS:
        if v == name or v in aliases:
            return Format(num)
    raise ValueError(f"unknown format {s!r} (want one of {', '.join(r[1] for r in _formats.FORMATS)})")


def parse_layout(s: str) -> Layout:
    """Accepts element-major (packet) and worker-major (planes)."""
    v = s.strip().lower()
    if v in ("element-major", "element", "packet"):
        return Layout.ELEMENT_MAJOR
    if v in ("worker-major", "worker", "planes", "plane"):
        return Layout.WORKER_MAJOR
    raise ValueError(f"unknown layout {s!r} (want element-major or worker-major)")


def parse_gate(s: str) -> Gate:
    """Accepts pattern (the paper's 2-of-3), pattern:P, worker and margin:T."""
    name, sep, arg = s.strip().lower().partition(":")

    def num() -> int:
        if not sep:
            raise ValueError(f"gate {s!r} needs a number after ':'")
        try:
            return int(arg)
        except ValueError:
            what = "pattern period" if name in ("pattern", "paper", "2of3") else "margin threshold"
            raise ValueError(f"gate {s!r}: {what} {arg.strip()!r} is not a whole number") from None

    if name in ("pattern", "paper", "2of3"):
        g = Gate(GateKind.PATTERN, num() if sep else 3)
        if not 2 <= g.period <= 64:  # a typed 0 is not Gate's zero-value default
            raise ValueError(f"gate {s!r}: pattern period {g.period} out of range [2, 64]")
    elif name == "worker":
        if sep:
            raise ValueError(f"gate {s!r} takes no argument")
        g = Gate(GateKind.WORKER)
    elif name == "margin":
        g = Gate(GateKind.MARGIN, threshold=num())
    else:
        raise ValueError(f"unknown gate {s!r} (want pattern, pattern:P, worker or margin:T)")
    try:
        g.validate()
    except ValueError as e:
        raise ValueError(f"gate {s!r}: {e}") from None
    return g


def plane_bytes(n: int) -> int:
    """Bytes a bit-plane of n elements takes: ceil(n/8)."""
    return (n + 7) // 8


def lines(nbytes: int) -> int:
    """How many 64-byte lines hold nbytes."""
    return (nbytes + LINE_BYTES - 1) // LINE_BYTES
