// SPDX-License-Identifier: Apache-2.0
// Candidate configurations of register_window (step 4), so that
// one bench_conv run can rank them (rows filter2d/fp32/register_window_cfg/
// <name>/8192x8192_<r>x<s>, beside register_window and copy) and the GPU tests
// can check each on the awkward images. Not compiled into the library, which
// ships filter2d_window_default only, until a measurement moves it.
//
// Why these: at 5x5 the default (8 rows x one float4, all 12 input rows
// loaded before the first FMA) holds 128 registers, so 4 blocks of 4 warps
// per SM, and ncu showed neither DRAM nor issue saturated -- too few warps to
// hide the loads (benchmarks/tuning/filter2d.md#filter2d_register_window). Each candidate trades loads per
// output for registers (blocks per SM at 5x5 in the comment, from
// 65536 / (128 threads x registers); registers per configuration and border:
// benchmarks/tuning/filter2d.md#filter2d_window_default). None spills at 5x5; MinBlocks is set where it pins the count.
// Names: rows<strip height>_cols<columns per thread>[_min<blocks per SM>].
#pragma once

#include <string>

#include "kernelforge/error.hpp"
#include "window_launch.cuh"

namespace kf::detail {

/// Calls f(name, Config{}) for every candidate, the library's default first.
/// Comments: at 5x5, blocks per SM and load instructions per output
/// ((rows + 4) input rows x (vectors + 4 side columns) / (rows x cols)).
template <class F>
void for_each_filter2d_window_candidate(F&& f) {
  f("rows8_cols4", filter2d_window_default{});               // the library's: 4 blocks, 1.88 loads
  f("rows4_cols4", filter2d_window_config<4, 4, 0>{});       // shorter strip: 5 blocks, 2.5 loads
  f("rows3_cols4_min6", filter2d_window_config<3, 4, 6>{});  // 6 blocks, 2.9 loads
  f("rows2_cols4_min7", filter2d_window_config<2, 4, 7>{});  // 7 blocks, 3.75 loads
  f("rows4_cols2_min7", filter2d_window_config<4, 2, 7>{});  // one float2: 7 blocks, 5 loads
  f("rows3_cols2_min8", filter2d_window_config<3, 2, 8>{});  // one float2: 8 blocks (64 registers), 5.8 loads
  f("rows2_cols8", filter2d_window_config<2, 8, 0>{});       // two float4s: 4 blocks, 2.25 loads
  f("rows1_cols8_min6", filter2d_window_config<1, 8, 6>{});  // two float4s: 6 blocks, 3.75 loads
}

/// Enqueues the candidate `name` on `a` (a 3x3 or 5x5 filter, 16-byte
/// aligned rows: filter2d_window_kernels_apply) and checks the launch.
/// errc::invalid_argument for an unknown name or arguments it cannot run.
inline void launch_filter2d_window_candidate(const std::string& name, const filter2d_args<float>& a,
                                             cudaStream_t stream) {
  const char* what = "kf::detail::launch_filter2d_window_candidate";
  if (!filter2d_window_has_size(a.r, a.s)) {
    throw error(errc::invalid_argument, std::string(what) + ": register_window candidates are compiled for 3x3 and " +
                                            "5x5 filters only, not " + std::to_string(a.r) + "x" + std::to_string(a.s) +
                                            "; call kf::filter2d");
  }
  if (!filter2d_window_kernels_apply(a)) {
    throw error(errc::invalid_argument, std::string(what) +
                                            ": register_window candidates need in, out, in_pitch and out_pitch "
                                            "16-byte aligned (their rows are read and written as float2 / float4); "
                                            "align the rows, or call kf::filter2d");
  }
  bool found = false;
  for_each_filter2d_window_candidate([&](const char* candidate, auto config) {
    if (found || name != candidate) return;
    found = true;
    using C = decltype(config);
    if (a.r == 3) {
      launch_filter2d_register_window<3, 3, C>(what, a, stream);
    } else {
      launch_filter2d_register_window<5, 5, C>(what, a, stream);
    }
  });
  if (!found) {
    throw error(errc::invalid_argument,
                std::string(what) + ": no register_window candidate is named '" + name +
                    "'; the names are listed in include/kernelforge/kernels/filter2d/window_configs.cuh");
  }
}

}  // namespace kf::detail
