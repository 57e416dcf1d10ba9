// SPDX-License-Identifier: Apache-2.0
// register_window's launch (step 4): when it applies, the grid of a
// configuration, and the dispatch on the border mode. One home for the library
// launcher (filter2d.cu, which runs filter2d_window_default) and for the
// candidate configurations (tuning.hpp) that bench_conv and the GPU tests run
// by name (window_candidates.cuh, kept apart so that the library does not
// compile the candidates: 42 kernels an architecture nobody calls there). Host
// code for .cu files (it holds a <<<>>> launch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "../common/grid.hpp"
#include "../common/vector_access.cuh"
#include "../runtime/cuda_check.hpp"
#include "04_register_window.cuh"
#include "args.cuh"
#include "kernelforge/error.hpp"
#include "tuning.hpp"

namespace kf::detail {

/// Calls f(std::integral_constant<border, mode>) for the run-time mode.
template <class F>
void with_border(border mode, F&& f) {
  switch (mode) {
    case border::zero: return f(std::integral_constant<border, border::zero>{});
    case border::clamp: return f(std::integral_constant<border, border::clamp>{});
    case border::reflect: return f(std::integral_constant<border, border::reflect>{});
  }
}

/// Can the window kernels (register_window, rolling_window) run this call? An
/// instantiated filter size, and every row start of in and out 16-byte aligned
/// (the float2 / float4 loads and stores of every configuration).
inline bool filter2d_window_kernels_apply(const filter2d_args<float>& a) {
  constexpr int V = vector16<float>::size;
  return filter2d_window_has_size(a.r, a.s) && misalignment(a.in) == 0 && misalignment(a.out) == 0 &&
         a.in_pitch % V == 0 && a.out_pitch % V == 0;
}

/// The grid of a strip kernel (register_window, rolling_window): x = groups of
/// `cols` columns per `threads`-thread block, y = strips of `rows` output rows
/// (capped; the kernel strides over the rest), z = channels (likewise).
struct filter2d_window_grid {
  dim3 grid;
  int strips = 0;
};

inline filter2d_window_grid filter2d_strip_grid(const filter2d_args<float>& a, std::size_t cols, std::size_t threads,
                                                std::size_t rows) {
  const std::size_t blocks_x = ceil_div(ceil_div(static_cast<std::size_t>(a.width), cols), threads);
  const std::size_t strips = ceil_div(static_cast<std::size_t>(a.height), rows);
  filter2d_window_grid g;
  g.grid = dim3(static_cast<std::uint32_t>(blocks_x), capped_grid_dim(strips), capped_grid_dim(a.channels));
  g.strips = static_cast<int>(strips);
  return g;
}

/// Enqueues register_window with Config for an R x S filter on `a`, for which
/// filter2d_window_kernels_apply holds (the caller checks), and checks the launch.
template <int R, int S, class Config = filter2d_window_default>
void launch_filter2d_register_window(const char* what, const filter2d_args<float>& a, cudaStream_t stream) {
  const filter2d_window_grid g = filter2d_strip_grid(a, Config::cols, filter2d_window_threads, Config::rows);
  with_border(a.mode, [&](auto mode) {
    filter2d_register_window<R, S, decltype(mode)::value, Config>
        <<<g.grid, filter2d_window_threads, 0, stream>>>(a, g.strips);
  });
  check_launch(what);
}

}  // namespace kf::detail
