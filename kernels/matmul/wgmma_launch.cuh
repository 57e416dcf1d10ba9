// SPDX-License-Identifier: Apache-2.0
// Host side shared by the wgmma steps 10 (wgmma_tf32.cu) and 12 (wgmma_f16.cu),
// after each has chosen its TMA maps and cluster size: the kernel's parameter
// block, the split-k plan and its fp32 workspace, the persistent grid, the
// cluster launch and the split-k reduction (split_k.cuh), which applies alpha,
// beta and the epilogue functor once the k-slices are summed.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "10_wgmma_tf32.cuh"
#include "../common/alignment.hpp"
#include "../runtime/launcher.hpp"
#include "gemm_args.cuh"
#include "split_k.cuh"
#include "tuning.hpp"

namespace kf::detail {

/// Launches the persistent wgmma kernel for `args` (tiles_m x tiles_n tiles in
/// clusters of `cluster`, `resident_clusters` of which the device runs at once;
/// k-steps of stage_k) through launch(config, params), which calls
/// cudaLaunchKernelEx with the right instantiation. Where the tiles fill too
/// little of the GPU (plan_split_k), k is split and the reduction enqueued
/// after the kernel; without pool memory it runs unsplit.
template <class T, class Epilogue, class Launch>
void launch_wgmma_gemm(const gemm_args<T>& args, std::size_t tiles_m, std::size_t tiles_n, int cluster,
                       int resident_clusters, int stage_k, int device, const Epilogue& fn, cudaStream_t stream,
                       Launch&& launch) {
  wgmma_tf32::epilogue_params<T> ep;
  ep.C = args.C;
  ep.ldc = static_cast<long long>(args.ldc);
  ep.m = static_cast<int>(args.m);
  ep.n = static_cast<int>(args.n);
  ep.k = static_cast<int>(args.k);
  ep.alpha = args.alpha;
  ep.beta = args.beta;
  ep.tiles_n = static_cast<int>(tiles_n);
  ep.cluster_rows = static_cast<int>(ceil_div(tiles_m, static_cast<std::size_t>(cluster)));
  ep.pairs = rows_aligned(args.C, args.ldc, sizeof(T), 2 * sizeof(T));

  split_k_plan plan = plan_split_k(tiles_m * tiles_n, args.m, args.n, args.k, stage_k, resident_clusters * cluster);
  // Freed on `stream` when this scope ends, after the launches are enqueued (or one throws).
  const pooled_workspace partial(device, plan.workspace_bytes(args.m, args.n), stream);
  ep.partial = partial.data<float>();
  if (ep.partial == nullptr) plan = split_k_plan{1, args.k};
  ep.splits = plan.split;
  ep.split_k_tiles = static_cast<int>(ceil_div(plan.k_slice, static_cast<std::size_t>(stage_k)));

  // Persistent: no more clusters than the device runs at once.
  const std::size_t items = static_cast<std::size_t>(ep.cluster_rows) * ep.tiles_n * ep.splits;
  const std::size_t clusters =
      items < static_cast<std::size_t>(resident_clusters) ? items : static_cast<std::size_t>(resident_clusters);
  cudaLaunchAttribute cluster_dims{};
  const cudaLaunchConfig_t config =
      cluster_launch_config(dim3(static_cast<unsigned>(clusters * cluster)), dim3(wgmma_tf32::threads),
                            wgmma_tf32::smem_bytes, stream, cluster, cluster_dims);
  launch(config, ep);
  if (ep.partial != nullptr) launch_split_k_reduce(args, ep.partial, plan.split, fn, stream);
}

}  // namespace kf::detail
