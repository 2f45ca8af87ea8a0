"""Install-time build of the Go lowbit kernels: ``pip install ./python``
runs ``go build -buildmode=c-shared ./lowbit/cabi`` in the Go module this
directory sits in and installs the library as nfabric/_lib/libnfabric_lowbit.so
(nfabric._golib loads it). Without Go, a C compiler or the module (an sdist
built elsewhere), the install goes on without it and nfabric runs its
torch-op kernels, saying so. NFABRIC_LOWBIT=torch skips the build.
Everything else is in pyproject.toml."""

import importlib.util
import os
import pathlib

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = pathlib.Path(__file__).resolve().parent


def _golib():
    spec = importlib.util.spec_from_file_location("_nfabric_golib", HERE / "nfabric" / "_golib.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildPyWithGo(build_py):
    def run(self) -> None:
        super().run()
        if os.environ.get("NFABRIC_LOWBIT", "").lower() == "torch":
            return
        golib = _golib()
        root = HERE.parent
        out = pathlib.Path(self.build_lib) / "nfabric" / "_lib" / golib.LIB_NAME
        if not (root / "go.mod").is_file() or not (root / "lowbit" / "cabi").is_dir():
            print(f"nfabric: no Go module at {root}: installing without the Go lowbit kernels (torch-op kernels on CPU)")
            return
        try:
            golib.build(root, out)
            print(f"nfabric: built the Go lowbit kernels into {out}")
        except (OSError, RuntimeError) as e:
            print(f"nfabric: WARNING: could not build the Go lowbit kernels ({e}); installing without them "
                  "(torch-op kernels on CPU)")


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: tag it for this platform."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildPyWithGo}, distclass=BinaryDistribution)
