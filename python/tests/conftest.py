"""Shared fixtures: the Go CLI (for golden vectors) and a gloo launcher."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import time

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def nfabric_cli(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The Go nfabric binary, built once per test session from this
    checkout. Skips (with the reason) when Go or the Go sources are absent."""
    if os.environ.get("NFABRIC_CLI"):
        return pathlib.Path(os.environ["NFABRIC_CLI"])
    go = shutil.which("go")
    if go is None:
        pytest.skip("skipped: 'go' is not on PATH, so the Go golden vectors cannot be made; "
                    "install Go 1.26 (https://go.dev/dl) to run the bit-exact checks")
    if not (REPO / "cmd" / "nfabric").is_dir():
        pytest.skip(f"skipped: no Go sources at {REPO}/cmd/nfabric (run the tests from a checkout)")
    out = tmp_path_factory.mktemp("go") / "nfabric"
    r = subprocess.run([go, "build", "-o", str(out), "./cmd/nfabric"], cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"go build ./cmd/nfabric failed:\n{r.stderr}")
    return out


@pytest.fixture(scope="session")
def serve_socket(nfabric_cli: pathlib.Path, tmp_path_factory: pytest.TempPathFactory):
    """A running `nfabric serve` on a Unix socket (this checkout's build);
    skips when the checkout has no serve command or Python lacks the
    generated gRPC modules."""
    try:
        import grpc  # noqa: F401
        from nfabric._proto.nfabric.v1 import control_pb2  # noqa: F401
    except ImportError as e:
        pytest.skip(f"skipped: the nfabric serve client needs python3-grpcio and nfabric._proto ({e})")
    if subprocess.run([str(nfabric_cli), "serve", "--help"], capture_output=True).returncode != 0:
        pytest.skip("skipped: this checkout's nfabric has no 'serve' command (built from a source without it)")
    sock = tmp_path_factory.mktemp("serve") / "nf.sock"
    proc = subprocess.Popen([str(nfabric_cli), "serve", "--socket", str(sock)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    for _ in range(200):
        if sock.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    if not sock.exists():
        proc.kill()
        pytest.fail(f"nfabric serve did not start: {proc.communicate()[0]}")
    yield str(sock)
    proc.terminate()
    proc.wait(10)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Deterministic CPU reductions, and the shared 2-core CI machine.
    torch.set_num_threads(1)


@pytest.fixture(params=["go", "torch"])
def kernel_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once on the Go lowbit library (nfabric._golib) and once
    on the torch-op kernels, for CPU tensors. The Go run skips, saying why,
    where the library cannot be built or loaded."""
    from nfabric import _golib
    if request.param == "torch":
        monkeypatch.setattr(_golib, "usable", lambda *t: False)
    elif _golib.lib() is None:
        need_lib(_golib)
    return request.param


@pytest.fixture
def golib_loaded() -> None:
    """Skips (or fails, under NFABRIC_REQUIRE_LOWBIT_LIB=1, as CI sets) when
    the Go lowbit library is not loaded."""
    from nfabric import _golib
    if _golib.lib() is None:
        need_lib(_golib)


def need_lib(golib) -> None:
    msg = f"the Go lowbit library is not available ({golib.reason()})"
    if os.environ.get("NFABRIC_REQUIRE_LOWBIT_LIB") == "1":
        pytest.fail(msg + " and NFABRIC_REQUIRE_LOWBIT_LIB=1")
    pytest.skip("skipped: " + msg)
