// Host-side planning for conv2d, as pure functions the CPU tests cover: which
// implicit-GEMM block tile to use. No CUDA calls here.
#pragma once

#include <cstddef>

namespace kf::detail {

/// Block tiles of the implicit-GEMM kernels (rows of M = N*P*Q x columns of K).
enum class conv2d_gemm_tile { m128_n128, m128_n64, m64_n64 };

/// Resident blocks per SM the choice aims for: with two, one block's loads
/// overlap the other's math.
constexpr std::size_t conv2d_gemm_blocks_per_sm_goal = 2;

inline std::size_t conv2d_gemm_blocks(std::size_t m, std::size_t k, std::size_t bm, std::size_t bn) {
  return ((m + bm - 1) / bm) * ((k + bn - 1) / bn);
}

/// The largest tile that still gives every SM about two blocks: large tiles
/// reuse each loaded value more, but a grid smaller than the GPU leaves SMs
/// idle. 128 x 128 only when K > 64 (else half of each tile would be padding).
inline conv2d_gemm_tile choose_conv2d_gemm_tile(std::size_t m, std::size_t k, int sm_count) {
  const std::size_t goal = conv2d_gemm_blocks_per_sm_goal * static_cast<std::size_t>(sm_count > 0 ? sm_count : 1);
  if (k > 64 && conv2d_gemm_blocks(m, k, 128, 128) >= goal) return conv2d_gemm_tile::m128_n128;
  if (conv2d_gemm_blocks(m, k, 128, 64) >= goal) return conv2d_gemm_tile::m128_n64;
  return conv2d_gemm_tile::m64_n64;
}

}  // namespace kf::detail
