// SPDX-License-Identifier: Apache-2.0
// Step 10, host side -- launches the wgmma TF32 kernel (10_wgmma_tf32.cuh):
// TMA descriptors, the repack of operands TF32 wgmma cannot read in place (into
// the runtime's pooled workspace), the cluster launch. Host interface and the
// conditions it checks: wgmma_tf32_launch.cuh.

// This translation unit must never instantiate the mma.sync kernel of
// 09_tensor_core_tf32.cuh: built for sm_90a only, its copy of that (weak, shared)
// kernel could be the one the program registers, and other GPUs would then find
// no image for it. So it takes the declarations only; the fallback to mma.sync
// lives in the inline launch_wgmma_tf32, compiled in the launcher's translation unit.
#define KF_WGMMA_TF32_DECLARATIONS_ONLY
#include "matmul/wgmma_tf32_launch.cuh"

#if defined(KERNELFORGE_WGMMA_TF32)

#include <cstddef>
#include <cstdint>
#include <limits>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "common/alignment.hpp"
#include "common/grid.hpp"
#include "matmul/10_wgmma_tf32.cuh"
#include "matmul/wgmma_launch.cuh"
#include "runtime/launcher.hpp"

namespace kf::detail {

/// Repacked operands start on 256-byte boundaries inside the workspace.
inline constexpr std::size_t workspace_alignment = 256;

namespace wgmma_tf32 {
namespace {

constexpr const char* what = "kf::matmul (wgmma_tf32)";

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    constexpr unsigned driver_api_version = 12000;  // the cuTensorMapEncodeTiled ABI introduced in CUDA 12.0
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, driver_api_version, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      entry = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  }();
  return fn;
}

/// TMA map of a k-contiguous rows x k matrix with row stride ld floats; boxes of
/// box_rows x block_k, 128-byte swizzle, zero fill outside the matrix.
bool encode_k_major(CUtensorMap& map, const float* base, std::size_t rows, std::size_t k, std::size_t ld) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {k, rows};
  const cuuint64_t strides[1] = {ld * sizeof(float)};
  const cuuint32_t box[2] = {block_k, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// TMA reads rows in place when the base and every row start are 16-byte aligned.
bool tma_ready(const float* p, std::size_t ld) {
  constexpr std::size_t tma_alignment = 16;
  return rows_aligned(p, ld, sizeof(float), tma_alignment);
}

std::size_t round_up(std::size_t x, std::size_t to) { return ceil_div(x, to) * to; }

/// Clusters of the TF32 wgmma_kernel resident at once (and its shared-memory
/// opt-in), once per device and instantiation: the persistent grid.
template <class Epilogue>
int resident_wgmma_clusters(int device, int cluster) {
  return cluster == 1
             ? resident_clusters<&wgmma_kernel<float, 1, false, Epilogue>>(device, threads, smem_bytes, 1, what)
             : resident_clusters<&wgmma_kernel<float, max_cluster, false, Epilogue>>(device, threads, smem_bytes,
                                                                                     max_cluster, what);
}

void launch_pack(const float* src, std::size_t ld_src, bool source_k_contiguous, float* dst, std::size_t ld_dst,
                 std::size_t rows, std::size_t k, cudaStream_t stream) {
  const dim3 block(pack_tile, pack_rows_per_pass);
  const std::size_t k_tiles = ceil_div(k, pack_tile);
  const dim3 grid(static_cast<unsigned>(ceil_div(rows, pack_tile)), capped_grid_dim(k_tiles));
  const auto ll = [](std::size_t v) { return static_cast<long long>(v); };
  if (source_k_contiguous) {
    pack_k_major_kernel<true><<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  } else {
    pack_k_major_kernel<false><<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  }
  check_launch(what);
}

}  // namespace
}  // namespace wgmma_tf32

bool wgmma_tf32_available(int device) {
  if (device < 0 || device >= max_cached_devices) return false;
  return compute_capability(device) == 90;  // sm_90a code runs on compute capability 9.0 only
}

namespace wgmma_tf32 {
namespace {

/// wgmma_tf32_try_launch with the epilogue functor `fn` applied before each store.
template <class Epilogue>
bool try_launch(const gemm_args<float>& args, cudaStream_t stream, int cluster_size, const Epilogue& fn) {
  const int device = current_device(what);
  if (!wgmma_tf32_available(device)) return false;
  // The library's own architecture list decides, as for every other kernel: a
  // copy built without this device's architecture raises no_kernel_image here.
  require_kernel_image_cached(device, what);
  if (args.m > max_extent || args.n > max_extent || args.k > max_extent) return false;
  const std::size_t tiles_m = ceil_div(args.m, block_m);
  const std::size_t tiles_n = ceil_div(args.n, block_n);
  const std::size_t cluster_rows = ceil_div(tiles_m, max_cluster);
  // The persistent kernel walks cluster tiles with an int index.
  if (cluster_rows * tiles_n > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;
  if (encode_tiled() == nullptr) return false;
  // Clusters pair adjacent m-tiles: with one tile row the partner would only idle.
  const int cluster = cluster_size == 1 || tiles_m == 1 ? 1 : max_cluster;

  // A as m x k and op(B)^T as n x k, both k-contiguous with 16-byte aligned rows;
  // whatever is not gets a repacked copy (row stride: k rounded up to 4 floats).
  const bool pack_a = args.trans_a || !tma_ready(args.A, args.lda);
  const bool pack_b = !args.trans_b || !tma_ready(args.B, args.ldb);
  const std::size_t ld_packed = round_up(args.k, 4);
  const std::size_t a_bytes = pack_a ? round_up(args.m * ld_packed * sizeof(float), workspace_alignment) : 0;
  const std::size_t b_bytes = pack_b ? round_up(args.n * ld_packed * sizeof(float), workspace_alignment) : 0;
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, a_bytes + b_bytes, stream);
  void* const workspace = scratch.data();
  if (a_bytes + b_bytes > 0 && workspace == nullptr) return false;  // no pool or no memory: mma.sync instead
  float* const packed_a = static_cast<float*>(workspace);
  float* const packed_b = reinterpret_cast<float*>(static_cast<char*>(workspace) + a_bytes);
  const float* const a = pack_a ? packed_a : args.A;
  const float* const b = pack_b ? packed_b : args.B;
  const std::size_t lda = pack_a ? ld_packed : args.lda;
  const std::size_t ldb = pack_b ? ld_packed : args.ldb;

  CUtensorMap map_a{}, map_b{};
  if (!encode_k_major(map_a, a, args.m, args.k, lda) || !encode_k_major(map_b, b, args.n, args.k, ldb)) return false;

  if (pack_a) launch_pack(args.A, args.lda, !args.trans_a, packed_a, ld_packed, args.m, args.k, stream);
  if (pack_b) launch_pack(args.B, args.ldb, args.trans_b, packed_b, ld_packed, args.n, args.k, stream);

  launch_wgmma_gemm(
      args, tiles_m, tiles_n, cluster, resident_wgmma_clusters<Epilogue>(device, cluster), block_k, device, fn, stream,
      [&](const cudaLaunchConfig_t& config, const epilogue_params<float>& ep) {
        const cudaError_t status =
            cluster == 1
                ? cudaLaunchKernelEx(&config, wgmma_kernel<float, 1, false, Epilogue>, map_a, map_b, ep, fn)
                : cudaLaunchKernelEx(&config, wgmma_kernel<float, max_cluster, false, Epilogue>, map_a, map_b, ep, fn);
        cuda_check(status, what);
        check_launch(what);
      });
  return true;
}

}  // namespace
}  // namespace wgmma_tf32

bool wgmma_tf32_try_launch(const gemm_args<float>& args, cudaStream_t stream, int cluster_size) {
  return wgmma_tf32::try_launch(args, stream, cluster_size, epilogue::identity{});
}

bool wgmma_tf32_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                           cudaStream_t stream, int cluster_size) {
  return wgmma_tf32::try_launch(args, stream, cluster_size, fused);
}

}  // namespace kf::detail

#else  // !KERNELFORGE_WGMMA_TF32: the library's list has no 90; nothing to run.

namespace kf::detail {

bool wgmma_tf32_available(int) { return false; }

bool wgmma_tf32_try_launch(const gemm_args<float>&, cudaStream_t, int) { return false; }

bool wgmma_tf32_try_launch(const gemm_args<float>&, const epilogue::bias_relu_threshold<float>&, cudaStream_t, int) {
  return false;
}

}  // namespace kf::detail

#endif
