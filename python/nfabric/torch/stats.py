"""Traffic and mode statistics, measured from what the aggregation sent.

Bytes are what one worker (rank) puts on the wire per step: on the dense
path (FP32 calibration and recovery: the framework's own all-reduce or
reduce-scatter) every element at its bucket's element size (4 bytes for
float32 gradients, 2 for bfloat16 and float16), on the low-bit path the
packed planes (one bit an element, two with worker gate bits) or the
INT8/BFP8 codes, and separately the small control messages (the
per-bucket NaN/Inf flag, the broadcast modes) as "header" bytes. The
reference ("dense" bytes) is every element at its bucket's element size:
their ratio is the paper's traffic ratio for the dtype the model trains
in, measured rather than computed from the format (a bfloat16 model's
G-Binary ratio is 1/16, a float32 model's 1/32).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Dict, List, Optional, Tuple

from ..lowbit import Format


@dataclasses.dataclass
class RecoveryEvent:
    """A group or bucket sent to FP32 against its low-bit mode: ``reason`` is
    ``"nonfinite"`` (a NaN/Inf on some rank), ``"control"`` (the control
    plane returned it to FP32) or ``"control-lost"`` (the control service
    failed; FP32 until it answers)."""

    step: int
    reason: str
    groups: Tuple[str, ...]
    bucket: Optional[int] = None

    def as_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


class Stats:
    """Per-step and total traffic by group and mode, the low-bit step
    fraction and the recovery events."""

    def __init__(self) -> None:
        self.steps = 0
        self.low_bit_steps = 0
        self.bytes: Dict[Tuple[str, str], int] = {}
        self.dense_bytes: Dict[Tuple[str, str], int] = {}
        self.header_bytes = 0
        self.events: List[RecoveryEvent] = []
        self.history: List[Dict[str, Any]] = []
        # Wall time inside the hook (encode, the low-bit collectives and the
        # vote; an FP32 bucket's all-reduce only starts there).
        self.hook_seconds = 0.0
        # The part of hook_seconds spent blocked in the hook's own
        # collectives (the NaN/Inf flag, the planes' all-gather, waits):
        # the transfer, and the wait for slower ranks to reach the bucket.
        # hook_seconds - wait_seconds is the hook's own work.
        self.wait_seconds = 0.0
        # CPU time of the thread running the hook (time.thread_time): its
        # own work whatever else the machine runs (blocking waits use none).
        # Both also count the vote a bucket's future runs when its planes
        # arrive, on the thread that completes them (hence the lock).
        self.hook_cpu_seconds = 0.0
        self._time_lock = threading.Lock()
        self._step: Dict[str, Any] = self._fresh()

    def __getstate__(self) -> Dict[str, Any]:
        # Picklable (Lightning's ddp_spawn pickles the callbacks): no lock.
        d = self.__dict__.copy()
        d.pop("_time_lock", None)
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._time_lock = threading.Lock()

    @staticmethod
    def _fresh() -> Dict[str, Any]:
        return {"bytes": 0, "dense_bytes": 0, "header_bytes": 0, "modes": {}}

    def add(self, group: str, mode: Format, nbytes: int, elements: int, element_size: int = 4) -> None:
        """nbytes went on the wire for elements of group under mode; the
        dense path would have sent element_size bytes for each."""
        key = (group, str(mode))
        dense = element_size * elements
        self.bytes[key] = self.bytes.get(key, 0) + nbytes
        self.dense_bytes[key] = self.dense_bytes.get(key, 0) + dense
        s = self._step
        s["bytes"] += nbytes
        s["dense_bytes"] += dense
        modes = s["modes"]
        if modes.get(group) not in (None, str(mode)):
            modes[group] = "mixed"
        else:
            modes[group] = str(mode)

    def add_time(self, seconds: float, cpu_seconds: float = 0.0) -> None:
        with self._time_lock:
            self.hook_seconds += seconds
            self.hook_cpu_seconds += cpu_seconds

    def add_wait(self, seconds: float) -> None:
        self.wait_seconds += seconds

    def add_header(self, nbytes: int) -> None:
        self.header_bytes += nbytes
        self._step["header_bytes"] += nbytes

    def event(self, ev: RecoveryEvent) -> None:
        self.events.append(ev)

    def end_step(self) -> None:
        s = self._step
        s["step"] = self.steps
        low = any(m != str(Format.FP32) for m in s["modes"].values())
        s["low_bit"] = low
        self.low_bit_steps += int(low)
        self.steps += 1
        self.history.append(s)
        self._step = self._fresh()

    def summary(self) -> Dict[str, Any]:
        """Totals: bytes per group and mode, the payload ratio against the
        dense path (without and with headers), the low-bit step fraction,
        events."""
        tb, tf = sum(self.bytes.values()), sum(self.dense_bytes.values())
        rows = []
        for (g, m), b in sorted(self.bytes.items()):
            f = self.dense_bytes[(g, m)]
            rows.append({"group": g, "mode": m, "bytes": b, "dense_bytes": f, "ratio": b / f if f else 0.0})
        return {
            "steps": self.steps,
            "low_bit_steps": self.low_bit_steps,
            "low_bit_step_fraction": self.low_bit_steps / self.steps if self.steps else 0.0,
            "groups": rows,
            "bytes": tb,
            "dense_bytes": tf,
            "header_bytes": self.header_bytes,
            "ratio": tb / tf if tf else 0.0,
            "ratio_with_headers": (tb + self.header_bytes) / tf if tf else 0.0,
            "recovery_events": [e.as_dict() for e in self.events],
            "hook_seconds": self.hook_seconds,
            "wait_seconds": self.wait_seconds,
            "hook_cpu_seconds": self.hook_cpu_seconds,
        }

    def text(self) -> str:
        s = self.summary()
        out = [f"{s['steps']} steps, low-bit step fraction {s['low_bit_step_fraction']:.4f}, "
               f"wire bytes/dense {s['ratio']:.5f} (with headers {s['ratio_with_headers']:.5f})"]
        for r in s["groups"]:
            out.append(f"  {r['group']:<10} {r['mode']:<10} {r['bytes']:>14} B  vs dense {r['dense_bytes']:>14} B  "
                       f"ratio {r['ratio']:.5f}")
        out.append(f"  headers {s['header_bytes']} B; recovery events {len(s['recovery_events'])}")
        return "\n".join(out)

    # -- checkpoints -------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """Everything the statistics hold, as plain Python values (no lock):
        what Fabric.state_dict saves."""
        return {
            "steps": self.steps,
            "low_bit_steps": self.low_bit_steps,
            "bytes": [[g, m, b] for (g, m), b in sorted(self.bytes.items())],
            "dense_bytes": [[g, m, b] for (g, m), b in sorted(self.dense_bytes.items())],
            "header_bytes": self.header_bytes,
            "events": [e.as_dict() for e in self.events],
            "history": [dict(h, modes=dict(h["modes"])) for h in self.history],
            "hook_seconds": self.hook_seconds,
            "wait_seconds": self.wait_seconds,
            "hook_cpu_seconds": self.hook_cpu_seconds,
        }

    def load_state_dict(self, sd: Dict[str, Any]) -> None:
        """Restores state_dict()'s values; ValueError names a malformed entry."""
        if not isinstance(sd, dict):
            raise ValueError(f"statistics in the checkpoint are malformed (a {type(sd).__name__}, not a dict)")
        try:
            self.steps = int(sd["steps"])
            self.low_bit_steps = int(sd["low_bit_steps"])
            self.bytes = {(str(g), str(m)): int(b) for g, m, b in sd["bytes"]}
            self.dense_bytes = {(str(g), str(m)): int(b) for g, m, b in sd["dense_bytes"]}
            self.header_bytes = int(sd["header_bytes"])
            self.events = [RecoveryEvent(int(e["step"]), str(e["reason"]), tuple(e["groups"]),
                                         None if e.get("bucket") is None else int(e["bucket"])) for e in sd["events"]]
            self.history = [dict(h, modes=dict(h["modes"])) for h in sd["history"]]
            self.hook_seconds = float(sd["hook_seconds"])
            self.wait_seconds = float(sd["wait_seconds"])
            self.hook_cpu_seconds = float(sd["hook_cpu_seconds"])
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise ValueError(f"statistics in the checkpoint are malformed ({type(e).__name__}: {e})") from None
        if not 0 <= self.low_bit_steps <= self.steps or set(self.bytes) != set(self.dense_bytes):
            raise ValueError("statistics in the checkpoint are inconsistent (low-bit steps or byte tables)")
        self._step = self._fresh()
