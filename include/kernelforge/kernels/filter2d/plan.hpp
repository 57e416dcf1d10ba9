// SPDX-License-Identifier: Apache-2.0
// filter2d's selection functions for `best`, pure and host-only: which window
// kernel runs a filter size. The data they read: tuning.hpp; the TMA kernel's
// own geometry and plan: tma_plan.hpp.
#pragma once

#include "kernelforge/conv.hpp"

namespace kf::detail {

/// The window kernel `best` runs for a float r x s filter whose rows are
/// aligned: the launch table, one line per size. rolling_window reached 0.78 of
/// the copy rate at 5x5 and 0.83 at 3x3, against register_window's 0.83 and
/// 0.97, so register_window stays for both.
/// Evidence: benchmarks/tuning/filter2d.md#best_window_kernel
constexpr filter2d_variant best_window_kernel(int r) {
  // Step 6 (tma_pipeline) is tried before this table when best_uses_tma_pipeline is on (off: measured slower).
  switch (r) {
    case 3: return filter2d_variant::register_window;  // 0.97 of the copy rate; rolling_window 0.83
    case 5: return filter2d_variant::register_window;  // 0.83; rolling_window 0.78
  }
  return filter2d_variant::register_window;
}

}  // namespace kf::detail
