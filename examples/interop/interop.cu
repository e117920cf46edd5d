/* SPDX-License-Identifier: BSD-3-Clause */
// interop.cu: spx inside a program that already uses the CUDA runtime.
//
// The program owns everything: it allocates with cudaMalloc, builds a matrix ON THE DEVICE with its
// own kernel (the 1-D Laplacian, tridiagonal [-1 2 -1]), creates its own stream, and hands spx
// device pointers. spx works in the device's primary context (the one the runtime uses), wraps the
// CSR without copying it, and queues its SpMV on the program's stream. Exit 0: correct; 77: no GPU.
#include <spx/spx.h>

#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "interop: %s: %s\n", #call, cudaGetErrorString(e_));           \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)
#define CHECK_SPX(call)                                                                   \
  do {                                                                                    \
    if ((call) != SPX_OK) {                                                               \
      std::fprintf(stderr, "interop: %s: %s\n", #call, spx_last_error());                 \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

// Row i of the 1-D Laplacian: entries at i-1, i, i+1 (when inside), 3n-2 nonzeros in all.
__global__ void build_laplacian(int n, int *ptr, int *col, double *val) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int start = i == 0 ? 0 : 3 * i - 1, k = start;
  if (i > 0) { col[k] = i - 1; val[k++] = -1.0; }
  col[k] = i; val[k++] = 2.0;
  if (i < n - 1) { col[k] = i + 1; val[k++] = -1.0; }
  ptr[i] = start;
  if (i == n - 1) ptr[n] = k;
}

__global__ void fill_x(int n, double *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = std::sin(0.001 * i) + 0.5;
}

int main() {
  const int n = 1 << 20, nnz = 3 * n - 2;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("interop: no GPU, skipped\n");
    return 77;
  }
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int *ptr, *col;
  double *val, *x, *y, *y2;
  CHECK_CUDA(cudaMalloc(&ptr, (n + 1) * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&col, nnz * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&val, nnz * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&y2, n * sizeof(double)));
  build_laplacian<<<(n + 255) / 256, 256, 0, stream>>>(n, ptr, col, val);
  fill_x<<<(n + 255) / 256, 256, 0, stream>>>(n, x);
  CHECK_CUDA(cudaMemsetAsync(y, 0xff, n * sizeof(double), stream));  // NaN: every row must be written
  CHECK_CUDA(cudaGetLastError());

  // spx on the program's GPU, stream and memory.
  spx_context_options opt = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = nullptr;
  CHECK_SPX(spx_context_create(&opt, &ctx));
  CHECK_SPX(spx_context_set_stream(ctx, stream));
  spx_dmatrix *a = nullptr;
  CHECK_SPX(spx_dmatrix_wrap_csr(ctx, n, n, nnz, (spx_devptr)ptr, (spx_devptr)col, (spx_devptr)val,
                                 SPX_DOUBLE, nullptr, &a));
  CHECK_SPX(spx_dmatrix_spmv(a, 1.0, (spx_devptr)x, 0.0, (spx_devptr)y));  // y = A x, on `stream`
  CHECK_SPX(spx_dmatrix_spmv(a, 2.0, (spx_devptr)x, 0.0, (spx_devptr)y2));
  CHECK_SPX(spx_dmatrix_spmv(a, -1.0, (spx_devptr)x, 0.5, (spx_devptr)y2)); // y2 = 0.5*2Ax - Ax = 0
  CHECK_CUDA(cudaStreamSynchronize(stream));

  std::vector<double> hx(n), hy(n), hy2(n);
  CHECK_CUDA(cudaMemcpy(hx.data(), x, n * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hy.data(), y, n * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hy2.data(), y2, n * sizeof(double), cudaMemcpyDeviceToHost));
  double err = 0, err2 = 0;
  for (int i = 0; i < n; i++) {
    double ref = 2 * hx[i] - (i > 0 ? hx[i - 1] : 0) - (i < n - 1 ? hx[i + 1] : 0);
    double d = std::fabs(hy[i] - ref);
    if (!(d <= err)) err = d;           // NaN propagates into err
    if (!(std::fabs(hy2[i]) <= err2)) err2 = std::fabs(hy2[i]);
  }
  std::printf("interop: %s, %d rows on the caller's stream: max |y - A x| = %.3g, |0.5*2Ax - Ax| = %.3g (%s)\n",
              spx_dmatrix_describe(a), n, err, err2, err < 1e-12 && err2 < 1e-12 ? "ok" : "WRONG");
  spx_dmatrix_destroy(a);                  // leaves ptr/col/val to us
  spx_context_destroy(ctx);
  CHECK_CUDA(cudaFree(ptr));               // still ours, still valid
  CHECK_CUDA(cudaFree(col));
  CHECK_CUDA(cudaFree(val));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(y2));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return err < 1e-12 && err2 < 1e-12 ? 0 : 1;
}
