// SPDX-License-Identifier: Apache-2.0
// CPU checks of the wgmma steps' repacking pass (include/kernelforge/kernels/matmul/pack_k_major.cuh),
// for 4-byte, 2-byte and 1-byte elements, with the kernel's own index functions:
//  * the shared-memory tile is a permutation of the tile's elements, a chunk of
//    the destination (vec values of k at one row) stays whole and 16-byte
//    aligned, and a source chunk's elements are one tile row apart;
//  * each sweep (source rows of the transposing case, destination rows of both)
//    visits every chunk of its tile exactly once, and a warp instruction covers
//    whole 128-byte lines (8 consecutive chunks, starting on a multiple of 8);
//  * no bank conflicts: the scatter of a source chunk (one element of it per
//    instruction, 32 lanes) touches at most one 32-bit word per bank (lanes that
//    share a word do not conflict; 1-byte elements: 8-byte runs of k, 16
//    distinct slots a half-warp), and every quarter-warp of a 128-bit read of
//    destination chunks touches 8 distinct 16-byte bank groups;
//  * the 1-byte case's register transpose (transpose_bytes_4x4) on the host;
//  * argument validation of the test/benchmark entry point wgmma_pack_k_major.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "kernelforge/error.hpp"
#include "kernelforge/kernels/matmul/pack_k_major.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "test_support.hpp"

namespace {

namespace pk = kf::detail::pack;

template <class T>
class MatmulPackLayout : public ::testing::Test {};
using element_types = ::testing::Types<float, __half, __nv_fp8_e4m3>;
TYPED_TEST_SUITE(MatmulPackLayout, element_types);

TYPED_TEST(MatmulPackLayout, TileIsAPermutationWithWholeChunks) {
  using L = kf::detail::pack_layout<TypeParam>;
  static_assert(L::vec * sizeof(TypeParam) == 16 && L::tile_k * sizeof(TypeParam) == 256, "16-byte chunks, 256 bytes");
  std::vector<int> hits(L::tile_elements, 0);
  for (int x = 0; x < L::tile_rows; ++x) {
    for (int p = 0; p < L::tile_k; ++p) {
      const int offset = L::offset(x, p);
      ASSERT_GE(offset, 0);
      ASSERT_LT(offset, L::tile_elements);
      ++hits[offset];
      if (p % L::vec == 0) {
        EXPECT_EQ(offset % L::vec, 0) << "a destination chunk starts 16-byte aligned";
        for (int e = 0; e < L::vec; ++e) EXPECT_EQ(L::offset(x, p + e), offset + e) << "x " << x << " p " << p;
      }
      if (x % L::vec == 0) {
        for (int e = 0; e < L::vec; ++e) {
          EXPECT_EQ(L::offset(x + e, p), offset + e * L::tile_k) << "the scatter's step, x " << x << " p " << p;
        }
      }
    }
  }
  for (int i = 0; i < L::tile_elements; ++i) ASSERT_EQ(hits[i], 1) << "offset " << i;
}

/// Every chunk of a rows x chunks tile once; per warp instruction, 4 rows x one 128-byte line each.
/// row_of(t, i), column_of(t): access i of thread t (the shared sweep where not given).
template <class RowOf, class ColumnOf>
void expect_sweep_covers(int rows, int chunks, int accesses, RowOf row_of, ColumnOf column_of) {
  SCOPED_TRACE("sweep of " + std::to_string(rows) + " rows x " + std::to_string(chunks) + " chunks");
  ASSERT_EQ(rows * chunks, accesses * pk::threads);
  std::vector<int> hits(rows * chunks, 0);
  for (int warp = 0; warp < pk::warps; ++warp) {
    for (int i = 0; i < accesses; ++i) {
      std::map<int, std::set<int>> line;  // row -> chunks of this instruction
      for (int lane = 0; lane < pk::warp_size; ++lane) {
        const int t = warp * pk::warp_size + lane;
        const int row = row_of(t, i), col = column_of(t);
        ASSERT_LT(row, rows);
        ASSERT_LT(col, chunks);
        ++hits[row * chunks + col];
        line[row].insert(col);
      }
      EXPECT_EQ(line.size(), static_cast<std::size_t>(pk::rows_per_instruction));
      for (const auto& [row, cols] : line) {
        EXPECT_EQ(cols.size(), static_cast<std::size_t>(pk::chunks_per_line)) << "row " << row;
        EXPECT_EQ(*cols.begin() % pk::chunks_per_line, 0) << "row " << row;
        EXPECT_EQ(*cols.rbegin() - *cols.begin(), pk::chunks_per_line - 1) << "row " << row;
      }
    }
  }
  for (int c = 0; c < rows * chunks; ++c) ASSERT_EQ(hits[c], 1) << "chunk " << c;
}

void expect_sweep_covers(int rows, int chunks, int accesses) {
  expect_sweep_covers(
      rows, chunks, accesses, [&](int t, int i) { return pk::first_row(t, chunks) + i * pk::row_step(chunks); },
      [&](int t) { return pk::column(t, chunks); });
}

TYPED_TEST(MatmulPackLayout, SweepsCoverEveryChunkOnceInWholeLines) {
  using L = kf::detail::pack_layout<TypeParam>;
  expect_sweep_covers(L::tile_rows, L::dst_chunks, L::dst_accesses);  // destination rows (both cases)
  expect_sweep_covers(                                                // source rows (transposing)
      L::tile_k, L::src_chunks, L::src_accesses, [](int t, int i) { return L::src_row(t, i); },
      [](int t) { return L::src_column(t); });
  if constexpr (sizeof(TypeParam) == 1) {  // a thread's source rows: 8 consecutive k, 8-aligned (8-byte runs)
    for (int t = 0; t < pk::threads; ++t) {
      EXPECT_EQ(L::src_row(t, 0) % L::src_accesses, 0) << "thread " << t;
      for (int i = 1; i < L::src_accesses; ++i) EXPECT_EQ(L::src_row(t, i), L::src_row(t, 0) + i) << "thread " << t;
    }
  }
}

// The 1-byte transposing case's register transpose: out[b] byte i = w[i] byte b, for distinct bytes.
TEST(MatmulPackLayout, ByteTransposeIsATranspose) {
  unsigned w[4], out[4];
  for (int i = 0; i < 4; ++i) w[i] = 0x03020100u + 0x10101010u * static_cast<unsigned>(i);  // byte b of w[i]: 16 i + b
  kf::detail::transpose_bytes_4x4(w, out);
  for (int b = 0; b < 4; ++b) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ((out[b] >> (8 * i)) & 0xFFu, 16u * i + b) << "out[" << b << "] byte " << i;
  }
}

TYPED_TEST(MatmulPackLayout, SharedMemoryAccessesAreBankConflictFree) {
  using T = TypeParam;
  using L = kf::detail::pack_layout<T>;
  constexpr int banks = 32, word = 4, group = 16;
  for (int warp = 0; warp < pk::warps; ++warp) {
    if constexpr (sizeof(T) == 1) {
      // The scatter of 1-byte elements: instruction (j, b) stores, per lane, the 8 bytes of k src_row(t, 0) ..
      // + 7 at x = 16 src_column(t) + 4 j + b. 8-byte stores run by half-warps: each half's 16 lanes must
      // take 16 distinct 8-byte slots of the 128 bytes of banks (2 wavefronts a warp, the fewest).
      for (int j = 0; j < 4; ++j) {
        for (int b = 0; b < 4; ++b) {
          for (int half = 0; half < 2; ++half) {
            std::set<int> slots;
            for (int lane = 16 * half; lane < 16 * half + 16; ++lane) {
              const int t = warp * pk::warp_size + lane;
              const int offset = L::offset(L::src_column(t) * L::vec + 4 * j + b, L::src_row(t, 0));
              ASSERT_EQ(offset % 8, 0) << "an 8-byte store is 8-byte aligned";
              slots.insert(offset / 8 % (banks * word / 8));
            }
            EXPECT_EQ(slots.size(), 16u) << "scatter conflict: warp " << warp << " word " << j << " byte " << b
                                         << " half " << half;
          }
        }
      }
    } else {
      // The scatter (2- and 4-byte elements): instruction (i, e) stores element e of each lane's source chunk.
      for (int i = 0; i < L::src_accesses; ++i) {
        for (int e = 0; e < L::vec; ++e) {
          std::map<int, std::set<int>> words_of_bank;
          for (int lane = 0; lane < pk::warp_size; ++lane) {
            const int t = warp * pk::warp_size + lane;
            const int p = L::src_row(t, i);
            const int x = L::src_column(t) * L::vec + e;
            const int w = L::offset(x, p) * static_cast<int>(sizeof(T)) / word;
            words_of_bank[w % banks].insert(w);
          }
          for (const auto& [bank, words] : words_of_bank) {
            EXPECT_EQ(words.size(), 1u) << "scatter conflict: warp " << warp << " access " << i << " element " << e
                                        << " bank " << bank;
          }
        }
      }
    }
    // The 128-bit reads of destination chunks, by quarter-warp.
    for (int i = 0; i < L::dst_accesses; ++i) {
      for (int quarter = 0; quarter < 4; ++quarter) {
        std::set<int> groups;
        for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) {
          const int t = warp * pk::warp_size + lane;
          const int x = pk::first_row(t, L::dst_chunks) + i * pk::row_step(L::dst_chunks);
          const int p = pk::column(t, L::dst_chunks) * L::vec;
          groups.insert(L::offset(x, p) * static_cast<int>(sizeof(T)) / group % (banks * word / group));
        }
        EXPECT_EQ(groups.size(), 8u) << "read conflict: warp " << warp << " access " << i << " quarter " << quarter;
      }
    }
  }
}

// ---- argument validation of wgmma_pack_k_major (no GPU needed) ---------------

TEST(MatmulPackValidation, BadArgumentsNameTheArgument) {
  using kf::test::fake;
  const float* none = nullptr;
  // Nothing to do is true where the sm_90a kernels are built, false (without validation) where not.
  if (!kf::detail::wgmma_pack_k_major(none, 0, true, nullptr, 0, 0, 0, nullptr)) {
    GTEST_SKIP() << "the library was built without 90 in CMAKE_CUDA_ARCHITECTURES (no wgmma kernels)";
  }
  const auto call = [](const float* src, std::size_t ld_src, bool copy, float* dst, std::size_t ld_dst,
                       std::size_t rows, std::size_t k) {
    return [=] { kf::detail::wgmma_pack_k_major(src, ld_src, copy, dst, ld_dst, rows, k, nullptr); };
  };
  const kf::errc bad = kf::errc::invalid_argument;
  kf::test::expect_error(bad, "src", call(nullptr, 10, true, fake(256), 12, 4, 10));
  kf::test::expect_error(bad, "dst", call(fake(256), 10, true, nullptr, 12, 4, 10));
  kf::test::expect_error(bad, "src", call(fake(258), 10, true, fake(256), 12, 4, 10));     // not float-aligned
  kf::test::expect_error(bad, "ld_src", call(fake(256), 9, true, fake(256), 12, 4, 10));   // k = 10
  kf::test::expect_error(bad, "ld_src", call(fake(256), 3, false, fake(256), 12, 4, 10));  // rows = 4
  kf::test::expect_error(bad, "ld_dst", call(fake(256), 10, true, fake(256), 10, 4, 10));  // not 16 bytes
  kf::test::expect_error(bad, "ld_dst", call(fake(256), 10, true, fake(256), 8, 4, 10));   // < k
  kf::test::expect_error(bad, "dst must be 16-byte aligned", call(fake(256), 10, true, fake(260), 12, 4, 10));
  kf::test::expect_error(bad, "overlap", call(fake(256), 10, true, fake(256 + 4 * 32), 12, 4, 10));
}

}  // namespace
