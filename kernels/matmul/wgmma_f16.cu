// SPDX-License-Identifier: Apache-2.0
// Step 12, host side -- launches the wgmma f16 / bf16 kernel (12_wgmma_f16.cuh):
// TMA descriptors (k-major A and B, or N-major B), the repack of operands wgmma
// cannot read in place (into the runtime's pooled workspace), the cluster launch. Host interface and the
// conditions it checks: wgmma_f16_launch.cuh. Built like wgmma_tf32.cu (sm_90a
// only, see tensor_core_sources.cmake), and like it never instantiates the
// mma.sync kernel: the fallback lives in the inline launch_wgmma_f16.
#define KF_WGMMA_F16_DECLARATIONS_ONLY
#include "matmul/wgmma_f16_launch.cuh"

#if defined(KERNELFORGE_WGMMA_TF32)

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "common/alignment.hpp"
#include "common/grid.hpp"
#include "matmul/12_wgmma_f16.cuh"
#include "matmul/wgmma_launch.cuh"
#define KF_WGMMA_TF32_DECLARATIONS_ONLY  // wgmma_tf32_available() only: no mma.sync TF32 kernel here
#include "matmul/wgmma_tf32_launch.cuh"
#include "runtime/launcher.hpp"

namespace kf::detail {
namespace wgmma_f16 {
namespace {

constexpr const char* what = "kf::matmul (wgmma_f16)";
/// Repacked operands start on 256-byte boundaries inside the workspace.
constexpr std::size_t workspace_alignment = 256;
/// TMA reads rows in place when the base and every row start are 16-byte aligned.
constexpr std::size_t tma_alignment = 16;

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

template <class T>
constexpr CUtensorMapDataType tma_type() {
  return std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

/// TMA map of a matrix of `outer` rows of `inner` contiguous elements (row
/// stride ld elements); boxes of box_inner x box_outer, 128-byte swizzle, zero
/// fill outside the matrix.
template <class T>
bool encode_sw128(CUtensorMap& map, const T* base, std::size_t inner, std::size_t outer, std::size_t ld,
                  cuuint32_t box_inner, cuuint32_t box_outer) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {ld * sizeof(T)};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, tma_type<T>(), 2, const_cast<T*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// A k-contiguous rows x k operand: boxes of 128 rows x 64 k.
template <class T>
bool encode_k_major(CUtensorMap& map, const T* base, std::size_t rows, std::size_t k, std::size_t ld) {
  return encode_sw128(map, base, k, rows, ld, block_k, box_rows);
}

/// op(B) as k x n, n-contiguous (the row-major B of the plain product): boxes of
/// 64 k-rows x 64 columns, the N-major tile wgmma reads with its transpose bit.
template <class T>
bool encode_n_major(CUtensorMap& map, const T* base, std::size_t n, std::size_t k, std::size_t ld) {
  return encode_sw128(map, base, n, k, ld, n_major_box_cols, block_k);
}

std::size_t round_up(std::size_t x, std::size_t to) { return ceil_div(x, to) * to; }

template <class T>
void launch_pack(const T* src, std::size_t ld_src, bool source_k_contiguous, T* dst, std::size_t ld_dst,
                 std::size_t rows, std::size_t k, cudaStream_t stream) {
  using wgmma_tf32::pack_rows_per_pass;
  using wgmma_tf32::pack_tile;
  const dim3 block(pack_tile, pack_rows_per_pass);
  const std::size_t k_tiles = ceil_div(k, pack_tile);
  const dim3 grid(static_cast<unsigned>(ceil_div(rows, pack_tile)), capped_grid_dim(k_tiles));
  const auto ll = [](std::size_t v) { return static_cast<long long>(v); };
  if (source_k_contiguous) {
    pack_k_major_kernel<true, T><<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  } else {
    pack_k_major_kernel<false, T><<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  }
  check_launch(what);
}

/// Clusters of wgmma_kernel<T, cluster, BNMajor> resident at once (and its
/// shared-memory opt-in), once per device and instantiation.
template <class T, bool BNMajor>
int resident_wgmma_clusters(int device, int cluster) {
  return cluster == 1 ? resident_clusters<&wgmma_kernel<T, 1, BNMajor>>(device, threads, smem_bytes, 1, what)
                      : resident_clusters<&wgmma_kernel<T, max_cluster, BNMajor>>(device, threads, smem_bytes,
                                                                                  max_cluster, what);
}

template <class T>
bool try_launch(const gemm_args<T>& args, cudaStream_t stream, int cluster_size) {
  const int device = current_device(what);
  if (!wgmma_tf32_available(device)) return false;  // compute capability 9.0 (sm_90a image): the same rule
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
  // A as m x k, k-contiguous; B as k x n, n-contiguous (read in place, N-major),
  // or as n x k, k-contiguous; rows 16-byte aligned. Whatever is not gets a
  // k-contiguous repacked copy (row stride: k rounded up to 8 elements).
  const bool b_aligned = rows_aligned(args.B, args.ldb, sizeof(T), tma_alignment);
  const bool b_n_major = !args.trans_b && b_aligned;
  const bool pack_a = args.trans_a || !rows_aligned(args.A, args.lda, sizeof(T), tma_alignment);
  const bool pack_b = !b_n_major && (!args.trans_b || !b_aligned);
  const std::size_t ld_packed = round_up(args.k, tma_alignment / sizeof(T));
  const std::size_t a_bytes = pack_a ? round_up(args.m * ld_packed * sizeof(T), workspace_alignment) : 0;
  const std::size_t b_bytes = pack_b ? round_up(args.n * ld_packed * sizeof(T), workspace_alignment) : 0;
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, a_bytes + b_bytes, stream);
  void* const workspace = scratch.data();
  if (a_bytes + b_bytes > 0 && workspace == nullptr) return false;  // no pool or no memory: mma.sync instead
  T* const packed_a = static_cast<T*>(workspace);
  T* const packed_b = reinterpret_cast<T*>(static_cast<char*>(workspace) + a_bytes);
  const T* const a = pack_a ? packed_a : args.A;
  const T* const b = pack_b ? packed_b : args.B;
  const std::size_t lda = pack_a ? ld_packed : args.lda;
  const std::size_t ldb = pack_b ? ld_packed : args.ldb;

  CUtensorMap map_a{}, map_b{};
  if (!encode_k_major(map_a, a, args.m, args.k, lda)) return false;
  if (!(b_n_major ? encode_n_major(map_b, b, args.n, args.k, ldb) : encode_k_major(map_b, b, args.n, args.k, ldb))) {
    return false;
  }

  if (pack_a) launch_pack(args.A, args.lda, !args.trans_a, packed_a, ld_packed, args.m, args.k, stream);
  if (pack_b) launch_pack(args.B, args.ldb, args.trans_b, packed_b, ld_packed, args.n, args.k, stream);

  const auto run = [&](const cudaLaunchConfig_t& config, const wgmma_tf32::epilogue_params<T>& ep) {
    const auto kernel = b_n_major ? (cluster == 1 ? wgmma_kernel<T, 1, true> : wgmma_kernel<T, max_cluster, true>)
                                  : (cluster == 1 ? wgmma_kernel<T, 1, false> : wgmma_kernel<T, max_cluster, false>);
    cuda_check(cudaLaunchKernelEx(&config, kernel, map_a, map_b, ep, epilogue::identity{}), what);
    check_launch(what);
  };
  const int resident = b_n_major ? resident_wgmma_clusters<T, true>(device, cluster)
                                 : resident_wgmma_clusters<T, false>(device, cluster);
  launch_wgmma_gemm(args, tiles_m, tiles_n, cluster, resident, block_k, device, epilogue::identity{}, stream, run);
  return true;
}

}  // namespace
}  // namespace wgmma_f16

bool wgmma_f16_try_launch(const gemm_args<__half>& args, cudaStream_t stream, int cluster_size) {
  return wgmma_f16::try_launch(args, stream, cluster_size);
}

bool wgmma_f16_try_launch(const gemm_args<__nv_bfloat16>& args, cudaStream_t stream, int cluster_size) {
  return wgmma_f16::try_launch(args, stream, cluster_size);
}

}  // namespace kf::detail

#else  // !KERNELFORGE_WGMMA_TF32: the library's list has no 90; nothing to run.

namespace kf::detail {

bool wgmma_f16_try_launch(const gemm_args<__half>&, cudaStream_t, int) { return false; }

bool wgmma_f16_try_launch(const gemm_args<__nv_bfloat16>&, cudaStream_t, int) { return false; }

}  // namespace kf::detail

#endif
