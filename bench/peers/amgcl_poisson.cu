// SPDX-License-Identifier: BSD-3-Clause
// bench/peers/amgcl_poisson.cu: the AMGCL peer of `spx solve gen:poisson7:N --precond amg --ones`:
// 3-D 7-point Poisson on an n^3 grid (Dirichlet boundary eliminated, 6 on the diagonal, -1 to the
// face neighbours, row x + n (y + n z): the matrix spx_gen_poisson3d makes), b = 1, x0 = 0, CG
// preconditioned by AMGCL's smoothed aggregation with SPAI0 relaxation, rtol 1e-8, on the CUDA
// backend (setup on the host, solve on the GPU). Prints one line per run: setup (host, wall),
// solve (GPU, wall after a device synchronize), iterations, AMGCL's residual and the true relative
// residual ||b - A x|| / ||b|| recomputed on the host. The first run pays one-time costs (CUDA
// context, cuSPARSE); compare the later ones.
// Build (AMGCL needs no Boost with AMGCL_NO_BOOST; ../shared/peers/amgcl from the repository root):
//   nvcc -O3 -std=c++17 -arch=native -Xcompiler -fopenmp -DAMGCL_NO_BOOST -I../shared/peers/amgcl \
//        bench/peers/amgcl_poisson.cu -o amgcl_poisson -lcusparse -lgomp
// Usage: amgcl_poisson [N [RUNS]]   (default 100 3)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <tuple>
#include <vector>

#include <amgcl/adapter/crs_tuple.hpp>
#include <amgcl/amg.hpp>
#include <amgcl/backend/cuda.hpp>
#include <amgcl/coarsening/smoothed_aggregation.hpp>
#include <amgcl/make_solver.hpp>
#include <amgcl/relaxation/spai0.hpp>
#include <amgcl/solver/cg.hpp>

typedef amgcl::backend::cuda<double> Backend;
typedef amgcl::make_solver<amgcl::amg<Backend, amgcl::coarsening::smoothed_aggregation, amgcl::relaxation::spai0>,
                           amgcl::solver::cg<Backend> >
    Solver;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The 7-point Laplacian of an n^3 grid, columns sorted in each row.
static void poisson(ptrdiff_t n, std::vector<ptrdiff_t> &ptr, std::vector<ptrdiff_t> &col, std::vector<double> &val) {
  const ptrdiff_t rows = n * n * n;
  ptr.assign(1, 0);
  ptr.reserve(rows + 1);
  col.reserve(7 * rows);
  val.reserve(7 * rows);
  for (ptrdiff_t z = 0; z < n; z++)
    for (ptrdiff_t y = 0; y < n; y++)
      for (ptrdiff_t x = 0; x < n; x++) {
        const ptrdiff_t i = x + n * (y + n * z);
        if (z > 0) { col.push_back(i - n * n); val.push_back(-1); }
        if (y > 0) { col.push_back(i - n); val.push_back(-1); }
        if (x > 0) { col.push_back(i - 1); val.push_back(-1); }
        col.push_back(i); val.push_back(6);
        if (x + 1 < n) { col.push_back(i + 1); val.push_back(-1); }
        if (y + 1 < n) { col.push_back(i + n); val.push_back(-1); }
        if (z + 1 < n) { col.push_back(i + n * n); val.push_back(-1); }
        ptr.push_back((ptrdiff_t)col.size());
      }
}

int main(int argc, char **argv) {
  const ptrdiff_t n = argc > 1 ? std::atol(argv[1]) : 100;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  const ptrdiff_t rows = n * n * n;
  std::vector<ptrdiff_t> ptr, col;
  std::vector<double> val, b(rows, 1.0), x(rows);
  poisson(n, ptr, col, val);
  cudaFree(0); // the CUDA context, outside the timings
  cusparseHandle_t handle;
  cusparseCreate(&handle);
  Backend::params bprm;
  bprm.cusparse_handle = handle;
  Solver::params prm;
  prm.solver.tol = 1e-8;
  std::printf("amgcl %td^3: %td rows, %td nonzeros; CG + smoothed aggregation + SPAI0, rtol 1e-8, b = 1\n", n, rows,
              (ptrdiff_t)val.size());
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    Solver solve(std::tie(rows, ptr, col, val), prm, bprm);
    cudaDeviceSynchronize();
    double t1 = now();
    thrust::device_vector<double> db(b.begin(), b.end()), dx(rows, 0.0);
    cudaDeviceSynchronize();
    double t2 = now();
    size_t iters;
    double error;
    std::tie(iters, error) = solve(db, dx);
    cudaDeviceSynchronize();
    double t3 = now();
    thrust::copy(dx.begin(), dx.end(), x.begin());
    double num = 0, den = 0;
    for (ptrdiff_t i = 0; i < rows; i++) {
      double s = b[i];
      for (ptrdiff_t k = ptr[i]; k < ptr[i + 1]; k++) s -= val[k] * x[col[k]];
      num += s * s;
      den += b[i] * b[i];
    }
    std::printf("run %d: setup %.1f ms, solve %.2f ms, %zu iterations, residual %.3e (recomputed %.3e)\n", r + 1,
                1e3 * (t1 - t0), 1e3 * (t3 - t2), iters, error, std::sqrt(num / den));
    if (r == 0) std::cout << solve << std::endl;
  }
  cusparseDestroy(handle);
  return 0;
}
