// SPDX-License-Identifier: Apache-2.0
// The driver's TMA descriptor encoder (cuTensorMapEncodeTiled), reached through
// the runtime's driver entry point so the library needs no libcuda link. Host
// code; used by the Hopper launchers (matmul's wgmma/launch.cuh, conv2d's
// wgmma_sm90a.cu, filter2d's tma_sm90a.cu), which build CUtensorMaps for
// their TMA copies, all zero-filled outside the tensor (encode_tiled_map): the
// wgmma operands 128-byte swizzled (encode_sw128_tiled), filter2d's image not.
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

namespace kf::detail {

/// cuTensorMapEncodeTiled through the runtime's driver entry point (no libcuda
/// link), looked up once; nullptr where the driver lacks it.
inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
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

/// The TMA element type of T (float, __half, __nv_bfloat16; the FP8 types as
/// bytes: TMA only moves them, and fills what lies outside with zero bytes,
/// which are +0 in e4m3 and e5m2).
template <class T>
constexpr CUtensorMapDataType tma_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> ||
                    std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>,
                "TMA maps here: float, __half, __nv_bfloat16, __nv_fp8_e4m3, __nv_fp8_e5m2");
  if constexpr (std::is_same_v<T, float>) return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  if constexpr (std::is_same_v<T, __half>) return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  if constexpr (sizeof(T) == 1) return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

/// A TMA map of a `rank`-dimensional tensor of T at `base` (dims[0] contiguous;
/// byte_strides[i] is the stride of dimension i + 1), read in boxes of `box`
/// elements with `swizzle`, and zeros for what lies outside the tensor. False
/// where the driver lacks the encoder or rejects the map.
/// element_strides (nullptr: all 1) steps through each dimension: box[i] /
/// element_strides[i] elements are loaded along dimension i (dimension 0 has
/// no step: TMA ignores its entry).
template <class T>
bool encode_tiled_map(CUtensorMap& map, const T* base, cuuint32_t rank, const cuuint64_t* dims,
                      const cuuint64_t* byte_strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
                      const cuuint32_t* element_strides = nullptr) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) return false;
  const cuuint32_t unit_strides[5] = {1, 1, 1, 1, 1};
  if (element_strides == nullptr) element_strides = unit_strides;
  return rank <= 5 && encode(&map, tma_type<T>(), rank, const_cast<T*>(base), dims, byte_strides, box, element_strides,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// encode_tiled_map with the 128-byte swizzle wgmma's descriptors read.
template <class T>
bool encode_sw128_tiled(CUtensorMap& map, const T* base, cuuint32_t rank, const cuuint64_t* dims,
                        const cuuint64_t* byte_strides, const cuuint32_t* box,
                        const cuuint32_t* element_strides = nullptr) {
  return encode_tiled_map(map, base, rank, dims, byte_strides, box, CU_TENSOR_MAP_SWIZZLE_128B, element_strides);
}

/// encode_sw128_tiled for a matrix of `outer` rows of `inner` contiguous
/// elements (row stride ld elements), boxes of box_inner x box_outer.
template <class T>
bool encode_sw128(CUtensorMap& map, const T* base, std::size_t inner, std::size_t outer, std::size_t ld,
                  cuuint32_t box_inner, cuuint32_t box_outer) {
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {ld * sizeof(T)};
  const cuuint32_t box[2] = {box_inner, box_outer};
  return encode_sw128_tiled(map, base, 2, dims, strides, box);
}

}  // namespace kf::detail
