"""The Go ``lowbit`` kernels for CPU tensors: the shared library built from
``./lowbit/cabi`` (its package comment documents the C ABI), loaded through
ctypes and called on the tensors' own memory (``data_ptr()``, no copies).

Where the library comes from, first found wins:

1. ``NFABRIC_LOWBIT_LIB=PATH``: that file (an error if it does not load);
2. ``nfabric/_lib/libnfabric_lowbit.so``, which ``pip install ./python``
   builds with Go (python/setup.py);
3. in a source checkout with ``go`` on PATH: built on first use into
   ``~/.cache/nfabric/lowbit/<hash of the Go sources>/``.

``NFABRIC_LOWBIT=torch`` turns the library off. Without a library,
nfabric.lowbit runs its torch-op kernels (bit-identical, slower on CPU) and
warns once. CUDA tensors always take the torch-op path.

The library starts a Go runtime in this process on first use; a process
forked after that must not call it (torch.multiprocessing's ``spawn``, which
DDP launchers use, is fine).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import threading
import warnings
from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:  # torch is not imported here, so setup.py can load this file to build the library
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


def _repo_root() -> Optional[pathlib.Path]:
    """The Go module this package sits in, when run from a checkout."""
    here = pathlib.Path(__file__).resolve().parent
    for d in here.parents:
        if (d / "go.mod").is_file() and (d / "lowbit" / "cabi").is_dir():
            return d
    return None


def source_hash(root: pathlib.Path) -> str:
    """A digest of the Go sources the library is built from."""
    h = hashlib.sha256()
    files = [root / "go.mod", root / "go.sum"] + sorted((root / "lowbit").glob("*.go")) + \
        sorted((root / "lowbit").glob("*.s")) + sorted((root / "lowbit" / "cabi").glob("*.go"))
    for f in files:
        if f.is_file() and not f.name.endswith("_test.go"):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def build(root: pathlib.Path, out: pathlib.Path) -> None:
    """Builds the library from the module at root into out (go build
    -buildmode=c-shared; needs go and a C compiler). Raises RuntimeError."""
    out = pathlib.Path(out).resolve()  # go build runs in root
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("go is not on PATH")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    env = dict(os.environ, CGO_ENABLED="1")
    r = subprocess.run([go, "build", "-buildmode=c-shared", "-trimpath", "-o", str(tmp), "./lowbit/cabi"],
                       cwd=root, env=env, capture_output=True, text=True)
    tmp.with_suffix(".h").unlink(missing_ok=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"go build ./lowbit/cabi failed: {r.stderr.strip()[-2000:]}")
    os.replace(tmp, out)  # atomic: concurrent builders (DDP ranks) never see half a file


def _candidates() -> List[pathlib.Path]:
    out = [pathlib.Path(__file__).resolve().parent / "_lib" / LIB_NAME]
    root = _repo_root()
    if root is not None:
        cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
        out.append(cache / "nfabric" / "lowbit" / source_hash(root) / LIB_NAME)
    return out


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
    root = _repo_root()
    if root is None:
        raise RuntimeError(f"{cands[0]} is missing (install with pip install ./python, Go on PATH)")
    build(root, cands[-1])
    return _open(cands[-1])


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
