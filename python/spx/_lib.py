# SPDX-License-Identifier: BSD-3-Clause
"""The shared object (spx's implementation, compiled when the package was built) through ctypes.

Only scalars, pointers and the binding's own structs (spx_py_* in _libspx.c) cross this boundary:
the library's structs are filled on the C side, so their layout is never repeated here.
"""
import ctypes
import glob
import importlib.machinery
import os

# Must equal SPX_PY_ABI in _libspx.c: a shared object from another build of the binding is refused
# rather than called with the wrong signatures.
ABI = 1

c_int, c_int32, c_int64, c_double = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_double
c_void_p, c_char_p, c_size_t, c_uint64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64
P = ctypes.POINTER

STATUS_NAMES = (
    "ok", "invalid-argument", "out-of-memory", "io", "parse", "unsupported", "range",
    "dimension-mismatch", "not-available", "cuda", "nvrtc", "cusparse", "device-out-of-memory",
    "internal", "breakdown", "not-converged",
)
BREAKDOWN = STATUS_NAMES.index("breakdown")
NOT_CONVERGED = STATUS_NAMES.index("not-converged")


class Error(Exception):
    """A failed spx call: ``status`` (the spx_status number), ``status_name`` ("invalid-argument",
    ...) and ``message`` (the library's sentence, spx_last_error)."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = status_name(self.status)
        self.message = message
        super().__init__("%s [spx status: %s]" % (message, self.status_name))


class NotConvergedError(Error):
    """A solve that reached maxit, or whose true residual missed the tolerance; ``x`` holds the
    last iterate and ``report`` what happened."""


class BreakdownError(Error):
    """A solve that broke down (CG on a non-SPD matrix, a BiCGSTAB divisor ~ 0); ``x`` holds the
    last good iterate and ``report`` what happened."""


for _cls in (Error, NotConvergedError, BreakdownError):
    _cls.__module__ = "spx"  # shown as spx.Error in tracebacks


class PlanArgs(ctypes.Structure):
    _fields_ = [
        ("strategy", c_char_p), ("expected_calls", c_int64), ("dtype", c_int), ("eager", c_int),
        ("defer", c_int), ("no_diagonal", c_int), ("no_calibrate", c_int), ("trial_reps", c_int),
        ("memory_limit", c_int64), ("force", c_char_p),
    ]


class SolveReport(ctypes.Structure):
    _fields_ = [
        ("status", c_int32), ("restarts", c_int32),
        ("n", c_int64), ("iterations", c_int64), ("spmvs", c_int64), ("history_count", c_int64),
        ("upgraded_at", c_int64),
        ("bnorm", c_double), ("tol", c_double), ("resid", c_double), ("rel_resid", c_double),
        ("true_resid", c_double), ("true_rel_resid", c_double),
        ("analysis_ms", c_double), ("build_ms", c_double), ("setup_ms", c_double),
        ("jit_ms", c_double), ("solve_ms", c_double), ("per_iter_us", c_double),
        ("check_ms", c_double),
        ("method", ctypes.c_char * 32), ("message", ctypes.c_char * 256),
    ]


class MMInfo(ctypes.Structure):
    _fields_ = [
        ("nrows", c_int64), ("ncols", c_int64), ("entries", c_int64), ("duplicates", c_int64),
        ("nan_count", c_int64), ("inf_count", c_int64), ("explicit_zeros", c_int64),
        ("lines", c_int64), ("seconds", c_double),
        ("format", ctypes.c_char * 16), ("field", ctypes.c_char * 16), ("symmetry", ctypes.c_char * 16),
    ]


class StencilReport(ctypes.Structure):
    _fields_ = [
        ("steps", c_int64), ("tts", c_int64), ("slab", c_int64), ("nslabs", c_int64),
        ("rounds", c_int64), ("device_bytes", c_int64), ("launches", c_int64),
        ("depth", c_int32), ("shared", c_int32),
        ("total_ms", c_double), ("kernel_ms", c_double), ("h2d_ms", c_double), ("d2h_ms", c_double),
        ("gstencils", c_double), ("jit_ms", c_double), ("model_gstencils", c_double),
        ("method", ctypes.c_char * 16), ("why", ctypes.c_char * 240),
    ]


# name: (restype, argtypes). restype c_int is an spx_status.
_PROTOTYPES = {
    "spx_py_abi": (c_int, []),
    "spx_py_version": (c_char_p, []),
    "spx_py_free": (None, [c_void_p]),
    "spx_last_error": (c_char_p, []),
    "spx_status_string": (c_char_p, [c_int]),
    "spx_clear_error": (None, []),
    "spx_py_context_create": (c_int, [c_int, c_int, P(c_void_p)]),
    "spx_context_destroy": (None, [c_void_p]),
    "spx_context_backend": (c_int, [c_void_p]),
    "spx_backend_name": (c_char_p, [c_void_p]),
    "spx_context_set_stream": (c_int, [c_void_p, c_void_p]),
    "spx_context_stream": (c_void_p, [c_void_p]),
    "spx_context_synchronize": (c_int, [c_void_p]),
    "spx_device_count": (c_int, []),
    "spx_device_alloc": (c_int, [c_void_p, c_size_t, P(c_uint64)]),
    "spx_device_free": (None, [c_void_p, c_uint64]),
    "spx_device_upload": (c_int, [c_void_p, c_uint64, c_void_p, c_size_t]),
    "spx_device_download": (c_int, [c_void_p, c_void_p, c_uint64, c_size_t]),
    "spx_py_plan_create": (c_int, [c_void_p, c_int64, c_int64, c_int64, c_int, c_void_p, c_void_p,
                                   c_void_p, P(PlanArgs), P(c_void_p)]),
    "spx_plan_spmv": (c_int, [c_void_p, c_double, c_void_p, c_double, c_void_p]),
    "spx_plan_build": (c_int, [c_void_p]),
    "spx_plan_wait": (c_int, [c_void_p]),
    "spx_plan_upgrade": (c_int, [c_void_p]),
    "spx_plan_destroy": (None, [c_void_p]),
    "spx_plan_format": (c_int, [c_void_p]),
    "spx_format_name": (c_char_p, [c_int]),
    "spx_plan_engine_of": (c_int, [c_void_p]),
    "spx_plan_strategy_of": (c_int, [c_void_p]),
    "spx_plan_strategy_name": (c_char_p, [c_int]),
    "spx_plan_strategy_description": (c_char_p, [c_int]),
    "spx_plan_backend": (c_int, [c_void_p]),
    "spx_plan_dtype": (c_int, [c_void_p]),
    "spx_plan_predicted_us": (c_double, [c_void_p]),
    "spx_plan_convert_ms": (c_double, [c_void_p]),
    "spx_plan_select_ms": (c_double, [c_void_p]),
    "spx_plan_build_ms": (c_double, [c_void_p]),
    "spx_plan_reason": (c_char_p, [c_void_p]),
    "spx_plan_nrows": (c_int64, [c_void_p]),
    "spx_plan_ncols": (c_int64, [c_void_p]),
    "spx_plan_bytes": (c_int64, [c_void_p]),
    "spx_plan_diagonal": (c_int, [c_void_p, c_void_p]),
    "spx_plan_time": (c_int, [c_void_p, c_int, P(c_double)]),
    "spx_py_plan_print": (c_int, [c_void_p, c_int, P(c_void_p)]),
    "spx_py_solve": (c_int, [c_void_p, c_int, c_void_p, c_void_p, c_double, c_double, c_int64,
                             c_int, c_void_p, c_int64, P(SolveReport)]),
    "spx_py_mm_read": (c_int, [c_char_p, c_int, P(c_void_p), P(MMInfo)]),
    "spx_py_mm_write": (c_int, [c_char_p, c_int64, c_int64, c_int64, c_int, c_void_p, c_void_p,
                                c_void_p, c_int]),
    "spx_py_csr_get": (None, [c_void_p, P(c_int64), P(c_int), P(c_void_p)]),
    "spx_csr_destroy": (None, [c_void_p]),
    "spx_py_stencil_run": (c_int, [c_void_p, c_int64, c_int64, c_int64, c_int, P(c_double), c_void_p,
                                   c_int, c_int64, c_char_p, c_int64, c_int, c_int64, c_int64,
                                   P(StencilReport)]),
    "spx_py_stencil_grid_alloc": (c_int, [c_void_p, c_int64, c_int64, c_int64, c_int, P(c_void_p)]),
    "spx_stencil_grid_free": (None, [c_void_p, c_void_p]),
    "spx_stencil_method_name": (c_char_p, [c_int]),
}


def _find():
    """The shared object: $SPX_PYTHON_LIB when set, else the one built beside this file."""
    path = os.environ.get("SPX_PYTHON_LIB")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        hits = sorted(glob.glob(os.path.join(here, "_libspx*" + suffix)))
        if hits:
            return hits[0]
    raise ImportError(
        "spx: the compiled library (_libspx*.so) is not beside %s: install the package with pip "
        "(pip install --no-build-isolation ./python from the spx repository), which compiles it, "
        "or point SPX_PYTHON_LIB at one" % here)


def _load():
    path = _find()
    lib = ctypes.CDLL(path)  # CDLL releases the GIL during each call
    for name, (res, args) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    abi = lib.spx_py_abi()
    if abi != ABI:
        raise ImportError("spx: %s has binding ABI %d, this package expects %d: rebuild it (pip install "
                          "again)" % (path, abi, ABI))
    return lib, path


lib, path = _load()


def status_name(status):
    return lib.spx_status_string(int(status)).decode()


def error(status, cls=Error):
    msg = lib.spx_last_error().decode(errors="replace") or lib.spx_status_string(status).decode()
    lib.spx_clear_error()
    return cls(status, msg)


def check(status):
    """Raises spx.Error for any status but SPX_OK (0)."""
    if status != 0:
        raise error(status)


def text(b):
    return b.decode(errors="replace") if b is not None else ""
