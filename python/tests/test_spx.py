# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the spx Python package against SciPy and NumPy (host backend), and on the GPU where
there is one (test_gpu_*: NumPy arrays copied through the plan, device arrays through the CUDA
array interface; test_gpu_cupy_*: CuPy, where it is installed).

    python3 python/tests/test_spx.py [-v]          unittest's own output
    python3 python/tests/test_spx.py --cmocka      cmocka-style summary lines (tests/run.sh counts
                                                   them; a skipped test is named for its allow list)
Real matrices come from $SPX_SHARED_MATRICES (default: ../shared/matrices beside the repository); a
test that cannot find them fails, as the C tests do.
"""
import gzip
import inspect
import io
import os
import sys
import tempfile
import unittest
import warnings

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import spx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("SPX_SHARED_MATRICES") or os.path.join(REPO, "..", "shared", "matrices")
HAVE_GPU = spx.device_count() > 0
try:
    import cupy
    import cupyx.scipy.sparse as cusp
    HAVE_CUPY = HAVE_GPU and cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # not installed, or no usable device
    cupy = cusp = None
    HAVE_CUPY = False
need_gpu = unittest.skipUnless(HAVE_GPU, "no CUDA device")
need_cupy = unittest.skipUnless(HAVE_CUPY, "CuPy or a CUDA device missing")


# ---- matrices ----------------------------------------------------------------------------------
def poisson2d(n):
    """The 5-point Laplacian on an n x n grid: SPD."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.identity(n), t) + sp.kron(t, sp.identity(n))).tocsr()


def nonsymmetric(n, seed=1):
    """Random, diagonally dominant and not symmetric: BiCGSTAB converges, CG does not apply."""
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=8.0 / n, random_state=rng, format="csr")
    a = a + sp.diags(np.abs(a).sum(axis=1).A1 + 1.0)
    return a.tocsr()


def power_rows(n, seed=2):
    """A few long rows among short ones, and empty rows: the formats' awkward cases."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for i in range(n):
        k = 0 if i % 17 == 5 else (n // 3 if i % 97 == 0 else 1 + i % 5)
        c = rng.choice(n, size=k, replace=False)
        rows += [i] * k
        cols += list(c)
    vals = rng.standard_normal(len(rows))
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def generated():
    return {
        "poisson2d": poisson2d(24),
        "nonsymmetric": nonsymmetric(700),
        "power_rows": power_rows(900),
        "rectangular": sp.random(300, 500, density=0.02, random_state=3, format="csr"),
        "tall": sp.random(500, 40, density=0.1, random_state=4, format="csr"),
        "banded": sp.diags([np.arange(1, 401.0), np.ones(399), -np.ones(399), np.ones(396)],
                           [0, 1, -1, 4], format="csr"),
    }


def shared(name):
    path = os.path.join(SHARED, name + ".mtx.gz")
    if not os.path.isfile(path):
        raise AssertionError("%s is missing (SPX_SHARED_MATRICES=%s): the shared matrices are needed"
                             % (path, SHARED))
    return path


def mmread(path):
    """scipy.io.mmread as a csr_matrix (newer SciPy warns that its default return type changes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return sp.csr_matrix(scipy.io.mmread(path))


def rel_err(y, ref):
    scale = max(np.abs(ref).max(), 1e-300) if ref.size else 1.0
    return float(np.abs(np.asarray(y, dtype=np.float64) - ref).max() / scale) if ref.size else 0.0


def stencil_ref(u, steps, c):
    """The 7-point stencil in NumPy, in u's dtype, summed in spx's order (centre, x-, x+, y-, y+,
    z-, z+); the outer cells never change."""
    u = u.copy()
    c = [u.dtype.type(v) for v in c]
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1, 1:-1] = (c[0] * u[1:-1, 1:-1, 1:-1] + c[1] * u[1:-1, 1:-1, :-2]
                               + c[2] * u[1:-1, 1:-1, 2:] + c[3] * u[1:-1, :-2, 1:-1]
                               + c[4] * u[1:-1, 2:, 1:-1] + c[5] * u[:-2, 1:-1, 1:-1]
                               + c[6] * u[2:, 1:-1, 1:-1])
        u = v
    return u


class DeviceVector:
    """A device vector without CuPy: memory from spx_device_alloc, shown through
    __cuda_array_interface__ (v3), so the zero-copy path is tested wherever there is a GPU."""

    def __init__(self, host):
        self.ctx = spx._shared_context("cuda", 0)
        self.dtype, self.n = host.dtype, host.shape[0]
        p = spx._lib.c_uint64(0)
        spx._lib.check(spx._lib.lib.spx_device_alloc(self.ctx.handle, max(host.nbytes, 8),
                                                     spx._lib.ctypes.byref(p)))
        self.ptr = p.value
        spx._lib.check(spx._lib.lib.spx_device_upload(self.ctx.handle, self.ptr, host.ctypes.data, host.nbytes))

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": 1}

    def get(self):
        out = np.empty(self.n, dtype=self.dtype)
        spx._lib.check(spx._lib.lib.spx_device_download(self.ctx.handle, out.ctypes.data, self.ptr, out.nbytes))
        return out

    def __del__(self):
        spx._lib.lib.spx_device_free(self.ctx.handle, self.ptr)


# ---- SpMV ---------------------------------------------------------------------------------------
class TestSpmv(unittest.TestCase):
    def test_spmv_float64(self):
        rng = np.random.default_rng(10)
        for name, a in generated().items():
            with self.subTest(matrix=name), spx.Plan(a, backend="host") as p:
                x = rng.standard_normal(a.shape[1])
                self.assertEqual(p.shape, a.shape)
                self.assertEqual(p.nnz, a.nnz)
                self.assertEqual(p.dtype, np.float64)
                self.assertLess(rel_err(p @ x, a @ x), 1e-13, p.describe())
                self.assertLess(rel_err(p.spmv(x), a @ x), 1e-13)
                self.assertTrue(p.reason)

    def test_spmv_float32(self):
        rng = np.random.default_rng(11)
        for name, a in generated().items():
            a32 = a.astype(np.float32)
            with self.subTest(matrix=name), spx.Plan(a32, backend="host") as p:
                self.assertEqual(p.dtype, np.float32)
                x = rng.standard_normal(a.shape[1]).astype(np.float32)
                y = p @ x
                self.assertEqual(y.dtype, np.float32)
                ref = a32.astype(np.float64) @ x.astype(np.float64)
                self.assertLess(rel_err(y, ref), 1e-5)
        # a float64 matrix planned in float32
        a = generated()["poisson2d"]
        with spx.Plan(a, dtype=np.float32, backend="host") as p:
            self.assertEqual(p.dtype, np.float32)
            x = np.ones(a.shape[1], dtype=np.float32)
            self.assertLess(rel_err(p @ x, a @ x.astype(np.float64)), 1e-6)

    def test_spmv_alpha_beta(self):
        rng = np.random.default_rng(12)
        for dt, tol in ((np.float64, 1e-13), (np.float32, 1e-5)):
            a = nonsymmetric(400).astype(dt)
            x = rng.standard_normal(400).astype(dt)
            y0 = rng.standard_normal(400).astype(dt)
            ref = 2.5 * (a.astype(np.float64) @ x.astype(np.float64)) - 0.75 * y0.astype(np.float64)
            with spx.Plan(a, backend="host") as p:
                y = y0.copy()
                out = p.spmv(x, y, alpha=2.5, beta=-0.75)
                self.assertIs(out, y)
                self.assertLess(rel_err(y, ref), tol)
                y = np.full(400, np.nan, dtype=dt)   # beta = 0 does not read y
                p.spmv(x, y, alpha=-1.0, beta=0.0)
                self.assertLess(rel_err(y, -(a.astype(np.float64) @ x.astype(np.float64))), tol)

    def test_every_strategy(self):
        rng = np.random.default_rng(13)
        names = spx.strategies()
        self.assertEqual(names[0], "auto")
        self.assertEqual(set(names), {"auto", "kubota", "mps", "trial", "model"})
        for name, a in generated().items():
            x = rng.standard_normal(a.shape[1])
            for s in names:
                with self.subTest(matrix=name, strategy=s), \
                        spx.Plan(a, strategy=s, expected_calls=50, backend="host", trial_reps=2) as p:
                    self.assertEqual(p.strategy, s)
                    self.assertEqual(p.engine, "spx")
                    self.assertIn(s, p.reason.split(":")[0])
                    self.assertLess(rel_err(p @ x, a @ x), 1e-13, p.reason)
        with spx.Plan(generated()["banded"], strategy="KUBOTA", backend="host") as p:
            self.assertEqual(p.strategy, "kubota")  # names are case-insensitive, as in C

    def test_every_candidate_forced(self):
        """Every format the planner lists, forced, gives SciPy's product."""
        rng = np.random.default_rng(14)
        for name in ("power_rows", "banded", "rectangular"):
            a = generated()[name]
            x = rng.standard_normal(a.shape[1])
            with spx.Plan(a, backend="host") as p:
                info = p.describe(json=True)
            formats = [c["name"] for c in info["candidates"] if c.get("fits", 1)]
            self.assertIn("csr", formats)
            for f in formats:
                with self.subTest(matrix=name, format=f), spx.Plan(a, force=f, backend="host") as p:
                    self.assertEqual(p.format, f)
                    self.assertLess(rel_err(p @ x, a @ x), 1e-13)

    def test_plan_info(self):
        a = poisson2d(20)
        with spx.Plan(a, backend="host", eager=True) as p:
            self.assertEqual(p.backend, "host")
            self.assertGreater(p.bytes, 0)
            self.assertGreaterEqual(p.predicted_us, 0)
            self.assertGreaterEqual(p.select_ms, 0)
            text = p.describe()
            self.assertIn(p.format, text)
            d = p.describe(json=True)
            self.assertEqual(d["format"], p.format)
            np.testing.assert_array_equal(p.diagonal(), a.diagonal())
            self.assertGreater(p.time(reps=3), 0)
            self.assertIn("400x400", repr(p))
            p.build()
        self.assertIn("closed", repr(p))

    def test_input_kinds(self):
        """csr_array, COO/CSC input, unsorted and duplicate entries, lists, integer matrices."""
        a = nonsymmetric(300)
        x = np.linspace(-1, 1, 300)
        for m in (sp.csr_array(a), a.tocoo(), a.tocsc(), sp.coo_matrix(a)):
            with self.subTest(kind=type(m).__name__), spx.Plan(m, backend="host") as p:
                self.assertLess(rel_err(p @ x, a @ x), 1e-13)
        # unsorted columns and duplicates: summed on a copy, the caller's matrix unchanged
        rows, cols, vals = [0, 0, 0, 1, 2, 2], [2, 0, 2, 1, 1, 0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        coo = sp.coo_matrix((vals, (rows, cols)), shape=(3, 3))
        u = sp.csr_matrix((np.array(vals), np.array(cols), np.array([0, 3, 4, 6])), shape=(3, 3))
        before = u.indices.copy()
        with spx.Plan(u, backend="host") as p:
            np.testing.assert_allclose(p @ [1.0, 10.0, 100.0], coo @ np.array([1.0, 10.0, 100.0]))
        np.testing.assert_array_equal(u.indices, before)
        # an integer matrix is planned in float64; a list x is converted
        ai = sp.csr_matrix(np.array([[1, 2], [0, 3]], dtype=np.int64))
        with spx.Plan(ai, backend="host") as p:
            self.assertEqual(p.dtype, np.float64)
            np.testing.assert_array_equal(p @ [1, 1], [3.0, 3.0])
        # empty matrices
        with spx.Plan(sp.csr_matrix((5, 4)), backend="host") as p:
            np.testing.assert_array_equal(p @ np.ones(4), np.zeros(5))

    def test_deferred_plan_keeps_its_matrix(self):
        """A deferred plan reads the matrix again when it upgrades: the binding keeps the arrays
        alive although the caller's matrix is gone."""
        import gc
        a = power_rows(900)
        x = np.random.default_rng(15).standard_normal(900)
        ref = a @ x
        with spx.Plan(power_rows(900), defer=True, backend="host", expected_calls=100000) as p:
            gc.collect()
            np.testing.assert_allclose(p @ x, ref, rtol=1e-13, atol=1e-13)
            spx._lib.check(spx._lib.lib.spx_plan_upgrade(p._handle))
            self.assertLess(rel_err(p @ x, ref), 1e-13)

    def test_linear_operator(self):
        a = poisson2d(16)
        b = np.ones(a.shape[0])
        with spx.Plan(a, backend="host") as p:
            kw = {"rtol": 1e-10} if "rtol" in inspect.signature(spla.cg).parameters else {"tol": 1e-10}
            x, info = spla.cg(p.aslinearoperator(), b, atol=0.0, **kw)
        self.assertEqual(info, 0)
        self.assertLess(np.linalg.norm(b - a @ x) / np.linalg.norm(b), 1e-9)


# ---- solvers ------------------------------------------------------------------------------------
class TestSolve(unittest.TestCase):
    def check_solution(self, a, b, x, rtol):
        r = np.linalg.norm(b - a @ x.astype(np.float64)) / np.linalg.norm(b)
        self.assertLessEqual(r, rtol * 1.01)
        return r

    def test_solve_cg(self):
        a = poisson2d(30)
        b = np.random.default_rng(20).standard_normal(a.shape[0])
        x, rep = spx.solve(a, b, method="cg", rtol=1e-10, backend="host", history=True)
        self.assertTrue(rep.converged)
        self.assertEqual(rep.method, "cg")
        self.assertEqual(rep.status_name, "ok")
        self.assertGreater(rep.iterations, 10)
        self.check_solution(a, b, x, 1e-10)
        np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-7, atol=1e-9)
        self.assertEqual(len(rep.history), rep.iterations + 1)
        self.assertAlmostEqual(rep.history[0], np.linalg.norm(b), delta=1e-9 * np.linalg.norm(b))
        self.assertLessEqual(rep.true_rel_resid, 1e-10 * 1.01)

    def test_solve_pcg_jacobi(self):
        # a badly scaled SPD matrix: D A D, where Jacobi pays
        a = poisson2d(24)
        d = sp.diags(np.logspace(0, 3, a.shape[0]))
        a = (d @ a @ d).tocsr()
        b = np.ones(a.shape[0])
        x, rep = spx.solve(a, b, method="pcg_jacobi", rtol=1e-9, maxit=5000, backend="host")
        self.assertEqual(rep.method, "pcg_jacobi")
        self.check_solution(a, b, x, 1e-9)
        _, rep_cg = spx.solve(a, b, method="cg", rtol=1e-9, maxit=5000, backend="host", check=False)
        self.assertLess(rep.iterations, rep_cg.iterations)
        x2, rep2 = spx.solve(a, b, method="pcg", rtol=1e-9, maxit=5000, backend="host")
        self.assertEqual(rep2.method, "pcg_jacobi")

    def test_solve_bicgstab(self):
        a = nonsymmetric(800)
        b = np.random.default_rng(21).standard_normal(800)
        x, rep = spx.solve(a, b, method="bicgstab", rtol=1e-10, backend="host")
        self.assertEqual(rep.method, "bicgstab")
        self.check_solution(a, b, x, 1e-10)
        np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-6, atol=1e-8)

    def test_solve_float32_and_x0(self):
        a = poisson2d(20).astype(np.float32)
        b = np.ones(a.shape[0], dtype=np.float32)
        x, rep = spx.solve(a, b, rtol=1e-5, backend="host")
        self.assertEqual(x.dtype, np.float32)
        self.check_solution(a.astype(np.float64), b.astype(np.float64), x, 1e-5)
        # a good initial guess: fewer iterations; x0 is not changed
        x0 = x.copy()
        x0[0] += 1e-3
        keep = x0.copy()
        x2, rep2 = spx.solve(a, b, x0=x0, rtol=1e-5, backend="host")
        np.testing.assert_array_equal(x0, keep)
        self.assertLess(rep2.iterations, rep.iterations)

    def test_solve_with_plan(self):
        a = poisson2d(20)
        with spx.Plan(a, expected_calls=2000, backend="host") as p:
            for k in range(2):
                b = np.full(a.shape[0], k + 1.0)
                x, rep = spx.solve(p, b, method="cg", rtol=1e-10)
                self.check_solution(a, b, x, 1e-10)
            with self.assertRaises(TypeError):
                spx.solve(p, b, strategy="model")   # plan options need a matrix

    def test_solve_not_converged_and_breakdown(self):
        a = poisson2d(30)
        b = np.ones(a.shape[0])
        with self.assertRaises(spx.NotConvergedError) as cm:
            spx.solve(a, b, maxit=3, backend="host")
        e = cm.exception
        self.assertIsInstance(e, spx.Error)
        self.assertEqual(e.status_name, "not-converged")
        self.assertIn("not converged", e.message)
        self.assertEqual(e.report.iterations, 3)
        self.assertEqual(e.x.shape, b.shape)
        x, rep = spx.solve(a, b, maxit=3, backend="host", check=False)
        self.assertFalse(rep.converged)
        self.assertEqual(rep.status_name, "not-converged")
        # CG on an indefinite matrix breaks down
        ind = sp.diags(np.r_[np.ones(50), -np.ones(50)], format="csr")
        with self.assertRaises(spx.BreakdownError) as cm:
            spx.solve(ind, np.ones(100), method="cg", backend="host")
        self.assertEqual(cm.exception.status_name, "breakdown")

    def test_solve_shared_matrices(self):
        """bcsstk16 (SPD) with CG and Jacobi PCG, cage10 (nonsymmetric) with BiCGSTAB."""
        k = spx.read_mm(shared("bcsstk16"))
        b = k @ np.ones(k.shape[0])
        for m in ("cg", "pcg_jacobi"):
            x, rep = spx.solve(k, b, method=m, rtol=1e-8, maxit=20000, backend="host")
            self.check_solution(k, b, x, 1e-8)
        c = spx.read_mm(shared("cage10"))
        b = np.ones(c.shape[0])
        x, rep = spx.solve(c, b, method="bicgstab", rtol=1e-10, backend="host")
        self.check_solution(c, b, x, 1e-10)


# ---- Matrix Market ------------------------------------------------------------------------------
class TestMatrixMarket(unittest.TestCase):
    def assert_same(self, a, b, exact=True):
        a, b = sp.csr_matrix(a), sp.csr_matrix(b)
        self.assertEqual(a.shape, b.shape)
        d = abs(a - b)
        if exact:
            self.assertEqual(d.count_nonzero(), 0)
        else:
            self.assertLess(d.max() if d.nnz else 0.0, 1e-6 * max(abs(b).max(), 1e-30))

    def test_read_mm_generated(self):
        mats = generated()
        with tempfile.TemporaryDirectory() as d:
            for name, a in mats.items():
                for sym in ("general", "symmetric"):
                    m = a if sym == "general" else (a + a.T).tocsr() if a.shape[0] == a.shape[1] else None
                    if m is None:
                        continue
                    for ext in (".mtx", ".mtx.gz"):
                        path = os.path.join(d, name + "_" + sym + ext)
                        if ext == ".mtx.gz":
                            buf = io.BytesIO()
                            scipy.io.mmwrite(buf, m, symmetry=sym)
                            with gzip.open(path, "wb") as f:
                                f.write(buf.getvalue())
                        else:
                            scipy.io.mmwrite(path, m, symmetry=sym)
                        with self.subTest(file=os.path.basename(path)):
                            got, info = spx.read_mm(path, info=True)
                            self.assertIsInstance(got, sp.csr_matrix)
                            self.assertEqual(info["symmetry"], sym)
                            self.assertEqual(info["format"], "coordinate")
                            self.assert_same(got, mmread(path))
                            g32 = spx.read_mm(path, dtype=np.float32)
                            self.assertEqual(g32.dtype, np.float32)
                            self.assert_same(g32, mmread(path), exact=False)
            # pattern and integer fields
            p = os.path.join(d, "pattern.mtx")
            with open(p, "w") as f:
                f.write("%%MatrixMarket matrix coordinate pattern general\n% c\n3 4 3\n1 1\n3 4\n2 2\n")
            self.assert_same(spx.read_mm(p), mmread(p))
            p = os.path.join(d, "int.mtx")
            with open(p, "w") as f:
                f.write("%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 7\n3 2 -4\n")
            self.assert_same(spx.read_mm(p), mmread(p))

    def test_read_mm_shared(self):
        for name in ("west0067", "lp_afiro", "can_161", "ash219", "bcsstm05", "GD98_a"):
            with self.subTest(matrix=name):
                path = shared(name)
                got = spx.read_mm(path)
                self.assert_same(got, mmread(path))
                x = np.random.default_rng(30).standard_normal(got.shape[1])
                with spx.Plan(got, backend="host") as p:
                    self.assertLess(rel_err(p @ x, got @ x), 1e-13)

    def test_write_mm(self):
        a = nonsymmetric(200)
        s = (poisson2d(10)).tocsr()
        with tempfile.TemporaryDirectory() as d:
            for m, sym, name in ((a, "general", "a.mtx"), (s, "symmetric", "s.mtx.gz")):
                path = os.path.join(d, name)
                spx.write_mm(path, m, symmetry=sym)
                self.assert_same(spx.read_mm(path), m)
                self.assert_same(mmread(path), m)
            with self.assertRaises(spx.Error) as cm:
                spx.write_mm(os.path.join(d, "x.mtx"), a, symmetry="symmetric")
            self.assertEqual(cm.exception.status_name, "invalid-argument")

    def test_read_mm_errors(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(spx.Error) as cm:
                spx.read_mm(os.path.join(d, "missing.mtx"))
            self.assertEqual(cm.exception.status_name, "io")
            self.assertIn("missing.mtx", cm.exception.message)
            bad = os.path.join(d, "bad.mtx")
            with open(bad, "w") as f:
                f.write("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n2 x 2.0\n")
            with self.assertRaises(spx.Error) as cm:
                spx.read_mm(bad)
            self.assertEqual(cm.exception.status_name, "parse")
            self.assertIn("bad.mtx:4", cm.exception.message)
            rng = os.path.join(d, "range.mtx")
            with open(rng, "w") as f:
                f.write("%%MatrixMarket matrix coordinate real general\n3 3 1\n4 1 1.0\n")
            with self.assertRaises(spx.Error) as cm:
                spx.read_mm(rng)
            self.assertEqual(cm.exception.status_name, "range")
            with self.assertRaises(TypeError):
                spx.read_mm(bad, dtype=np.int32)
            with self.assertRaises(ValueError):
                spx.read_mm("a\0b")


# ---- bad input ----------------------------------------------------------------------------------
class TestErrors(unittest.TestCase):
    def setUp(self):
        self.a = nonsymmetric(100)
        self.p = spx.Plan(self.a, backend="host")

    def tearDown(self):
        self.p.close()

    def test_bad_vectors(self):
        p = self.p
        with self.assertRaises(TypeError):
            p @ np.ones(100, dtype=np.float32)             # wrong dtype
        with self.assertRaises(ValueError):
            p @ np.ones(99)                                # wrong length
        with self.assertRaises(ValueError):
            p @ np.ones((100, 1))                          # 2-D
        with self.assertRaises(ValueError):
            p @ np.ones(200)[::2]                          # not contiguous
        y = np.ones(100)
        y.flags.writeable = False
        with self.assertRaises(ValueError):
            p.spmv(np.ones(100), y)                        # read-only output
        with self.assertRaises(ValueError):
            p.spmv(np.ones(100), beta=1.0)                 # beta without y
        v = np.ones(100)
        with self.assertRaises(ValueError):
            p.spmv(v, v)                                   # x aliases y
        with self.assertRaises(TypeError):
            p.spmv(np.ones(100), [0.0] * 100)              # y must be an array
        with self.assertRaises(TypeError):                 # a device array on a host plan
            p.spmv(_FakeDevice(100), np.ones(100))

    def test_bad_matrices(self):
        with self.assertRaises(TypeError):
            spx.Plan(np.eye(3))                            # dense
        with self.assertRaises(TypeError):
            spx.Plan(sp.csr_matrix(np.eye(3, dtype=np.complex128)))
        with self.assertRaises(TypeError):
            spx.Plan(object())
        with self.assertRaises(spx.Error) as cm:
            spx.Plan(self.a, strategy="exam", backend="host")
        self.assertEqual(cm.exception.status_name, "invalid-argument")
        self.assertIn("kubota", cm.exception.message)      # the library lists the names
        with self.assertRaises(spx.Error) as cm:
            spx.Plan(self.a, force="no-such-format", backend="host")
        self.assertEqual(cm.exception.status, 1)
        with self.assertRaises(ValueError):
            spx.Plan(self.a, expected_calls=0)
        with self.assertRaises(ValueError):
            spx.Plan(self.a, backend="opencl")
        with self.assertRaises(TypeError):
            spx.Plan(self.a, dtype=np.int32)
        # a CSR whose arrays break the invariants is a status from spx_csr_validate, not a crash
        bad = _DuckCSR((3, 3), [0, 2, 3, 3], [1, 0, 2], [1.0, 2.0, 3.0])   # unsorted row 0
        with self.assertRaises(spx.Error) as cm:
            spx.Plan(bad, backend="host")
        self.assertEqual(cm.exception.status_name, "invalid-argument")
        bad = _DuckCSR((3, 3), [0, 2, 1, 3], [0, 1, 2], [1.0, 2.0, 3.0])   # decreasing indptr
        with self.assertRaises(spx.Error):
            spx.Plan(bad, backend="host")
        bad = _DuckCSR((3, 3), [0, 1, 2, 3], [0, 1, 7], [1.0, 2.0, 3.0])   # column out of range
        with self.assertRaises(spx.Error):
            spx.Plan(bad, backend="host")
        bad = _DuckCSR((3, 3), [0, 1, 2, 5], [0, 1, 2], [1.0, 2.0, 3.0])   # short arrays
        with self.assertRaises(ValueError):
            spx.Plan(bad, backend="host")
        ok = _DuckCSR((3, 3), [0, 1, 2, 3], [0, 1, 2], [1.0, 2.0, 3.0])
        with spx.Plan(ok, backend="host") as p:
            np.testing.assert_array_equal(p @ np.ones(3), [1.0, 2.0, 3.0])
        if not HAVE_GPU:  # the CUDA backend asked for where there is none: a status, not a crash
            with self.assertRaises(spx.Error) as cm:
                spx.Plan(self.a, backend="cuda")
            self.assertEqual(cm.exception.status_name, "not-available")

    def test_bad_solve_args(self):
        with self.assertRaises(ValueError):
            spx.solve(sp.random(4, 5, density=0.5, format="csr"), np.ones(4))   # not square
        with spx.Plan(sp.random(4, 5, density=0.5, format="csr"), backend="host") as p:
            with self.assertRaises(ValueError):
                spx.solve(p, np.ones(4))
        with self.assertRaises(ValueError):
            spx.solve(self.p, np.ones(100), method="gmres")
        with self.assertRaises(ValueError):
            spx.solve(self.p, np.ones(100), rtol=0, atol=0)
        with self.assertRaises(ValueError):
            spx.solve(self.p, np.ones(100), maxit=0)
        with self.assertRaises(TypeError):
            spx.solve(self.p, np.ones(100, dtype=np.float32))
        with self.assertRaises(ValueError):
            spx.solve(self.p, np.ones(10))
        # pcg_jacobi without a kept diagonal is the library's error
        with spx.Plan(poisson2d(5), backend="host", no_diagonal=True) as p:
            with self.assertRaises(spx.Error):
                spx.solve(p, np.ones(25), method="pcg_jacobi")

    def test_closed_plan(self):
        p = spx.Plan(self.a, backend="host")
        with p:
            pass
        with self.assertRaises(ValueError):
            p @ np.ones(100)
        with self.assertRaises(ValueError):
            p.reason
        p.close()  # twice is fine
        q = spx.Plan(self.a, backend="host")
        del q      # __del__ frees it

    def test_error_class(self):
        e = spx.Error(4, "m.mtx:3: bad")
        self.assertEqual(e.status_name, "parse")
        self.assertIn("m.mtx:3: bad", str(e))
        self.assertTrue(issubclass(spx.NotConvergedError, spx.Error))
        self.assertTrue(issubclass(spx.BreakdownError, spx.Error))


class _DuckCSR:
    def __init__(self, shape, indptr, indices, data):
        self.shape = shape
        self.indptr, self.indices, self.data = np.array(indptr), np.array(indices), np.array(data)


class _FakeDevice:
    def __init__(self, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f8", "data": (8, False),
                                         "strides": None, "version": 3, "stream": 1}


# ---- stencil ------------------------------------------------------------------------------------
class TestStencil(unittest.TestCase):
    def test_stencil_vs_numpy(self):
        rng = np.random.default_rng(40)
        for dt in (np.float64, np.float32):
            u0 = rng.standard_normal((9, 8, 11)).astype(dt)   # (nz, ny, nx)
            for c in ((0.4, 0.1, 0.1, 0.1), (0.3, 0.05, 0.15, 0.1, 0.1, 0.12, 0.08)):
                ref = stencil_ref(u0, 5, c if len(c) == 7 else (c[0], c[1], c[1], c[2], c[2], c[3], c[3]))
                for m in (None, "incore", "normal", "mm", "mmt", "mmtb", "overlap"):
                    with self.subTest(dtype=dt.__name__, c=len(c), method=m):
                        u = u0.copy()
                        rep = spx.stencil(u, 5, coefficients=c, method=m, backend="host")
                        np.testing.assert_array_equal(u, ref)   # the same sums in the same order
                        self.assertEqual(rep.steps, 5)
                        if m:
                            self.assertEqual(rep.method, m)
        u = u0.copy()
        spx.stencil(u, 0, backend="host")
        np.testing.assert_array_equal(u, u0)

    def test_stencil_grid_and_errors(self):
        g = spx.stencil_grid((5, 6, 7), dtype=np.float64, backend="host")
        self.assertEqual(g.shape, (5, 6, 7))
        self.assertFalse(g.any())
        g[2, 3, 3] = 1.0
        ref = stencil_ref(g, 2, (0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1))
        spx.stencil(g, 2, backend="host", method="mmtb")
        np.testing.assert_array_equal(g, ref)
        with self.assertRaises(ValueError):
            spx.stencil(np.zeros((4, 4)), 1)                   # 2-D
        with self.assertRaises(ValueError):
            spx.stencil(np.zeros((2, 4, 4)), 1)                # a size below 3
        with self.assertRaises(TypeError):
            spx.stencil(np.zeros((4, 4, 4), dtype=np.int32), 1)
        with self.assertRaises(ValueError):
            spx.stencil(np.zeros((4, 4, 8))[:, :, ::2], 1)     # not contiguous
        with self.assertRaises(ValueError):
            spx.stencil(np.zeros((4, 4, 4)), 1, coefficients=(1, 2))
        with self.assertRaises(spx.Error) as cm:
            spx.stencil(np.zeros((4, 4, 4)), 1, method="magic", backend="host")
        self.assertEqual(cm.exception.status_name, "invalid-argument")
        self.assertIn("overlap", cm.exception.message)
        with self.assertRaises(spx.Error):
            spx.stencil(np.zeros((4, 4, 4)), 1, depth=3, backend="host")


# ---- GPU ----------------------------------------------------------------------------------------
class TestGpu(unittest.TestCase):
    @need_gpu
    def test_gpu_spmv_numpy(self):
        """A cuda plan on NumPy vectors (copied to and from the device)."""
        rng = np.random.default_rng(50)
        for name, a in generated().items():
            for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
                m = a.astype(dt)
                x = rng.standard_normal(a.shape[1]).astype(dt)
                y0 = rng.standard_normal(a.shape[0]).astype(dt)
                ref = 2.0 * (m.astype(np.float64) @ x.astype(np.float64)) + 0.5 * y0
                with self.subTest(matrix=name, dtype=dt.__name__), spx.Plan(m, backend="cuda") as p:
                    self.assertEqual(p.backend, "cuda")
                    self.assertLess(rel_err(p @ x, m.astype(np.float64) @ x.astype(np.float64)), tol)
                    y = y0.copy()
                    p.spmv(x, y, alpha=2.0, beta=0.5)
                    self.assertLess(rel_err(y, ref), tol)

    @need_gpu
    def test_gpu_every_strategy(self):
        a = generated()["power_rows"]
        x = np.random.default_rng(51).standard_normal(a.shape[1])
        for s in spx.strategies():
            with self.subTest(strategy=s), spx.Plan(a, strategy=s, backend="cuda", trial_reps=2) as p:
                self.assertLess(rel_err(p @ x, a @ x), 1e-12, p.reason)

    @need_gpu
    def test_gpu_cuda_array_interface(self):
        """Device vectors used in place through __cuda_array_interface__ (no CuPy needed)."""
        a = nonsymmetric(500)
        rng = np.random.default_rng(52)
        x, y0 = rng.standard_normal(500), rng.standard_normal(500)
        dx, dy = DeviceVector(x), DeviceVector(y0)
        with spx.Plan(a, backend="cuda") as p:
            out = p.spmv(dx, dy, alpha=1.5, beta=-1.0)
            self.assertIs(out, dy)
            self.assertLess(rel_err(dy.get(), 1.5 * (a @ x) - y0), 1e-12)
            with self.assertRaises(TypeError):
                p @ dx                       # not CuPy: spx cannot allocate y of its kind
            with self.assertRaises(TypeError):
                p.spmv(dx, np.empty(500))    # mixed host and device
            with self.assertRaises(TypeError):
                p.spmv(DeviceVector(x.astype(np.float32)), dy)
            with self.assertRaises(ValueError):
                p.spmv(dx, dx)               # aliasing
        with spx.Plan(a, backend="host") as p, self.assertRaises(TypeError):
            p.spmv(dx, dy)

    @need_gpu
    def test_gpu_solve(self):
        a = poisson2d(30)
        b = np.ones(a.shape[0])
        for m in ("cg", "pcg_jacobi"):
            x, rep = spx.solve(a, b, method=m, rtol=1e-10, backend="cuda")
            self.assertLessEqual(np.linalg.norm(b - a @ x) / np.linalg.norm(b), 1e-10 * 1.01)
        c = nonsymmetric(600)
        b = np.ones(600)
        x, rep = spx.solve(c, b, method="bicgstab", rtol=1e-10, backend="cuda")
        self.assertLessEqual(np.linalg.norm(b - c @ x) / np.linalg.norm(b), 1e-10 * 1.01)

    @need_gpu
    def test_gpu_stencil(self):
        """The GPU's result equals the host reference bit for bit, from a plain and a pinned grid."""
        rng = np.random.default_rng(53)
        for dt in (np.float32, np.float64):
            u0 = rng.standard_normal((12, 10, 16)).astype(dt)
            ref = stencil_ref(u0, 4, (0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1))
            for m in (None, "incore", "mmt"):
                u = u0.copy()
                spx.stencil(u, 4, method=m, backend="cuda")
                np.testing.assert_array_equal(u, ref)
            g = spx.stencil_grid(u0.shape, dtype=dt, backend="cuda")
            g[...] = u0
            spx.stencil(g, 4, backend="cuda")
            np.testing.assert_array_equal(g, ref)

    @need_cupy
    def test_gpu_cupy_spmv(self):
        rng = np.random.default_rng(54)
        for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
            a = nonsymmetric(700).astype(dt)
            x = rng.standard_normal(700).astype(dt)
            with spx.Plan(a, backend="cuda") as p:
                y = p @ cupy.asarray(x)
                self.assertIsInstance(y, cupy.ndarray)
                self.assertLess(rel_err(cupy.asnumpy(y), a.astype(np.float64) @ x.astype(np.float64)), tol)
                s = cupy.cuda.Stream(non_blocking=True)
                with s:                         # queued on the arrays' stream
                    dx, dy = cupy.asarray(x), cupy.ones(700, dtype=dt)
                    p.spmv(dx, dy, alpha=2.0, beta=1.0)
                    got = cupy.asnumpy(dy)
                s.synchronize()
                self.assertLess(rel_err(got, 2.0 * (a.astype(np.float64) @ x.astype(np.float64)) + 1.0), tol)

    @need_cupy
    def test_gpu_cupy_csr_and_solve(self):
        a = poisson2d(30)
        with spx.Plan(cusp.csr_matrix(a), backend="cuda") as p:   # cupyx input
            b = cupy.ones(a.shape[0])
            x, rep = spx.solve(p, b, method="cg", rtol=1e-10)
            self.assertIsInstance(x, cupy.ndarray)
            xn = cupy.asnumpy(x)
            self.assertLessEqual(np.linalg.norm(1 - a @ xn) / np.sqrt(a.shape[0]), 1e-10 * 1.01)
        x, rep = spx.solve(cusp.csr_matrix(a), cupy.ones(a.shape[0]), method="bicgstab", rtol=1e-10)
        self.assertTrue(rep.converged)


# ---- a cmocka-style runner for tests/run.sh ------------------------------------------------------
class _CmockaResult(unittest.TextTestResult):
    """Also records each test's outcome by method name (subtests fold into their test)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.outcome = {}

    def _set(self, test, what):
        name = test._testMethodName if hasattr(test, "_testMethodName") else str(test)
        if self.outcome.get(name) != "failed":
            self.outcome[name] = what

    def addSuccess(self, test):
        super().addSuccess(test)
        self._set(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "failed")

    def addError(self, test, err):
        super().addError(test, err)
        self._set(test, "failed")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skipped")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set(test, "passed")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "failed")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self.outcome[test._testMethodName] = "failed"


def main_cmocka():
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=_CmockaResult)
    res = runner.run(suite)
    by = {"passed": [], "failed": [], "skipped": []}
    for name, what in sorted(res.outcome.items()):
        by[what].append(name)
    print("[==========] %d test(s) run." % len(res.outcome))
    print("[  PASSED  ] %d test(s)." % len(by["passed"]))
    for what, tag in (("skipped", "[  SKIPPED ]"), ("failed", "[  FAILED  ]")):
        if by[what]:
            print("%s %d test(s), listed below:" % (tag, len(by[what])))
            for n in by[what]:
                print("%s %s" % (tag, n))
    return 1 if by["failed"] or not res.outcome else 0


if __name__ == "__main__":
    if "--cmocka" in sys.argv:
        sys.exit(main_cmocka())
    unittest.main()
