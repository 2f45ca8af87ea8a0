"""The Go ``lowbit`` kernels for CPU tensors: the shared library built from
``./lowbit/cabi`` (its package comment documents the C ABI), loaded through
ctypes and called on the tensors' own memory (``data_ptr()``, no copies).

Where the library comes from, first found wins:

1. ``NFABRIC_LOWBIT_LIB=PATH``: that file (an error if it does not load);
2. ``nfabric/_lib/libnfabric_lowbit.so``, which ``pip install ./python``
   (or ``pip install -e ./python``) builds with Go into the package (the
   build backend, python/_build/nfabric_build.py).

``NFABRIC_LOWBIT=torch`` turns the library off. Without a library,
nfabric.lowbit runs its torch-op kernels (bit-identical, slower on CPU) and
warns once. CUDA tensors always take the torch-op path.

The library starts a Go runtime in this process on first use; a process
forked after that must not call it (torch.multiprocessing's ``spawn``, which
DDP launchers use, is fine).
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import threading
import warnings
from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:  # torch is imported only where a tensor is used
    import torch

# The C ABI versions this loader knows (lowbit/cabi's nfl_abi_version):
# 1 the vote kernels, 2 adds the INT8/BFP8 kernels. A version-1 library
# still serves the vote kernels (fixed() is then False and the summed
# formats run on torch ops); any other version is refused.
ABI_VERSION = 2
KNOWN_VERSIONS = (1, 2)
LIB_NAME = "libnfabric_lowbit.so"

_P = ctypes.c_void_p
_I64, _I32, _F = ctypes.c_int64, ctypes.c_int32, ctypes.c_float
_ERRLEN = 512

_SIGNATURES = {
    "nfl_abi_version": (_I64, []),
    "nfl_implementation": (_I64, [ctypes.c_char_p, _I64]),
    "nfl_encode_signs": (_I64, [_P, _P, _I64]),
    "nfl_encode_gates": (_I64, [_P, _P, _I64, _F, ctypes.c_char_p, _I64]),
    "nfl_vote_planes": (_I32, [_P, _P, _P, _P, _I32, _I64, _I32, _I32, _I32, _I64, ctypes.c_char_p, _I64]),
    "nfl_count_planes": (None, [_P, _P, _I32, _I64]),
    "nfl_decode_planes": (None, [_P, _P, _P, _I64, _F]),
    "nfl_unpack_planes": (None, [_P, _P, _P, _I64]),
    "nfl_planes_to_packet": (_I32, [_P, _P, _I32, _I64, ctypes.c_char_p, _I64]),
    "nfl_vote_packet": (_I32, [_P, _P, _P, _I64, _I32, _I32, _I32, _I32, _I64, ctypes.c_char_p, _I64]),
    "nfl_count_packet": (None, [_P, _P, _I64, _I32]),
}

# Added in version 2 (the summed formats beyond the paper).
_SIGNATURES_V2 = {
    "nfl_encode_int8": (_I64, [_P, _P, _I64, _F, ctypes.c_char_p, _I64]),
    "nfl_sum_int8": (_I32, [_P, _P, _I32, _I64, ctypes.c_char_p, _I64]),
    "nfl_decode_int8": (_I32, [_P, _P, _I64, _F, _I32, ctypes.c_char_p, _I64]),
    "nfl_encode_bfp8": (_I64, [_P, _P, _P, _I64]),
    "nfl_sum_bfp8": (_I32, [_P, _P, _P, _P, _I32, _I64, ctypes.c_char_p, _I64]),
    "nfl_decode_bfp8": (_I32, [_P, _P, _P, _I64, _I32, ctypes.c_char_p, _I64]),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_tried = False
_why = ""


def _candidates() -> List[pathlib.Path]:
    return [pathlib.Path(__file__).resolve().parent / "_lib" / LIB_NAME]


def _open(path: pathlib.Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.nfl_abi_version.restype, lib.nfl_abi_version.argtypes = _I64, []
    v = lib.nfl_abi_version()
    if v not in KNOWN_VERSIONS:
        raise RuntimeError(f"{path}: C ABI version {v}, this nfabric knows versions {list(KNOWN_VERSIONS)} "
                           "(rebuild: pip install ./python)")
    sigs = dict(_SIGNATURES, **(_SIGNATURES_V2 if v >= 2 else {}))
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    lib.nfl_version = v
    return lib


def _load() -> Optional[ctypes.CDLL]:
    if os.environ.get("NFABRIC_LOWBIT", "").lower() == "torch":
        raise RuntimeError("NFABRIC_LOWBIT=torch")
    explicit = os.environ.get("NFABRIC_LOWBIT_LIB")
    if explicit:
        return _open(pathlib.Path(explicit))
    cands = _candidates()
    for p in cands:
        if p.is_file():
            return _open(p)
    raise RuntimeError(f"{cands[0]} is missing (pip install ./python with Go and a C compiler on PATH builds it)")


def lib() -> Optional[ctypes.CDLL]:
    """The loaded library, or None (with one warning saying why) when it
    cannot be found, built or loaded."""
    global _lib, _tried, _why
    if _tried:
        return _lib
    with _lock:
        if not _tried:
            try:
                _lib = _load()
            except (OSError, RuntimeError, AttributeError) as e:
                _why = str(e)
                if os.environ.get("NFABRIC_LOWBIT", "").lower() != "torch":
                    warnings.warn(f"nfabric: the Go lowbit kernels are not available ({e}); "
                                  "CPU tensors use the torch-op kernels (same bits, slower)", RuntimeWarning, stacklevel=3)
            _tried = True
    return _lib


def reason() -> str:
    """Why the library is not in use ('' when it is)."""
    lib()
    return _why


def implementation() -> str:
    """The kernel set the library runs ("avx2", "go"), or "torch"."""
    L = lib()
    if L is None:
        return "torch"
    buf = ctypes.create_string_buffer(32)
    L.nfl_implementation(buf, 32)
    return buf.value.decode()


def usable(*ts: Optional[torch.Tensor]) -> bool:
    """Whether the library should run on these tensors: all on the CPU (None
    entries are ignored) and the library loaded."""
    for t in ts:
        if t is not None and t.device.type != "cpu":
            return False
    return lib() is not None


def fixed_usable(*ts: Optional[torch.Tensor]) -> bool:
    """usable(*ts), and the library has the INT8/BFP8 kernels (version 2)."""
    return usable(*ts) and getattr(lib(), "nfl_version", 0) >= 2


def ptr(t: torch.Tensor) -> int:
    return t.data_ptr()


def ptrs(planes: Sequence[torch.Tensor]) -> ctypes.Array:
    """A C array of the planes' addresses (each contiguous uint8)."""
    return (ctypes.c_void_p * len(planes))(*[p.data_ptr() for p in planes])


_scratch = threading.local()


def scratch_planes(nb: int) -> "tuple[torch.Tensor, torch.Tensor]":
    """Two uint8 tensors of nb bytes for result planes that do not outlive
    the call (vote_update, vote_planes): one buffer per thread, kept at the
    largest size asked for, so that repeated votes write into memory that
    is already mapped. Fresh outputs fault their pages in on every call
    (glibc returns large blocks to the OS on free): at 64 MiB of W=8 planes
    that is 4096 minor faults a call and a third of the kernel's speed
    (python/benchmarks/kernels.py, the "fresh" rows)."""
    import torch
    buf = getattr(_scratch, "planes", None)
    if buf is None or buf.numel() < 2 * nb:
        buf = torch.empty(2 * nb, dtype=torch.uint8)
        _scratch.planes = buf
    return buf[:nb], buf[nb:2 * nb]


def errbuf() -> ctypes.Array:
    return ctypes.create_string_buffer(_ERRLEN)


def check(rc: int, err: ctypes.Array, what: str) -> None:
    if rc != 0:
        raise ValueError(f"{what}: {err.value.decode(errors='replace')}")
