// SPDX-License-Identifier: Apache-2.0
// C = beta * C for the k == 0 case (the product is empty): BLAS semantics, so
// beta == 0 writes zeros without reading C (NaN in C does not survive). The
// epilogue functor still runs on every element: C = ep(beta * C, i, j).
// Memory-bound and rare; one thread per element, rows strided over gridDim.y.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../runtime/launcher.hpp"
#include "launch_util.hpp"
#include "operand.cuh"

namespace kf::detail {

constexpr int scale_block = 256;
/// Rows per grid pass: the kernel strides over the rest (gridDim.y limit 65535).
constexpr std::size_t scale_max_grid_rows = 4096;

template <class T, class Epilogue>
KF_KERNEL void matmul_scale_c(T* C, std::size_t m, std::size_t n, std::size_t ldc, compute_t<T> beta, Epilogue ep) {
  const std::size_t j = blockIdx.x * std::size_t(scale_block) + threadIdx.x;
  if (j >= n) return;
  for (std::size_t i = blockIdx.y; i < m; i += gridDim.y) {
    T* c = C + i * ldc + j;
    const compute_t<T> v = beta == compute_t<T>(0) ? compute_t<T>(0) : beta * to_compute(*c);
    *c = from_compute<T>(ep(v, static_cast<std::int64_t>(i), static_cast<std::int64_t>(j)));
  }
}

template <class T, class Epilogue = epilogue::identity>
void launch_scale_c(T* C, std::size_t m, std::size_t n, std::size_t ldc, compute_t<T> beta, cudaStream_t stream,
                    const Epilogue& ep = {}) {
  const std::size_t rows = m < scale_max_grid_rows ? m : scale_max_grid_rows;
  const dim3 grid = grid_2d(ceil_div(n, scale_block), rows, "k == 0 scaling");
  matmul_scale_c<T, Epilogue><<<grid, scale_block, 0, stream>>>(C, m, n, ldc, beta, ep);
  check_launch("kf::matmul (C = beta * C)");
}

}  // namespace kf::detail
