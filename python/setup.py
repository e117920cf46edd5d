# SPDX-License-Identifier: BSD-3-Clause
"""Builds the spx Python package: spx/_libspx.c (SPX_IMPLEMENTATION + a few flat entry points) is
compiled into spx/_libspx*.so, which spx/_lib.py loads with ctypes. The shared object is not a
Python extension module (it has no PyInit and does not include Python.h): setuptools' extension
machinery is used only to compile and place it, so the build needs no Python headers.

The spx headers come from $SPX_INCLUDE_DIR, else ../include beside this directory (the spx
repository), so build from the repository: pip install --no-build-isolation --no-index ./python
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def include_dir():
    cands = [os.environ.get("SPX_INCLUDE_DIR"), os.path.join(HERE, "..", "include")]
    for d in cands:
        if d and os.path.isfile(os.path.join(d, "spx", "spx.h")):
            if not os.path.isfile(os.path.join(d, "spx", "internal", "templates_gen.h")):
                sys.exit("spx: %s lacks spx/internal/templates_gen.h (the generated template header)" % d)
            return os.path.abspath(d)
    sys.exit("spx: the spx headers were not found (looked in $SPX_INCLUDE_DIR and %s): build the "
             "package from the spx repository (pip install ./python), or set SPX_INCLUDE_DIR to "
             "spx's include directory" % os.path.abspath(cands[1]))


def version(inc):
    with open(os.path.join(inc, "spx", "version.h")) as f:
        m = re.search(r'#define SPX_VERSION_STRING "([^"]+)"', f.read())
    return m.group(1) if m else "0.0.0"


class BuildLib(build_ext):
    """Adds -fopenmp where the compiler takes it (parallel host kernels; spx runs serially
    without), as the repository's gcc build does."""

    def build_extensions(self):
        if self._openmp():
            for ext in self.extensions:
                ext.extra_compile_args.append("-fopenmp")
                ext.extra_link_args.append("-fopenmp")
        super().build_extensions()

    def _openmp(self):
        if os.environ.get("SPX_NO_OPENMP"):
            return False
        cc = self.compiler.compiler_so[0] if getattr(self.compiler, "compiler_so", None) else "cc"
        d = tempfile.mkdtemp()
        try:
            src = os.path.join(d, "t.c")
            with open(src, "w") as f:
                f.write("#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n")
            r = subprocess.run([cc, "-fopenmp", src, "-o", os.path.join(d, "t")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return r.returncode == 0
        except OSError:
            return False
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def get_export_symbols(self, ext):
        return []  # not a Python module: no PyInit_ to export


def license_args():
    """BSD-3-Clause in the form this setuptools takes: the SPDX expression from 77 on, the License
    field before (Debian 12 ships 66); pyproject.toml lists license as dynamic for this."""
    import setuptools
    try:
        major = int(setuptools.__version__.split(".")[0])
    except ValueError:
        major = 0
    return {"license_expression": "BSD-3-Clause"} if major >= 77 else {"license": "BSD-3-Clause"}


INC = include_dir()
setup(
    **license_args(),
    version=version(INC),
    ext_modules=[Extension(
        "spx._libspx",
        sources=["spx/_libspx.c"],
        include_dirs=[INC],
        libraries=["dl", "z", "pthread", "m"],
        extra_compile_args=["-std=c11", "-O2"],
        extra_link_args=[],
    )],
    cmdclass={"build_ext": BuildLib},
    zip_safe=False,
)
