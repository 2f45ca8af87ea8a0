"""nfabric's PEP 517 build backend: ``pip install ./python`` builds a wheel
that ships the Go lowbit kernels.

The wheel holds the ``nfabric`` package and, when this directory sits in
its Go module (a source checkout) with ``go`` and a C compiler on PATH,
``nfabric/_lib/libnfabric_lowbit.so`` built by ``go build
-buildmode=c-shared ./lowbit/cabi`` (nfabric._golib loads it through
ctypes); the wheel is then tagged for this platform (``py3-none-<plat>``:
the library is called through ctypes, so no Python ABI). Without Go, the
module or a compiler (an sdist, NFABRIC_LOWBIT=torch) it is a pure
``py3-none-any`` wheel and nfabric runs its torch-op kernels, saying so;
NFABRIC_LOWBIT=require makes a failed Go build an error instead.

It needs nothing but the standard library, so pip's isolated build
environment needs no download. The metadata comes from pyproject.toml's
[project] table (read with tomllib, or on Python 3.10 with the small
reader below, which takes the subset that file uses).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

HERE = pathlib.Path(__file__).resolve().parent.parent  # python/
LIB = "libnfabric_lowbit.so"


# -- pyproject ----------------------------------------------------------------

def _toml(text: str) -> Dict[str, Any]:
    try:
        import tomllib  # Python >= 3.11
        return tomllib.loads(text)
    except ImportError:
        return _mini_toml(text)


def _mini_toml(text: str) -> Dict[str, Any]:
    """Tables, dotted-free keys, strings, booleans and (multi-line) string
    lists: what pyproject.toml here uses."""
    out: Dict[str, Any] = {}
    cur = out
    buf = ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip() if not buf else raw.strip()
        if buf:
            buf += " " + line
            if buf.count("[") == buf.count("]"):
                k, v = buf.split("=", 1)
                cur[k.strip()] = _mini_value(v.strip())
                buf = ""
            continue
        if not line:
            continue
        m = re.fullmatch(r"\[([^\]]+)\]", line)
        if m:
            cur = out
            for part in m.group(1).split("."):
                cur = cur.setdefault(part.strip().strip('"'), {})
            continue
        k, v = line.split("=", 1)
        v = v.strip()
        if v.startswith("[") and v.count("[") != v.count("]"):
            buf = line
            continue
        cur[k.strip().strip('"')] = _mini_value(v)
    return out


def _mini_value(v: str) -> Any:
    if v.startswith("["):
        return [x.strip().strip('"') for x in v.strip("[]").split(",") if x.strip()]
    if v in ("true", "false"):
        return v == "true"
    return v.strip('"')


def _project() -> Dict[str, Any]:
    return _toml((HERE / "pyproject.toml").read_text())["project"]


def _metadata(p: Dict[str, Any]) -> str:
    lines = ["Metadata-Version: 2.4", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p['description']}", f"Requires-Python: {p['requires-python']}",
             f"License-Expression: {p['license']}"]
    for dep in p.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for dep in deps:
            lines.append(f"Requires-Dist: {dep}; extra == \"{extra}\"")
    readme = p.get("readme")
    body = ""
    if readme and (HERE / readme).is_file():
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + (HERE / readme).read_text()
    return "\n".join(lines) + "\n" + body


# -- the Go library -------------------------------------------------------------

def _go_library(out_dir: pathlib.Path) -> Optional[pathlib.Path]:
    """Builds the Go lowbit library into out_dir, or None (saying why)."""
    mode = os.environ.get("NFABRIC_LOWBIT", "").lower()
    if mode == "torch":
        return None
    root = HERE.parent
    why = None
    if not (root / "go.mod").is_file() or not (root / "lowbit" / "cabi").is_dir():
        why = f"no Go module at {root} (an sdist)"
    elif shutil.which("go") is None:
        why = "go is not on PATH"
    else:
        out = (out_dir / LIB).resolve()  # go build runs in the module's root
        env = dict(os.environ, CGO_ENABLED="1")
        r = subprocess.run(["go", "build", "-buildmode=c-shared", "-trimpath", "-o", str(out), "./lowbit/cabi"],
                           cwd=root, env=env, capture_output=True, text=True)
        out.with_suffix(".h").unlink(missing_ok=True)
        if r.returncode == 0:
            print(f"nfabric: built the Go lowbit kernels ({LIB})", file=sys.stderr)
            return out
        why = f"go build ./lowbit/cabi failed: {r.stderr.strip()[-1500:]}"
    if mode == "require":
        raise RuntimeError(f"nfabric: NFABRIC_LOWBIT=require and the Go lowbit kernels cannot be built: {why}")
    print(f"nfabric: WARNING: installing without the Go lowbit kernels ({why}); CPU tensors use the torch-op "
          "kernels (same bits, slower)", file=sys.stderr)
    return None


# -- wheels -----------------------------------------------------------------------

def _files() -> List[Tuple[str, pathlib.Path]]:
    pkg = HERE / "nfabric"
    out = []
    for f in sorted(pkg.rglob("*")):
        rel = f.relative_to(HERE).as_posix()
        if f.is_file() and "__pycache__" not in rel and not rel.startswith("nfabric/_lib/") and \
                not f.name.endswith((".pyc", ".so")):
            out.append((rel, f))
    return out


def _tag(binary: bool) -> str:
    if not binary:
        return "py3-none-any"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _record_line(name: str, data: bytes) -> List[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _write_wheel(wheel_directory: str, extra: List[Tuple[str, bytes]], editable_root: Optional[pathlib.Path] = None,
                 binary: bool = False) -> str:
    p = _project()
    name, version = p["name"], p["version"]
    tag = _tag(binary)
    whl = f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    entries: List[Tuple[str, bytes]] = []
    if editable_root is None:
        entries += [(rel, f.read_bytes()) for rel, f in _files()]
    else:
        entries.append((f"__editable__.{name}.pth", (str(editable_root) + "\n").encode()))
    entries += extra
    entries.append((f"{info}/METADATA", _metadata(p).encode()))
    entries.append((f"{info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: nfabric_build\n"
                                      f"Root-Is-Purelib: {'false' if binary else 'true'}\nTag: {tag}\n").encode()))
    rows = [_record_line(n, d) for n, d in entries] + [[f"{info}/RECORD", "", ""]]
    rec = io.StringIO()
    csv.writer(rec, lineterminator="\n").writerows(rows)
    entries.append((f"{info}/RECORD", rec.getvalue().encode()))
    path = pathlib.Path(wheel_directory) / whl
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in entries:
            zi = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16 if not n.endswith(".so") else 0o755 << 16
            z.writestr(zi, d, zipfile.ZIP_DEFLATED)
    os.replace(tmp, path)  # no half-written wheel
    return whl


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    with tempfile.TemporaryDirectory() as d:
        lib = _go_library(pathlib.Path(d))
        extra = [(f"nfabric/_lib/{LIB}", lib.read_bytes())] if lib is not None else []
        return _write_wheel(wheel_directory, extra, binary=lib is not None)


def build_editable(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    """``pip install -e ./python``: a .pth to this directory, with the Go
    library built into nfabric/_lib/ here (ignored by git)."""
    libdir = HERE / "nfabric" / "_lib"
    libdir.mkdir(exist_ok=True)
    lib = _go_library(libdir)
    return _write_wheel(wheel_directory, [], editable_root=HERE, binary=lib is not None)


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    p = _project()
    base = f"{p['name']}-{p['version']}"
    path = pathlib.Path(sdist_directory) / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/nfabric_build.py"]:
            t.add(HERE / rel, f"{base}/{rel}")
        for rel, f in _files():
            t.add(f, f"{base}/{rel}")
        pkg = io.BytesIO(("Metadata-Version: 2.4\n" + _metadata(p).split("\n", 1)[1]).encode())
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg.getvalue())
        t.addfile(ti, pkg)
    return path.name


def get_requires_for_build_wheel(config_settings: Any = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Any = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> List[str]:
    return []
