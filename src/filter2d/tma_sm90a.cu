// SPDX-License-Identifier: Apache-2.0
// Step 6, host side -- the tma_pipeline launch (kernel: 06_tma_pipeline.cuh;
// interface: tma_sm90a.hpp): the input's 3-D tensor map (width, height,
// channels; boxes of box_cols x chunk_rows x 1, zero fill outside) and a grid
// of one wave.
//
// This translation unit is built for sm_90a only (src/filter2d/sources.cmake). It must
// instantiate no kernel that other translation units instantiate too (their
// weak copies could be the ones the program registers, and other GPUs would
// then find no image): so it includes only the step-6 kernel, which nothing
// else instantiates.
#include "kernelforge/kernels/filter2d/tma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include <cuda.h>

#include "kernelforge/kernels/filter2d/06_tma_pipeline.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"

namespace kf::detail {

bool filter2d_tma_available(int device) { return sm90a_code_runs_on(device); }

namespace {

constexpr const char* what = "kf::filter2d (tma_pipeline)";

template <int R, int S>
void launch_kernel(int device, const CUtensorMap& map, filter2d_tma::params prm, std::size_t channels,
                   std::size_t height, std::size_t width, cudaStream_t stream) {
  constexpr auto kernel = &filter2d_tma_pipeline<R, S>;
  const int resident = resident_clusters<kernel>(device, filter2d_tma::threads, filter2d_tma::smem_bytes, 1, what);
  const filter2d_tma::grid_plan g =
      filter2d_tma::plan_grid(channels, height, width, static_cast<std::size_t>(resident > 0 ? resident : 1));
  prm.parts = static_cast<int>(g.parts);
  const dim3 grid(static_cast<unsigned>(g.strips), static_cast<unsigned>(g.parts),
                  static_cast<unsigned>(g.channel_blocks));
  kernel<<<grid, filter2d_tma::threads, filter2d_tma::smem_bytes, stream>>>(map, prm);
  check_launch(what);
}

}  // namespace

bool filter2d_tma_try_launch(int device, const filter2d_args<float>& a, cudaStream_t stream) {
  if (!filter2d_tma_available(device)) return false;
  using z = std::size_t;
  const z C = static_cast<z>(a.channels), H = static_cast<z>(a.height), W = static_cast<z>(a.width);
  const z in_pitch = static_cast<z>(a.in_pitch);
  // dims (x = column, y = row, z = channel); rows in_pitch apart, channels
  // in_plane apart (bytes, multiples of 16: the pitch is a multiple of 4).
  CUtensorMap map{};
  const cuuint64_t dims[3] = {W, H, C};
  const cuuint64_t strides[2] = {in_pitch * sizeof(float), static_cast<z>(a.in_plane) * sizeof(float)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(filter2d_tma::box_cols),
                             static_cast<cuuint32_t>(filter2d_tma::chunk_rows), 1};
  // No swizzle: the consumers read plain rows of the box (no driver encoder or a rejected map: false).
  if (!encode_tiled_map(map, a.in, 3, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_NONE)) return false;
  filter2d_tma::params prm;
  prm.out = a.out;
  prm.filter = a.filter;
  prm.out_pitch = a.out_pitch;
  prm.out_plane = a.out_plane;
  prm.height = a.height;
  prm.width = a.width;
  prm.channels = a.channels;
  prm.chunks = static_cast<int>((H + filter2d_tma::chunk_rows - 1) / filter2d_tma::chunk_rows);
  if (a.r == 3) {
    launch_kernel<3, 3>(device, map, prm, C, H, W, stream);
  } else {
    launch_kernel<5, 5>(device, map, prm, C, H, W, stream);
  }
  return true;
}

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

bool filter2d_tma_available(int) { return false; }

bool filter2d_tma_try_launch(int, const filter2d_args<float>&, cudaStream_t) { return false; }

}  // namespace kf::detail

#endif
