# SPDX-License-Identifier: BSD-3-Clause
"""spx from Python: auto-tuned sparse matrix-vector products, Krylov solvers, Matrix Market I/O and
the 3-D stencil of the spx C library, on NumPy arrays (host, or copied to the GPU) and on CuPy or any
``__cuda_array_interface__`` arrays (used in place on the GPU).

    import numpy as np, scipy.sparse as sp, spx
    A = sp.random(1000, 1000, density=0.01, format="csr") + sp.identity(1000)
    with spx.Plan(A, strategy="auto", expected_calls=500) as plan:
        y = plan @ np.ones(1000)                 # y = A x
        print(plan.format, plan.reason)          # what the tuner chose, and why
    x, report = spx.solve(A.T @ A, np.ones(1000), method="cg", rtol=1e-10)

Every failed spx call raises ``spx.Error`` (``.status``, ``.status_name``, ``.message``: the
library's sentence); bad Python arguments raise TypeError or ValueError before anything is called.
"""
import ctypes
import os

import numpy as np

from . import _lib
from ._lib import BreakdownError, Error, NotConvergedError

__all__ = [
    "Plan", "solve", "read_mm", "write_mm", "stencil", "stencil_grid", "Error", "NotConvergedError",
    "BreakdownError", "SolveReport", "StencilReport", "strategies", "methods", "backend",
    "device_count", "__version__",
]

__version__ = _lib.lib.spx_py_version().decode()

_BACKENDS = {"auto": 0, "host": 1, "cuda": 2}
_BACKEND_NAMES = {v: k for k, v in _BACKENDS.items()}
_DTYPES = {np.dtype(np.float64): 0, np.dtype(np.float32): 1}   # SPX_DOUBLE, SPX_FLOAT
_NP_DTYPE = {0: np.dtype(np.float64), 1: np.dtype(np.float32)}
_METHODS = {"cg": 0, "pcg_jacobi": 1, "pcg": 1, "bicgstab": 2}
_INDEX_MAX = 2**31 - 1   # spx's column indices are int32


def strategies():
    """The plan strategies by name ("auto" first): what ``Plan(strategy=...)`` accepts."""
    out, i = [], 0
    while True:
        name = _lib.text(_lib.lib.spx_plan_strategy_name(i))
        if name == "unknown":
            return out
        out.append(name)
        i += 1


def methods():
    """The solver methods ``solve(method=...)`` accepts ("pcg" is pcg_jacobi)."""
    return ["cg", "pcg_jacobi", "bicgstab"]


def backend():
    """"cuda" when an automatic context would use the GPU now, else "host"."""
    return _lib.text(_lib.lib.spx_backend_name(None))


def device_count():
    """CUDA devices spx sees (0 without a driver or a GPU)."""
    return int(_lib.lib.spx_device_count())


# ---- contexts --------------------------------------------------------------------------------
class _Context:
    """An spx_context, destroyed when the last Python object using it goes."""

    def __init__(self, backend="auto", device=0):
        if backend not in _BACKENDS:
            raise ValueError("backend must be one of %s, not %r" % (", ".join(_BACKENDS), backend))
        if int(device) < 0:
            raise ValueError("device must be >= 0, not %r" % (device,))
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.spx_py_context_create(_BACKENDS[backend], int(device), ctypes.byref(h)))
        self.handle = h.value
        self.device = int(device)
        self._lib = _lib.lib

    @property
    def backend(self):
        return _BACKEND_NAMES[self._lib.spx_context_backend(self.handle)]

    def close(self):
        h, self.handle = self.handle, None
        if h:
            self._lib.spx_context_destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to report to
            pass


_shared_contexts = {}


def _shared_context(backend, device):
    """One context per (backend, device) for the calls that need one but no plan (stencil)."""
    key = (backend, int(device))
    ctx = _shared_contexts.get(key)
    if ctx is None:
        ctx = _shared_contexts[key] = _Context(backend, device)
    return ctx


# ---- arrays ----------------------------------------------------------------------------------
class _Dev:
    """A 1-D device array read through __cuda_array_interface__ (v2/v3): used in place."""

    __slots__ = ("obj", "ptr", "n", "dtype", "readonly", "stream")

    def __init__(self, obj, iface, name):
        self.obj = obj
        shape = tuple(iface.get("shape", ()))
        self.dtype = np.dtype(iface["typestr"])
        if len(shape) != 1:
            raise ValueError("%s must be 1-D, got a device array of shape %s" % (name, shape))
        self.n = int(shape[0])
        strides = iface.get("strides")
        if strides is not None and self.n > 1 and tuple(strides) != (self.dtype.itemsize,):
            raise ValueError("%s is not contiguous (strides %s): pass a contiguous copy" % (name, tuple(strides)))
        if iface.get("mask") is not None:
            raise ValueError("%s is a masked device array: spx takes plain ones" % name)
        self.ptr, self.readonly = int(iface["data"][0] or 0), bool(iface["data"][1])
        self.stream = iface.get("stream")  # None: the producer needs no synchronization
        if self.stream == 0:
            raise ValueError("%s: __cuda_array_interface__ stream 0 is not allowed (v3: 1 is the "
                             "legacy default stream, 2 the per-thread one)" % name)


def _device_iface(obj):
    try:
        return getattr(obj, "__cuda_array_interface__", None)
    except Exception:
        return None


def _as_dev(obj, name):
    iface = _device_iface(obj)
    return None if iface is None else _Dev(obj, iface, name)


def _check_host(a, name, dtype, n, writable=False):
    """a as a C-contiguous 1-D NumPy array of exactly dtype and length n (no silent copy)."""
    if not isinstance(a, np.ndarray):
        raise TypeError("%s must be a NumPy array (or a device array), not %s" % (name, type(a).__name__))
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError("%s has shape %s; it must be (%d,)" % (name, a.shape, n))
    if a.dtype != dtype:
        raise TypeError("%s has dtype %s, the plan's is %s: pass %s.astype(np.%s), or make the plan "
                        "with dtype=%s" % (name, a.dtype, dtype, name, dtype.name, a.dtype.name))
    if not a.flags.c_contiguous or not a.flags.aligned:
        raise ValueError("%s is not a contiguous aligned array: pass np.ascontiguousarray(%s)" % (name, name))
    if writable and not a.flags.writeable:
        raise ValueError("%s is read-only" % name)
    return a


def _host_input(a, name, dtype, n):
    """An input vector: NumPy arrays are checked as they are; lists and scalars sequences are
    converted to dtype (they have no dtype of their own to be wrong)."""
    if not isinstance(a, np.ndarray):
        if hasattr(a, "__array__") or hasattr(a, "__array_interface__"):
            a = np.asarray(a)
        else:
            a = np.asarray(a, dtype=dtype)
    return _check_host(a, name, dtype, n)


def _overlap(a, b):
    if isinstance(a, _Dev):
        sa, sb = a.n * a.dtype.itemsize, b.n * b.dtype.itemsize
        return a.n and b.n and a.ptr < b.ptr + sb and b.ptr < a.ptr + sa
    return np.shares_memory(a, b)


def _cupy_of(obj):
    """The cupy module when obj is a CuPy array, else None."""
    mod = type(obj).__module__ or ""
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return None


# ---- matrices --------------------------------------------------------------------------------
def _value_dtype(dt, what):
    dt = np.dtype(dt)
    if dt in _DTYPES:
        return dt
    if dt.kind in "biu":
        return np.dtype(np.float64)
    raise TypeError("%s has dtype %s: spx computes in float64 or float32" % (what, dt))


def _csr_arrays(A):
    """(nrows, ncols, nnz, indptr int64, indices int32, data float32/64, keep) for a scipy.sparse
    matrix or array of any format, a cupyx.scipy.sparse matrix (copied to the host: a plan analyses
    the matrix there), or any object with shape, indptr, indices and data. Canonical CSR (sorted
    unique columns) is made on a copy when needed; the caller's matrix is never changed."""
    if isinstance(A, Plan):
        raise TypeError("A is already a Plan; pass it to solve(), or a matrix to Plan()")
    if (type(A).__module__ or "").startswith("cupyx"):
        A = A.get()  # cupyx.scipy.sparse -> scipy.sparse on the host
    if isinstance(A, np.ndarray) or _device_iface(A) is not None:
        raise TypeError("A must be a sparse matrix (scipy.sparse, cupyx.scipy.sparse), not a dense "
                        "array: use scipy.sparse.csr_matrix(A)")
    if hasattr(A, "tocsr") and getattr(A, "format", "csr") != "csr":
        A = A.tocsr()
    for attr in ("shape", "indptr", "indices", "data"):
        if not hasattr(A, attr):
            raise TypeError("A must be a CSR matrix (scipy.sparse.csr_matrix or csr_array, or an object "
                            "with shape, indptr, indices and data); %s has no %s" % (type(A).__name__, attr))
    if getattr(A, "has_canonical_format", True) is False:
        A = A.copy()
        A.sum_duplicates()  # sorts the columns too
    shape = tuple(int(s) for s in A.shape)
    if len(shape) != 2:
        raise ValueError("A must be 2-D, got shape %s" % (shape,))
    nrows, ncols = shape
    if ncols > _INDEX_MAX:
        raise ValueError("A has %d columns; spx's column indices are int32 (at most %d)" % (ncols, _INDEX_MAX))
    indptr = np.ascontiguousarray(A.indptr, dtype=np.int64)
    if indptr.ndim != 1 or indptr.shape[0] != nrows + 1:
        raise ValueError("A.indptr has %d entries for %d rows; it must have nrows + 1" % (indptr.size, nrows))
    nnz = int(indptr[-1])
    indices, data = np.asarray(A.indices), np.asarray(A.data)
    if indices.ndim != 1 or data.ndim != 1 or indices.shape[0] < nnz or data.shape[0] < nnz or nnz < 0:
        raise ValueError("A.indices (%d) and A.data (%d) must hold indptr[-1] = %d entries"
                         % (indices.size, data.size, nnz))
    indices, data = indices[:nnz], data[:nnz]
    if indices.dtype != np.int32:
        if indices.dtype.kind not in "iu":
            raise TypeError("A.indices has dtype %s; it must be integers" % indices.dtype)
        if nnz and (int(indices.max()) > _INDEX_MAX or int(indices.min()) < 0):
            raise ValueError("A.indices has entries outside 0..%d" % (ncols - 1))
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    data = np.ascontiguousarray(data, dtype=_value_dtype(data.dtype, "A"))
    return nrows, ncols, nnz, indptr, indices, data


def _ptr(a):
    # NumPy gives empty arrays a valid address too: spx sees a non-NULL pointer it never reads
    return a.ctypes.data


# ---- plans -----------------------------------------------------------------------------------
class Plan:
    """An auto-tuned SpMV plan for one matrix (spx_plan): a format, its parameters and an engine
    (spx's kernel or cuSPARSE), chosen for this matrix on this device.

    Plan(A, strategy="auto", expected_calls=1000, dtype=None, backend="auto", device=0,
         eager=False, force=None, memory_limit=0, defer=False, no_diagonal=False, trial_reps=0)

    A: scipy.sparse (any format; CSR is read in place), cupyx.scipy.sparse (copied to the host:
    the plan analyses the matrix there), or any object with shape, indptr, indices and data.
    strategy: one of spx.strategies() ("auto", "kubota", "mps", "trial", "model"). dtype: None (the
    matrix's: float32 stays float32, integers become float64), np.float32 or np.float64.
    backend: "auto" (the GPU when there is one), "host" or "cuda". force: a candidate by name
    ("ell", "sell", "csr", "cusparse", ...) instead of the strategy's choice.

    plan @ x and plan.spmv(x, y, alpha, beta): NumPy arrays on either backend (copied to and from
    the GPU on cuda), device arrays (CuPy, anything with __cuda_array_interface__) on cuda, in
    place and queued on the array's stream. A plan is not thread-safe: one thread at a time.
    """

    def __init__(self, A, strategy="auto", expected_calls=1000, dtype=None, backend="auto", device=0,
                 eager=False, force=None, memory_limit=0, defer=False, no_diagonal=False,
                 trial_reps=0, no_calibrate=False):
        self._handle = None
        self._ctx = None
        self._keep = None
        if not isinstance(strategy, str):
            raise TypeError("strategy must be a name (one of %s)" % ", ".join(strategies()))
        if int(expected_calls) < 1:
            raise ValueError("expected_calls must be at least 1, not %r" % (expected_calls,))
        if force is not None and not isinstance(force, str):
            raise TypeError("force must be a candidate's name (\"ell\", \"sell\", \"csr\", \"cusparse\", ...)")
        nrows, ncols, nnz, indptr, indices, data = _csr_arrays(A)
        plan_dtype = -1 if dtype is None else _DTYPES.get(np.dtype(dtype))
        if plan_dtype is None:
            raise TypeError("dtype must be None, np.float32 or np.float64, not %r" % (dtype,))
        self._ctx = _Context(backend, device)
        args = _lib.PlanArgs(strategy.encode(), int(expected_calls), plan_dtype, int(bool(eager)),
                             int(bool(defer)), int(bool(no_diagonal)), int(bool(no_calibrate)),
                             int(trial_reps), int(memory_limit), force.encode() if force else None)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.spx_py_plan_create(
            self._ctx.handle, nrows, ncols, nnz, _DTYPES[data.dtype], _ptr(indptr), _ptr(indices),
            _ptr(data), ctypes.byref(args), ctypes.byref(h)))
        self._handle = h.value
        self._lib = _lib.lib
        if defer:  # a deferred plan reads the matrix again at its upgrade
            self._keep = (indptr, indices, data)
        self.shape = (nrows, ncols)
        self.nnz = nnz
        self.dtype = _NP_DTYPE[self._lib.spx_plan_dtype(self._handle)]
        self.device = int(device)

    # lifetime
    def close(self):
        """Frees the plan (and its context) now; the plan cannot be used afterwards."""
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            self._lib.spx_plan_destroy(h)
        ctx, self._ctx = getattr(self, "_ctx", None), None
        if ctx is not None:
            ctx.close()
        self._keep = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _h(self):
        if not self._handle:
            raise ValueError("the plan was closed")
        return self._handle

    # what was chosen
    @property
    def reason(self):
        """Why the strategy chose this format, in a sentence."""
        return _lib.text(self._lib.spx_plan_reason(self._h()))

    @property
    def format(self):
        return _lib.text(self._lib.spx_format_name(self._lib.spx_plan_format(self._h())))

    @property
    def engine(self):
        return "cusparse" if self._lib.spx_plan_engine_of(self._h()) == 1 else "spx"

    @property
    def strategy(self):
        return _lib.text(self._lib.spx_plan_strategy_name(self._lib.spx_plan_strategy_of(self._h())))

    @property
    def backend(self):
        return _BACKEND_NAMES[self._lib.spx_plan_backend(self._h())]

    @property
    def predicted_us(self):
        return float(self._lib.spx_plan_predicted_us(self._h()))

    @property
    def convert_ms(self):
        return float(self._lib.spx_plan_convert_ms(self._h()))

    @property
    def select_ms(self):
        return float(self._lib.spx_plan_select_ms(self._h()))

    @property
    def build_ms(self):
        return float(self._lib.spx_plan_build_ms(self._h()))

    @property
    def bytes(self):
        return int(self._lib.spx_plan_bytes(self._h()))

    def describe(self, json=False):
        """The plan and every candidate (spx_plan_print): text, or a dict with json=True."""
        out = ctypes.c_void_p()
        _lib.check(self._lib.spx_py_plan_print(self._h(), int(bool(json)), ctypes.byref(out)))
        try:
            s = ctypes.string_at(out.value).decode(errors="replace") if out.value else ""
        finally:
            self._lib.spx_py_free(out)
        if json:
            import json as _json
            return _json.loads(s)
        return s

    def diagonal(self):
        """a_ii as float64 (0 where a row has none), as kept at creation."""
        d = np.empty(min(self.shape), dtype=np.float64)
        _lib.check(self._lib.spx_plan_diagonal(self._h(), _ptr(d)))
        return d

    def build(self):
        """Converts, uploads and compiles now (else the first SpMV does)."""
        _lib.check(self._lib.spx_plan_build(self._h()))
        return self

    def time(self, reps=20):
        """Median microseconds per SpMV over reps runs (device events on cuda)."""
        us = ctypes.c_double()
        _lib.check(self._lib.spx_plan_time(self._h(), int(reps), ctypes.byref(us)))
        return us.value

    def __repr__(self):
        if not self._handle:
            return "<spx.Plan (closed)>"
        return "<spx.Plan %dx%d nnz=%d %s %s: %s/%s (strategy %s)>" % (
            self.shape[0], self.shape[1], self.nnz, self.dtype.name, self.backend, self.format,
            self.engine, self.strategy)

    # products
    def __matmul__(self, x):
        return self.spmv(x)

    def matvec(self, x):
        return self.spmv(x)

    def aslinearoperator(self):
        """A scipy.sparse.linalg.LinearOperator applying this plan (NumPy vectors)."""
        from scipy.sparse.linalg import LinearOperator
        return LinearOperator(self.shape, matvec=self.spmv, dtype=self.dtype)

    def spmv(self, x, y=None, alpha=1.0, beta=0.0):
        """y = alpha * A @ x + beta * y; returns y (a new array when y is None, then beta must be 0).

        x and y are NumPy arrays of the plan's dtype (any backend), or device arrays (cuda
        backend: CuPy or __cuda_array_interface__, used in place; queued on their stream)."""
        h = self._h()
        nrows, ncols = self.shape
        alpha, beta = float(alpha), float(beta)
        dx, dy = _as_dev(x, "x"), (None if y is None else _as_dev(y, "y"))
        if dx is not None or dy is not None:
            return self._spmv_device(x, y, dx, dy, alpha, beta)
        x = _host_input(x, "x", self.dtype, ncols)
        if y is None:
            if beta != 0.0:
                raise ValueError("beta = %g needs a y to scale: pass y" % beta)
            y = np.empty(nrows, dtype=self.dtype)
        else:
            _check_host(y, "y", self.dtype, nrows, writable=True)
        if nrows and ncols and _overlap(x, y):
            raise ValueError("x and y overlap in memory: y must be a separate array")
        if self.backend == "host":
            _lib.check(self._lib.spx_plan_spmv(h, alpha, _ptr(x), beta, _ptr(y)))
            return y
        # cuda plan, host vectors: through device buffers of the plan's context (spx keeps freed
        # blocks for reuse, so repeated calls do not reach cuMemAlloc)
        ctx = self._ctx.handle
        isz = self.dtype.itemsize
        bx, by = ctypes.c_uint64(0), ctypes.c_uint64(0)
        try:
            _lib.check(self._lib.spx_device_alloc(ctx, max(ncols, 1) * isz, ctypes.byref(bx)))
            _lib.check(self._lib.spx_device_alloc(ctx, max(nrows, 1) * isz, ctypes.byref(by)))
            if ncols:
                _lib.check(self._lib.spx_device_upload(ctx, bx.value, _ptr(x), ncols * isz))
            if beta != 0.0 and nrows:
                _lib.check(self._lib.spx_device_upload(ctx, by.value, _ptr(y), nrows * isz))
            _lib.check(self._lib.spx_plan_spmv(h, alpha, bx.value, beta, by.value))
            if nrows:
                _lib.check(self._lib.spx_device_download(ctx, _ptr(y), by.value, nrows * isz))
        finally:
            self._lib.spx_device_free(ctx, bx.value)
            self._lib.spx_device_free(ctx, by.value)
        return y

    def _require_cuda(self, what):
        if self.backend != "cuda":
            raise TypeError("%s is a device array but the plan runs on the host backend: make the plan "
                            "with backend=\"cuda\" (or pass NumPy arrays)" % what)

    def _check_dev(self, d, name, n, writable=False):
        if not isinstance(d, _Dev):
            raise TypeError("%s is a host array and the other vector a device array: pass both on the "
                            "device (or both as NumPy arrays)" % name)
        if d.n != n:
            raise ValueError("%s has %d entries; it must have %d" % (name, d.n, n))
        if d.dtype != self.dtype:
            raise TypeError("%s has dtype %s, the plan's is %s: pass %s.astype(%s)"
                            % (name, d.dtype, self.dtype, name, self.dtype.name))
        if writable and d.readonly:
            raise ValueError("%s is a read-only device array" % name)
        cp = _cupy_of(d.obj)
        if cp is not None and int(d.obj.device.id) != self.device:
            raise ValueError("%s is on GPU %d, the plan on GPU %d (Plan(device=...))"
                             % (name, int(d.obj.device.id), self.device))

    def _run_on_streams(self, devs, fn):
        """Runs fn with the plan's context on the operands' stream (CUDA array interface v3): the
        work is ordered after what the producer queued there, and what the caller queues there
        next sees the result. Operands on different streams: the others are waited for first."""
        ctx = self._ctx.handle
        streams = []
        for d in devs:
            if d.stream is not None and d.stream not in streams:
                streams.append(d.stream)
        old = self._lib.spx_context_stream(ctx)
        try:
            for s in streams[:-1]:
                _lib.check(self._lib.spx_context_set_stream(ctx, _stream_handle(s)))
                _lib.check(self._lib.spx_context_synchronize(ctx))
            if streams:
                _lib.check(self._lib.spx_context_set_stream(ctx, _stream_handle(streams[-1])))
            return fn()
        finally:
            self._lib.spx_context_set_stream(ctx, old)

    def _spmv_device(self, x, y, dx, dy, alpha, beta):
        self._require_cuda("x" if dx is not None else "y")
        nrows, ncols = self.shape
        self._check_dev(dx, "x", ncols)
        if y is None:
            if beta != 0.0:
                raise ValueError("beta = %g needs a y to scale: pass y" % beta)
            cp = _cupy_of(x)
            if cp is None:
                raise TypeError("x is a device array that is not CuPy's: pass y (spx cannot allocate "
                                "an array of x's kind)")
            with cp.cuda.Device(self.device):
                y = cp.empty(nrows, dtype=self.dtype)
            dy = _as_dev(y, "y")
        self._check_dev(dy, "y", nrows, writable=True)
        if _overlap(dx, dy):
            raise ValueError("x and y overlap in memory: y must be a separate array")
        # y's stream last: that is where the result is queued
        self._run_on_streams([dx, dy], lambda: _lib.check(
            self._lib.spx_plan_spmv(self._h(), alpha, dx.ptr, beta, dy.ptr)))
        return y


def _stream_handle(s):
    """A CUDA array interface stream as the driver's CUstream: 1 (legacy default) is NULL, 2 is
    CU_STREAM_PER_THREAD (the same value), anything else a stream handle."""
    s = int(s)
    return None if s == 1 else s


# ---- solvers ---------------------------------------------------------------------------------
class SolveReport:
    """What a solve did (spx_solve_report): status, status_name, method, n, iterations, spmvs,
    restarts, bnorm, tol, resid, rel_resid, true_resid, true_rel_resid, the times in ms
    (analysis_ms, build_ms, setup_ms, jit_ms, solve_ms, check_ms), per_iter_us, upgraded_at,
    message, history (the residual norms when asked for, else None), converged."""

    def __init__(self, r, history=None):
        for name, _ in _lib.SolveReport._fields_:
            v = getattr(r, name)
            setattr(self, name, _lib.text(v) if isinstance(v, bytes) else v)
        self.status_name = _lib.status_name(self.status)
        self.converged = self.status == 0
        self.history = history

    def __repr__(self):
        return "<spx.SolveReport %s %s: %d iterations, true relative residual %.3g>" % (
            self.method, self.status_name, self.iterations, self.true_rel_resid)


def solve(A, b, method="cg", x0=None, rtol=1e-8, atol=0.0, maxit=1000, history=False, check=True,
          **plan_options):
    """Solves A x = b with spx's Krylov solvers; returns (x, SolveReport).

    A: a Plan, or a matrix as Plan() takes (a plan is made with expected_calls = the SpMVs maxit
    iterations need, plus plan_options: strategy, dtype, backend, device, force, ...).
    method: "cg" (A symmetric positive definite), "pcg_jacobi" ("pcg": CG with the diagonal as
    preconditioner) or "bicgstab" (any nonsingular A). Stops when ||b - A x|| <= max(rtol ||b||,
    atol), checked on the true residual at the end. b (and x0, the initial guess, default 0; it
    is not changed) are NumPy arrays of the plan's dtype, or device arrays (cuda; x is then a new
    CuPy array). history=True: report.history holds ||r_k|| per iteration.
    check=True raises NotConvergedError / BreakdownError (with .x and .report) when the solve did
    not converge; check=False returns (x, report) with report.status saying so.
    """
    if method not in _METHODS:
        raise ValueError("method must be one of %s, not %r" % (", ".join(methods()), method))
    if int(maxit) < 1:
        raise ValueError("maxit must be at least 1, not %r" % (maxit,))
    rtol, atol = float(rtol), float(atol)
    if rtol < 0 or atol < 0 or not (rtol > 0 or atol > 0):
        raise ValueError("rtol and atol must be >= 0 and one of them > 0 (got %g, %g)" % (rtol, atol))
    own = not isinstance(A, Plan)
    db = _as_dev(b, "b")
    if own:
        if plan_options.get("backend") is None:
            plan_options["backend"] = "cuda" if db is not None else "auto"
        shape = getattr(A, "shape", None)
        if shape is not None and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError("solve needs a square matrix; A is %s" % ("x".join(map(str, shape)),))
        plan_options.setdefault("expected_calls", int(maxit) * (2 if method == "bicgstab" else 1) + 2)
        plan = Plan(A, **plan_options)
    else:
        if plan_options:
            raise TypeError("plan options (%s) apply when A is a matrix; A is a Plan already"
                            % ", ".join(sorted(plan_options)))
        plan = A
    try:
        return _solve(plan, b, db, method, x0, rtol, atol, int(maxit), history, check)
    finally:
        if own:
            plan.close()


def _solve(plan, b, db, method, x0, rtol, atol, maxit, history, check):
    h = plan._h()
    n, ncols = plan.shape
    if n != ncols:
        raise ValueError("solve needs a square matrix; the plan's is %dx%d" % (n, ncols))
    hist = np.zeros(maxit + 1, dtype=np.float64) if history else None
    rep = _lib.SolveReport()
    code = _METHODS[method]
    if db is not None:
        plan._require_cuda("b")
        plan._check_dev(db, "b", n)
        cp = _cupy_of(b)
        if cp is None:
            raise TypeError("b is a device array that is not CuPy's: spx cannot allocate x of its kind "
                            "(use CuPy, or NumPy arrays)")
        with cp.cuda.Device(plan.device):
            if x0 is None:
                x = cp.zeros(n, dtype=plan.dtype)
            else:
                plan._check_dev(_as_dev(x0, "x0"), "x0", n)
                x = x0.copy()
        dx = _as_dev(x, "x")
        status = plan._run_on_streams([db, dx], lambda: plan._lib.spx_py_solve(
            h, code, db.ptr, dx.ptr, rtol, atol, maxit, 0, _ptr(hist) if hist is not None else None,
            maxit + 1, ctypes.byref(rep)))
    else:
        b = _host_input(b, "b", plan.dtype, n)
        if x0 is None:
            x = np.zeros(n, dtype=plan.dtype)
        else:
            x = _host_input(x0, "x0", plan.dtype, n).copy()
        status = plan._lib.spx_py_solve(h, code, _ptr(b), _ptr(x), rtol, atol, maxit,
                                        int(plan.backend == "cuda"),
                                        _ptr(hist) if hist is not None else None, maxit + 1,
                                        ctypes.byref(rep))
    if hist is not None:
        hist = hist[:max(int(rep.history_count), 0)]
    report = SolveReport(rep, hist)
    if status != 0:
        cls = {_lib.NOT_CONVERGED: NotConvergedError, _lib.BREAKDOWN: BreakdownError}.get(status)
        if cls is None:
            raise _lib.error(status)
        if check:
            err = _lib.error(status, cls)
            err.x, err.report = x, report
            raise err
        _lib.lib.spx_clear_error()
    return x, report


# ---- Matrix Market ---------------------------------------------------------------------------
def _path(path):
    if isinstance(path, (bytes, bytearray)):
        p = bytes(path)
    else:
        p = os.fsencode(os.fspath(path))
    if b"\0" in p:
        raise ValueError("the path contains a NUL byte")
    return p


def read_mm(path, dtype=np.float64, info=False):
    """Reads a Matrix Market file (plain or gzip) into a scipy.sparse.csr_matrix of dtype (float64
    or float32) with spx's reader (sorted columns, duplicates summed, symmetric files mirrored).
    info=True returns (A, dict) with what the reader found (format, field, symmetry, entries,
    duplicates, nan_count, ...). A bad file raises spx.Error naming the file and line."""
    import scipy.sparse as sp
    dt = _DTYPES.get(np.dtype(dtype))
    if dt is None:
        raise TypeError("dtype must be np.float64 or np.float32, not %r" % (dtype,))
    mi = _lib.MMInfo()
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.spx_py_mm_read(_path(path), dt, ctypes.byref(h), ctypes.byref(mi)))
    try:
        sizes, adt, arrays = (ctypes.c_int64 * 3)(), ctypes.c_int(), (ctypes.c_void_p * 3)()
        _lib.lib.spx_py_csr_get(h, sizes, ctypes.byref(adt), arrays)
        nrows, ncols, nnz = sizes[0], sizes[1], sizes[2]
        vdt = _NP_DTYPE[adt.value]
        indptr = _copy_out(arrays[0], nrows + 1, np.int64)
        indices = _copy_out(arrays[1], nnz, np.int32)
        data = _copy_out(arrays[2], nnz, vdt)
    finally:
        _lib.lib.spx_csr_destroy(h)
    if nnz <= _INDEX_MAX:
        indptr = indptr.astype(np.int32)  # scipy's usual index type where it fits
    A = sp.csr_matrix((data, indices, indptr), shape=(nrows, ncols))
    A.has_canonical_format = True  # spx's CSR: sorted, duplicates summed
    if not info:
        return A
    d = {}
    for name, _ in _lib.MMInfo._fields_:
        v = getattr(mi, name)
        d[name] = _lib.text(v) if isinstance(v, bytes) else v
    return A, d


def _copy_out(addr, n, dtype):
    out = np.empty(n, dtype=dtype)
    if n:
        ctypes.memmove(out.ctypes.data, addr, out.nbytes)
    return out


_SYMMETRIES = {"general": 0, "symmetric": 1, "skew-symmetric": 2}


def write_mm(path, A, symmetry="general"):
    """Writes A (as Plan() takes it) as a coordinate real Matrix Market file, gzip when the path
    ends in .gz; symmetry "general", "symmetric" (the lower triangle; A must be symmetric) or
    "skew-symmetric". The file is written whole or not at all."""
    if symmetry not in _SYMMETRIES:
        raise ValueError("symmetry must be one of %s, not %r" % (", ".join(_SYMMETRIES), symmetry))
    nrows, ncols, nnz, indptr, indices, data = _csr_arrays(A)
    _lib.check(_lib.lib.spx_py_mm_write(_path(path), nrows, ncols, nnz, _DTYPES[data.dtype],
                                        _ptr(indptr), _ptr(indices), _ptr(data), _SYMMETRIES[symmetry]))


# ---- the stencil -----------------------------------------------------------------------------
class StencilReport:
    """What a stencil run did: method, steps, tts, slab, nslabs, rounds, depth, shared,
    device_bytes, launches, total_ms, kernel_ms, h2d_ms, d2h_ms, jit_ms, gstencils,
    model_gstencils, why (the plan's choice in a sentence)."""

    def __init__(self, r):
        for name, _ in _lib.StencilReport._fields_:
            v = getattr(r, name)
            setattr(self, name, _lib.text(v) if isinstance(v, bytes) else v)

    def __repr__(self):
        return "<spx.StencilReport %s: %d steps, %.3g GStencil/s>" % (self.method, self.steps, self.gstencils)


class _Pinned:
    """A grid from spx_stencil_grid_alloc, owned by the NumPy array made over it."""

    def __init__(self, ctx, ptr, nbytes):
        self.ctx, self.ptr, self.nbytes = ctx, ptr, nbytes

    def __del__(self):
        try:
            if self.ptr:
                _lib.lib.spx_stencil_grid_free(self.ctx.handle, ctypes.c_void_p(self.ptr))
                self.ptr = None
        except Exception:  # interpreter shutdown
            pass


def stencil_grid(shape, dtype=np.float32, backend="auto", device=0):
    """A zeroed grid of shape (nz, ny, nx) for stencil(): pinned host memory on the cuda backend
    (its copies to and from the GPU run at full PCIe speed and stencil() uses it in place), plain
    memory on the host."""
    nz, ny, nx = _grid_shape(shape)
    dt = _DTYPES.get(np.dtype(dtype))
    if dt is None:
        raise TypeError("dtype must be np.float32 or np.float64, not %r" % (dtype,))
    ctx = _shared_context(backend, device)
    p = ctypes.c_void_p()
    _lib.check(_lib.lib.spx_py_stencil_grid_alloc(ctx.handle, nx, ny, nz, dt, ctypes.byref(p)))
    npdt = _NP_DTYPE[dt]
    owner = _Pinned(ctx, p.value, nx * ny * nz * npdt.itemsize)
    buf = (ctypes.c_char * owner.nbytes).from_address(p.value)
    buf._spx_owner = owner  # the ctypes buffer keeps the allocation alive; NumPy keeps the buffer
    a = np.frombuffer(buf, dtype=npdt).reshape(nz, ny, nx)
    a[...] = 0
    return a


def _grid_shape(shape):
    shape = tuple(int(s) for s in shape)
    if len(shape) != 3 or min(shape) < 3:
        raise ValueError("a stencil grid is 3-D, (nz, ny, nx) with each size >= 3; got %s" % (shape,))
    return shape


def _pinned_owner(u):
    base = u
    while base is not None and not isinstance(base, ctypes.Array):
        base = getattr(base, "base", None)
    owner = getattr(base, "_spx_owner", None) if base is not None else None
    return owner if owner is not None and owner.ptr == u.ctypes.data and owner.nbytes == u.nbytes else None


def stencil(u, steps, coefficients=(0.4, 0.1, 0.1, 0.1), method=None, backend="auto", device=0,
            budget=0, depth=0, tts=0, slab=0):
    """Runs `steps` steps of the 3-D 7-point stencil on u in place and returns a StencilReport.

    u: a C-contiguous NumPy array of shape (nz, ny, nx) (x fastest), float32 or float64, each
    size >= 3. coefficients: (c0, cx, cy, cz) for u' = c0 u + cx (u[x-1] + u[x+1]) + cy (...) +
    cz (...), or all seven (centre, x-, x+, y-, y+, z-, z+), summed in that order in u's dtype; the
    first and last cell of every axis never change. method: None (spx's choice, "overlap") or one of
    "overlap", "incore", "normal", "mm", "mmt", "mmtb" (the out-of-core methods; the host backend
    emulates each exactly). budget: device bytes the run may use (0: free memory); depth, tts,
    slab: 0 for the cost model's choice. On cuda a u from stencil_grid() is used in place, any
    other is staged through pinned memory."""
    if not isinstance(u, np.ndarray):
        raise TypeError("u must be a NumPy array, not %s" % type(u).__name__)
    nz, ny, nx = _grid_shape(u.shape)
    dt = _DTYPES.get(u.dtype)
    if dt is None:
        raise TypeError("u has dtype %s; the stencil runs on float32 or float64" % u.dtype)
    if not u.flags.c_contiguous or not u.flags.aligned or not u.flags.writeable:
        raise ValueError("u must be a writable C-contiguous array (x fastest): pass np.ascontiguousarray(u)")
    if int(steps) < 0:
        raise ValueError("steps must be >= 0, not %r" % (steps,))
    c = [float(v) for v in coefficients]
    if len(c) == 4:
        c = [c[0], c[1], c[1], c[2], c[2], c[3], c[3]]
    elif len(c) != 7:
        raise ValueError("coefficients are (c0, cx, cy, cz) or all seven; got %d" % len(c))
    if method is not None and not isinstance(method, str):
        raise TypeError("method must be a name (overlap, incore, normal, mm, mmt, mmtb) or None")
    ctx = _shared_context(backend, device)
    rep = _lib.StencilReport()
    pinned = int(_pinned_owner(u) is not None)
    _lib.check(_lib.lib.spx_py_stencil_run(
        ctx.handle, nx, ny, nz, dt, (ctypes.c_double * 7)(*c), u.ctypes.data, pinned, int(steps),
        method.encode() if method else None, int(budget), int(depth), int(tts), int(slab),
        ctypes.byref(rep)))
    return StencilReport(rep)
