// SPDX-License-Identifier: Apache-2.0
// CPU checks of the tensor-core matmul kernels' shared-memory layouts and
// fragment mappings (test_matmul_tensor_core, beside the GPU cases of
// tensor_core_tf32_test.cu): the mma.sync kernel's padding (bank-conflict free,
// stages that fit), the swapped TF32 product's A fragments, step 17's X
// fragments, and the staged epilogue's stores into its swizzled C buffers.
// And on the GPU, step 17's split of its X fragments into TF32 parts over every
// float (Tf32Parts, at the end: one kernel here rather than a file of its own,
// whose 12-architecture compile would cost the test workflow ~10 s).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/device_buffer.hpp"
#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/tf32_parts.cuh"                // step 17's split
#include "kernelforge/kernels/matmul/wgmma/split_in_registers.cuh"  // step 17's fragments
#include "kernelforge/kernels/matmul/wgmma/swap_ab.cuh"             // the transpose and staged-store mappings
#include "test_support.hpp"

namespace {

// ---- CPU checks of the mma.sync kernel's shared-memory layout ---------------

/// A warp's fragment load reads (x, p) for x = base + lane / 4, p = kk + lane % 4:
/// the padding must put the 32 lanes on 32 distinct banks, in every layout.
template <class Tile>
void expect_conflict_free(const char* name) {
  constexpr int banks = 32;
  for (int base : {0, 8, 16, 40}) {
    for (int kk : {0, 4, 8, 28}) {
      std::vector<int> used(banks, 0);
      for (int lane = 0; lane < 32; ++lane) ++used[Tile::offset(base + lane / 4, kk + lane % 4) % banks];
      EXPECT_EQ(*std::max_element(used.begin(), used.end()), 1) << name << " x0 " << base << " k0 " << kk;
    }
  }
}

TEST(MatmulTensorCoreTf32Layout, FragmentLoadsAreBankConflictFree) {
  namespace t = kf::detail::tf32_mma;
  expect_conflict_free<t::a_tile<false>>("A k-contiguous");
  expect_conflict_free<t::a_tile<true>>("A m-contiguous");
  expect_conflict_free<t::b_tile<false>>("B n-contiguous");
  expect_conflict_free<t::b_tile<true>>("B k-contiguous");
}

TEST(MatmulTensorCoreTf32Layout, ThreeStagesFitTwoBlocksOnHopperAndOneOnAmpere) {
  namespace t = kf::detail::tf32_mma;
  constexpr int hopper_smem_per_sm = 228 * 1024, reserved_per_block = 1024;
  constexpr int ampere_optin = 163 * 1024, ada_optin = 99 * 1024;
  EXPECT_LE(t::default_warps::min_blocks_per_sm * (t::max_stages * t::max_stage_bytes + reserved_per_block),
            hopper_smem_per_sm);
  EXPECT_LE(t::max_stages * t::max_stage_bytes, ampere_optin);
  EXPECT_LE(t::min_stages * t::max_stage_bytes, ada_optin);
}

// ---- CPU check of the swapped product's A fragments (TF32, n-contiguous B) ----

/// Each consumer warpgroup's threads load A's fragments (14_wgmma.cuh:
/// swap_fragment_offset) from the stage's four N-major boxes, as TMA wrote
/// them: element (k, row) of box row / 32 at k * 128 + (((row % 32) / 4) ^ (k %
/// 8)) * 16 + (row % 4) * 4. Checked: every fragment register reads the element
/// wgmma's register layout asks for -- row swap_row(warp, lane / 4 (+ 8 for a1,
/// a3)) of the warpgroup's 64 and k lane % 4 (+ 4 for a2, a3) -- the 16 rows of
/// each warp and the 64 of each warpgroup are distinct (the epilogue's
/// swap_row is a permutation of the tile's rows), and each warp's load of a
/// register is conflict-free (32 distinct banks).
TEST(MatmulWgmmaTf32, SwapFragmentMapping) {
  namespace w = kf::detail::wgmma;
  const auto n_major = [](int k, int row) {
    return (row / w::swap_box_rows) * w::swap_box_bytes + k * w::swizzle_row_bytes +
           (((row % w::swap_box_rows) / 4) ^ (k % 8)) * 16 + (row % 4) * 4;
  };
  for (int consumer = 0; consumer < w::consumer_warpgroups; ++consumer) {
    std::vector<int> rows;
    for (int warp = 0; warp < kf::detail::warps_per_warpgroup; ++warp) {
      for (int rr = 0; rr < 16; ++rr) rows.push_back(w::swap_row(warp, rr));
      for (int r = 0; r < 4; ++r) {
        std::vector<int> banks;
        for (int lane = 0; lane < 32; ++lane) {
          const int row = 2 * w::swap_box_rows * consumer + w::swap_row(warp, lane / 4 + 8 * (r % 2));
          const int k = lane % 4 + 4 * (r / 2);
          const int offset = w::swap_fragment_offset(consumer, warp, lane, r);
          EXPECT_EQ(offset, n_major(k, row))
              << "consumer " << consumer << " warp " << warp << " lane " << lane << " a" << r;
          banks.push_back((offset / 4) % 32);
        }
        std::sort(banks.begin(), banks.end());
        EXPECT_EQ(std::unique(banks.begin(), banks.end()) - banks.begin(), 32)
            << "consumer " << consumer << " warp " << warp << " a" << r << ": bank conflict";
      }
    }
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(std::unique(rows.begin(), rows.end()) - rows.begin(), 64) << "warpgroup rows not a permutation";
    EXPECT_EQ(rows.front(), 0);
    EXPECT_EQ(rows.back(), 63);
  }
}

/// The same map over boxes of any height (swap_fragment_offset_in): the TF32
/// filter gradient (conv2d/backward/04_wgrad_wgmma_tf32.cuh) loads its x
/// fragments from boxes of 32 pixel rows, or 48 (filter-column tiles), and
/// reaches k-step kk and filter tap r by adding 8 (kk + r) rows. Checked: every
/// register, at every such shift, reads the element (k + shift, row) of the
/// box the layout names, conflict-free.
TEST(MatmulWgmmaTf32, SwapFragmentMappingTallBoxes) {
  namespace w = kf::detail::wgmma;
  for (const int box_rows : {32, 48}) {
    const int box_bytes = box_rows * w::swizzle_row_bytes;
    const auto n_major = [&](int k, int row) {
      return (row / w::swap_box_rows) * box_bytes + k * w::swizzle_row_bytes +
             (((row % w::swap_box_rows) / 4) ^ (k % 8)) * 16 + (row % 4) * 4;
    };
    for (int warp = 0; warp < kf::detail::warps_per_warpgroup; ++warp) {
      for (int r = 0; r < 4; ++r) {
        for (int shift = 0; shift + 8 <= box_rows; shift += 8) {
          std::vector<int> banks;
          for (int lane = 0; lane < 32; ++lane) {
            const int row = w::swap_row(warp, lane / 4 + 8 * (r % 2));
            const int k = lane % 4 + 4 * (r / 2);
            const int offset = w::swap_fragment_offset_in(warp, lane, r, box_bytes) + shift * w::swizzle_row_bytes;
            EXPECT_EQ(offset, n_major(k + shift, row))
                << box_rows << " rows, warp " << warp << " lane " << lane << " a" << r << " shift " << shift;
            banks.push_back((offset / 4) % 32);
          }
          std::sort(banks.begin(), banks.end());
          EXPECT_EQ(std::unique(banks.begin(), banks.end()) - banks.begin(), 32)
              << box_rows << " rows, warp " << warp << " a" << r << ": bank conflict";
        }
      }
    }
  }
}

// ---- CPU check of the skinny fp32-emulation step's X fragments ---------------

/// Step 17 (17_wgmma_fp32_emulated_skinny.cuh) loads its large operand X's
/// fragments with the swapped product's rows (swap_row) from either layout of
/// X in a stage (wgmma/split_in_registers.cuh): M-major (swap_fragment_offset,
/// checked above) or k-major (k_major_fragment_offset: element (row, k) of the
/// stage's 128 rows at row * 128 + ((k / 4) ^ (row % 8)) * 16 + (k % 4) * 4),
/// and reaches k-step kk by XOR-ing the k-step-0 offset with kk times
/// m_major_k_step_xor or k_major_k_step_xor. Checked: every register of every
/// k-step reads the element wgmma's register layout asks for; M-major loads
/// are conflict-free, k-major ones take at most two passes (rows r and r + 16
/// of a warp's fragment share their 16-byte slots), as the header says.
TEST(MatmulWgmmaTf32, SkinnyFragmentMapping) {
  namespace w = kf::detail::wgmma;
  const auto k_major = [](int k, int row) { return row * 128 + (((k / 4) ^ (row % 8)) * 16) + (k % 4) * 4; };
  const auto m_major = [](int k, int row) {
    return (row / w::swap_box_rows) * w::swap_box_bytes + k * w::swizzle_row_bytes +
           (((row % w::swap_box_rows) / 4) ^ (k % 8)) * 16 + (row % 4) * 4;
  };
  for (const bool is_k_major : {false, true}) {
    SCOPED_TRACE(is_k_major ? "k-major X" : "M-major X");
    int worst_passes = 0;
    for (int consumer = 0; consumer < w::consumer_warpgroups; ++consumer) {
      for (int warp = 0; warp < kf::detail::warps_per_warpgroup; ++warp) {
        for (int kk = 0; kk < w::split_k_steps; ++kk) {
          for (int r = 0; r < 4; ++r) {
            std::vector<int> words;  // the 4-byte words the warp's lanes read
            for (int lane = 0; lane < 32; ++lane) {
              const int row = w::wgmma_m * consumer + w::swap_row(warp, lane / 4 + 8 * (r % 2));
              const int k = 8 * kk + lane % 4 + 4 * (r / 2);
              const int offset0 = is_k_major ? w::k_major_fragment_offset(consumer, warp, lane, r)
                                             : w::swap_fragment_offset(consumer, warp, lane, r);
              const int offset = offset0 ^ (kk * (is_k_major ? w::k_major_k_step_xor : w::m_major_k_step_xor));
              EXPECT_EQ(offset, is_k_major ? k_major(k, row) : m_major(k, row))
                  << "consumer " << consumer << " warp " << warp << " lane " << lane << " a" << r << " k-step " << kk;
              words.push_back(offset / 4);
            }
            int passes = 0;  // the most distinct words on one bank
            for (int bank = 0; bank < 32; ++bank) {
              std::vector<int> on_bank;
              for (const int word : words) {
                if (word % 32 == bank) on_bank.push_back(word);
              }
              std::sort(on_bank.begin(), on_bank.end());
              passes =
                  std::max(passes, static_cast<int>(std::unique(on_bank.begin(), on_bank.end()) - on_bank.begin()));
            }
            worst_passes = std::max(worst_passes, passes);
          }
        }
      }
    }
    EXPECT_EQ(worst_passes, is_k_major ? 2 : 1);
  }
}

// ---- CPU check of the staged epilogue's shared-memory stores ----------------

/// store_tile_staged (14_wgmma.cuh) writes one 64-row x 128-byte chunk of a
/// consumer warpgroup's tile into a C buffer that TMA stores with the 128-byte
/// swizzle: element (r, byte) at r * 128 + ((byte / 16) ^ (r % 8)) * 16 + byte % 16.
/// Simulated with the kernel's own offsets (staged_lane_offset, XORs of
/// staged_group_xor, staged_half_rows_bytes), every accumulator of a chunk must
/// land there, every byte of the buffer be written once, and the stores be free
/// of bank conflicts:
///  * 16-bit, stmatrix.x4 (column groups 2p, 2p + 1 of the chunk): lane t gives
///    the address of row t % 8 of matrix i = t / 8; register i of lane s is row
///    s / 4, elements 2 (s % 4), + 1 of matrix i, which holds the accumulators
///    4c + 2h, 4c + 2h + 1 with c = 2p + i / 2, h = i % 2: tile row 16 warp +
///    s / 4 + 8h, columns 8c + 2 (s % 4), + 1. A matrix's 8 rows: 8 distinct
///    16-byte bank groups.
///  * float, 8-byte stores of accumulators 4g + 2h, + 1 (group g of the chunk):
///    a half-warp's 16 stores cover rows r .. r + 3, whose slots {2g, 2g + 1} ^ r
///    pair up (rows 0 and 1 both use slots 0 and 1): at most 2 lanes on an 8-byte
///    bank pair, two passes instead of one (as before stmatrix; choosing the
///    group per row would need a select per register).
TEST(MatmulWgmmaTf32, StagedEpilogueMapping) {
  namespace w = kf::detail::wgmma;
  constexpr int rows = w::wgmma_m, row_bytes = w::swizzle_row_bytes, warps = kf::detail::warps_per_warpgroup;
  static_assert(rows * row_bytes == w::c_buffer_bytes, "a C buffer is one 64-row chunk");
  const auto swizzled = [](int r, int byte) { return r * row_bytes + (((byte / 16) ^ (r % 8)) * 16) + byte % 16; };
  for (int r = 0; r < rows; ++r)
    for (int byte = 0; byte < row_bytes; ++byte) ASSERT_EQ(w::swizzle_offset(r, byte), swizzled(r, byte));
  for (int bytes : {2, 4}) {
    SCOPED_TRACE(bytes == 2 ? "16-bit elements (stmatrix)" : "float");
    std::vector<int> written(w::c_buffer_bytes, 0);
    std::size_t misplaced = 0;
    // One element (tile row, column in the chunk) written at `address`.
    const auto element = [&](int address, int row, int col) {
      ASSERT_GE(address, 0);
      ASSERT_LE(address + bytes, w::c_buffer_bytes);
      ASSERT_EQ(address % bytes, 0);
      misplaced += address != swizzled(row, col * bytes);
      for (int b = 0; b < bytes; ++b) ++written[address + b];
    };
    for (int warp = 0; warp < warps; ++warp) {
      if (bytes == 2) {
        for (int p = 0; p < 4; ++p) {
          int address[32];
          for (int t = 0; t < 32; ++t) {
            address[t] = w::staged_lane_offset(warp, t, 2) ^ (p * w::staged_group_xor);
            ASSERT_EQ(address[t] % 16, 0) << "stmatrix rows are 16-byte aligned";
          }
          for (int i = 0; i < 4; ++i) {
            std::vector<int> groups;
            for (int q = 0; q < 8; ++q) groups.push_back((address[8 * i + q] / 16) % 8);
            std::sort(groups.begin(), groups.end());
            EXPECT_EQ(std::unique(groups.begin(), groups.end()) - groups.begin(), 8)
                << "warp " << warp << " p " << p << " matrix " << i << ": bank conflict";
            const int c = 2 * p + i / 2, h = i % 2;
            for (int s = 0; s < 32; ++s)
              for (int e = 0; e < 2; ++e)
                element(address[8 * i + s / 4] + 2 * (2 * (s % 4) + e), 16 * warp + s / 4 + 8 * h,
                        8 * c + 2 * (s % 4) + e);
          }
        }
      } else {
        for (int g = 0; g < 4; ++g) {
          for (int h = 0; h < 2; ++h) {
            int address[32];
            for (int s = 0; s < 32; ++s) {
              address[s] =
                  (w::staged_lane_offset(warp, s, 4) ^ (g * w::staged_group_xor)) + h * w::staged_half_rows_bytes;
              for (int e = 0; e < 2; ++e)
                element(address[s] + 4 * e, 16 * warp + s / 4 + 8 * h, 8 * g + 2 * (s % 4) + e);
            }
            for (int half = 0; half < 2; ++half) {
              std::vector<int> per_pair(16, 0);
              for (int s = 16 * half; s < 16 * half + 16; ++s) ++per_pair[(address[s] / 8) % 16];
              EXPECT_LE(*std::max_element(per_pair.begin(), per_pair.end()), 2)
                  << "warp " << warp << " g " << g << " h " << h << " half-warp " << half << ": a 3-way conflict";
            }
          }
        }
      }
    }
    EXPECT_EQ(misplaced, 0u) << "elements not where the 128-byte swizzle puts them";
    EXPECT_EQ(std::count(written.begin(), written.end(), 1), w::c_buffer_bytes) << "every byte written exactly once";
  }
}

// ---- fp32 -> TF32 parts (tf32_parts.cuh) over every one of the 2^32 float
// bit patterns, on the GPU ----------------------------------------------------
// split_tf32_unguarded, which step 17 runs on a k-block's 16 values before it
// falls back to split_tf32 (wgmma/split_in_registers.cuh), must give
// split_tf32's hi and lo bit for bit wherever its remainder is finite, and its
// remainder must be non-finite for exactly the inputs where the two may
// differ: inf and NaN (2 x 2^23 patterns) and the finite values within half a
// TF32 step of FLT_MAX (0x7F7FF000-0x7F7FFFFF and their negatives: 2 x 4096),
// whose hi would round to inf. Both counts are asserted, so a split that gave
// up on more values (every k-block on the slow path) fails as well as a wrong one.
struct split_counts {
  unsigned long long mismatched;  // remainder finite, parts differ from split_tf32's
  unsigned long long not_finite;  // remainder inf or NaN (the caller's slow path)
  unsigned long long unexpected;  // remainder not finite for an x that split_tf32_unguarded must handle
};

__global__ void compare_splits(split_counts* counts) {
  unsigned long long mismatched = 0, not_finite = 0, unexpected = 0;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const auto bits = static_cast<std::uint32_t>(i);
    const float x = __uint_as_float(bits);
    float remainder;
    const float2 fast = kf::detail::split_tf32_unguarded(x, remainder);
    const float2 guarded = kf::detail::split_tf32(x);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    const bool may_differ = magnitude >= 0x7F7FF000u;  // rounds past FLT_MAX, or inf / NaN
    if (isfinite(remainder)) {
      mismatched += __float_as_uint(fast.x) != __float_as_uint(guarded.x) ||
                    __float_as_uint(fast.y) != __float_as_uint(guarded.y);
    } else {
      ++not_finite;
      unexpected += !may_differ;
    }
  }
  atomicAdd(&counts->mismatched, mismatched);
  atomicAdd(&counts->not_finite, not_finite);
  atomicAdd(&counts->unexpected, unexpected);
}

TEST(Tf32Parts, UnguardedSplitIsTheGuardedOneWhereverItsRemainderIsFinite) {
  KF_SKIP_WITHOUT_GPU();
  int device = 0, major = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  if (major < 8) GTEST_SKIP() << "cvt.rna.tf32.f32 (split_tf32's rounding) needs compute capability 8.0";
  kf::device_buffer<split_counts> counts = kf::to_device(std::vector<split_counts>(1));  // zeroed
  compare_splits<<<1024, 256>>>(counts.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const split_counts got = kf::to_host(counts)[0];
  EXPECT_EQ(got.mismatched, 0u);
  EXPECT_EQ(got.unexpected, 0u);
  // inf and NaN: exponent all ones, either sign (2 x 2^23); finite values that round to inf: 2 x 4096.
  EXPECT_EQ(got.not_finite, 2ull * (1ull << 23) + 2ull * 4096u);
}

}  // namespace
