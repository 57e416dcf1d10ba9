// SPDX-License-Identifier: Apache-2.0
// The conv2d launcher: validate -> plan -> dispatch by variant, math mode and
// device architecture, and the explicit instantiation shipped in the fatbin (float).
#include <cstdint>
#include <string>

#include "common/grid.hpp"
#include "runtime/launcher.hpp"
#include "common/vector_access.cuh"
#include "conv2d/args.cuh"
#include "conv2d/03_implicit_gemm.cuh"
#include "conv2d/04_implicit_gemm_tf32.cuh"
#include "conv2d/05_implicit_gemm_pipelined.cuh"
#include "conv2d/06_winograd.cuh"
#include "conv2d/01_naive.cuh"
#include "conv2d/tuning.hpp"
#include "conv2d/validate.hpp"
#include "conv2d/02_smem_tiled.cuh"
#include "conv2d/splitk_reduce.cuh"
#include "kernelforge/conv.hpp"

namespace kf {

const char* to_string(conv2d_variant variant) noexcept {
  switch (variant) {
    case conv2d_variant::best: return "best";
    case conv2d_variant::naive: return "naive";
    case conv2d_variant::smem_tiled: return "smem_tiled";
    case conv2d_variant::implicit_gemm: return "implicit_gemm";
    case conv2d_variant::implicit_gemm_tf32: return "implicit_gemm_tf32";
    case conv2d_variant::implicit_gemm_pipelined: return "implicit_gemm_pipelined";
    case conv2d_variant::winograd: return "winograd";
  }
  return "unknown";
}

namespace detail {
namespace {

std::string num(std::size_t v) { return std::to_string(v); }

/// Shared memory every device grants a block without an opt-in.
constexpr std::size_t default_smem_limit = 48 * 1024;
/// The first architecture with TF32 tensor cores (mma.sync ... .tf32).
constexpr int tf32_min_cc = 80;

/// Whether `Kernel` was compiled from PTX for sm_80 or newer on this device
/// (not JIT-compiled from an older architecture's PTX, whose body is a trap).
template <auto Kernel>
bool compiled_for_sm80(int device, const char* what) {
  return profile_of<Kernel>(device, what).ptx_version >= tf32_min_cc;
}

conv2d_args<float> make_args(const conv2d_params& p, std::size_t P, std::size_t Q, const float* x, const float* w,
                             const float* bias, float* y) {
  conv2d_args<float> a;
  a.n = static_cast<int>(p.batch);
  a.c = static_cast<int>(p.in_channels);
  a.h = static_cast<int>(p.in_height);
  a.w = static_cast<int>(p.in_width);
  a.k = static_cast<int>(p.out_channels);
  a.r = static_cast<int>(p.filter_height);
  a.s = static_cast<int>(p.filter_width);
  a.p = static_cast<int>(P);
  a.q = static_cast<int>(Q);
  a.stride_h = static_cast<int>(p.stride_h);
  a.stride_w = static_cast<int>(p.stride_w);
  a.pad_h = static_cast<int>(p.pad_h);
  a.pad_w = static_cast<int>(p.pad_w);
  a.dilation_h = static_cast<int>(p.dilation_h);
  a.dilation_w = static_cast<int>(p.dilation_w);
  a.m = static_cast<int>(p.batch * P * Q);
  a.crs = static_cast<int>(p.in_channels * p.filter_height * p.filter_width);
  a.rs = static_cast<int>(p.filter_height * p.filter_width);
  a.hw = static_cast<int>(p.in_height * p.in_width);
  a.pq = static_cast<int>(P * Q);
  a.div_pq = fast_divmod(static_cast<unsigned>(a.pq));
  a.div_q = fast_divmod(static_cast<unsigned>(a.q));
  a.div_rs = fast_divmod(static_cast<unsigned>(a.rs));
  a.div_s = fast_divmod(static_cast<unsigned>(a.s));
  a.x = x;
  a.wt = w;
  a.bias = bias;
  a.y = y;
  return a;
}

// ---- launches ---------------------------------------------------------------
void launch_naive(const char* what, const conv2d_args<float>& a, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(a.m) * a.k;
  const auto grid = static_cast<std::uint32_t>(ceil_div(total, conv2d_naive_block));
  conv2d_naive<float><<<grid, conv2d_naive_block, 0, stream>>>(a);
  check_launch(what);
}

void launch_smem_tiled(const char* what, const conv2d_args<float>& a, cudaStream_t stream) {
  const conv2d_direct_patch shape =
      conv2d_direct_patch_shape(a.r, a.s, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w);
  int channels = a.c < conv2d_direct_max_channels_per_stage ? a.c : conv2d_direct_max_channels_per_stage;
  auto bytes = [&](int cc) {
    return static_cast<std::size_t>(conv2d_direct_smem_floats(shape, cc, a.rs)) * sizeof(float);
  };
  while (channels > 1 && bytes(channels) > default_smem_limit) --channels;
  if (bytes(channels) > default_smem_limit) {
    throw_unsupported(what, "conv2d_variant::smem_tiled needs " + num(bytes(channels)) +
                                " bytes of shared memory for this filter, stride and dilation (an input patch of " +
                                num(static_cast<std::size_t>(shape.rows)) + " x " +
                                num(static_cast<std::size_t>(shape.cols)) + "), more than the " +
                                num(default_smem_limit) + " available; use implicit_gemm or best");
  }
  const std::size_t tiles_p = ceil_div(static_cast<std::size_t>(a.p), conv2d_direct_tile_p);
  const std::size_t tiles_q = ceil_div(static_cast<std::size_t>(a.q), conv2d_direct_tile_q);
  const std::size_t tiles_k = ceil_div(static_cast<std::size_t>(a.k), conv2d_direct_tile_k);
  if (tiles_k > max_grid_yz) {
    throw_unsupported(what, "conv2d_variant::smem_tiled handles at most " + num(max_grid_yz * conv2d_direct_tile_k) +
                                " output channels; use implicit_gemm or best");
  }
  const dim3 grid(static_cast<std::uint32_t>(tiles_p * tiles_q), static_cast<std::uint32_t>(tiles_k),
                  capped_grid_dim(static_cast<std::size_t>(a.n)));
  conv2d_smem_tiled<float>
      <<<grid, conv2d_direct_threads, bytes(channels), stream>>>(a, channels, static_cast<int>(tiles_q));
  check_launch(what);
}

dim3 gemm_grid(const char* what, const conv2d_args<float>& a, int bm, int bn, std::size_t split = 1) {
  const std::size_t gx = ceil_div(static_cast<std::size_t>(a.m), bm);
  const std::size_t gy = ceil_div(static_cast<std::size_t>(a.k), bn);
  if (gy > max_grid_yz) {
    throw_unsupported(what, "the implicit GEMM handles at most " + num(max_grid_yz * static_cast<std::size_t>(bn)) +
                                " output channels (K = " + num(static_cast<std::size_t>(a.k)) + ")");
  }
  return dim3(static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), static_cast<std::uint32_t>(split));
}

/// The plan for this problem on `device` (cached device limits: no query).
conv2d_gemm_plan gemm_plan(int device, const conv2d_args<float>& a) {
  return choose_conv2d_gemm_plan(static_cast<std::size_t>(a.m), static_cast<std::size_t>(a.k),
                                 static_cast<std::size_t>(a.crs), limits_for(device).sm_count);
}

void launch_splitk_reduce(const char* what, int device, const conv2d_args<float>& a, const float* workspace, int split,
                          cudaStream_t stream) {
  const bool vector = a.pq % 4 == 0 && misalignment(a.y) == 0;
  const std::size_t items = static_cast<std::size_t>(a.m) * a.k / (vector ? 4 : 1);
  const std::size_t needed = ceil_div(items, conv2d_splitk_reduce_block);
  const std::size_t cap = static_cast<std::size_t>(limits_for(device).sm_count > 0 ? limits_for(device).sm_count : 1) *
                          conv2d_splitk_reduce_blocks_per_sm;
  const auto grid = static_cast<std::uint32_t>(needed < cap ? needed : cap);
  conv2d_splitk_reduce<<<grid, conv2d_splitk_reduce_block, 0, stream>>>(a, workspace, split, vector);
  check_launch(what);
}

/// Runs `launch(args, vector_store, slices_per_split, split)` split as the plan
/// says, with a workspace and the reduction, or unsplit when plan.split == 1
/// or no workspace is available.
template <class Launch>
void run_gemm_plan(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                   cudaStream_t stream, Launch launch) {
  if (plan.split > 1) {
    const std::size_t y_n = static_cast<std::size_t>(a.m) * a.k;
    pooled_workspace workspace(device, plan.split * y_n * sizeof(float), stream);
    if (workspace.data<float>() != nullptr) {
      conv2d_args<float> partial = a;
      partial.y = workspace.data<float>();
      partial.bias = nullptr;  // added once, by the reduction
      // Each slice holds M * K floats, a multiple of 4 when P*Q is, so with an
      // aligned base (the pool's allocations are) every slice is aligned too.
      launch(partial, a.pq % 4 == 0 && misalignment(partial.y) == 0, static_cast<int>(plan.slices_per_split),
             plan.split);
      launch_splitk_reduce(what, device, a, workspace.data<float>(), static_cast<int>(plan.split), stream);
      return;
    }
  }
  const int all_slices = static_cast<int>(ceil_div(static_cast<std::size_t>(a.crs), conv2d_gemm_bk));
  launch(a, a.pq % 4 == 0 && misalignment(a.y) == 0, all_slices, std::size_t{1});
}

template <int BM, int BN, int MIN_BLOCKS>
void launch_gemm(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                 cudaStream_t stream) {
  run_gemm_plan(what, device, a, plan, stream,
                [&](const conv2d_args<float>& args, bool vector_store, int slices_per_split, std::size_t split) {
                  conv2d_implicit_gemm<BM, BN, MIN_BLOCKS>
                      <<<gemm_grid(what, args, BM, BN, split), conv2d_gemm_threads<BM, BN>, 0, stream>>>(
                          args, vector_store, slices_per_split);
                  check_launch(what);
                });
}

void launch_implicit_gemm(const char* what, int device, const conv2d_args<float>& a, cudaStream_t stream) {
  // Minimum resident blocks per SM (__launch_bounds__): caps registers at 128
  // for the 256-thread tile and at 255 for the 128-thread tile (155 used, no
  // spills: 2 blocks per SM measured faster than 4 on the H200 -- 34.8 against
  // 33.2 TFLOP/s on N32 C64 56x56 K64 3x3); the 64-thread tile gets what it
  // needs (its A loader holds 8 rows per thread).
  const conv2d_gemm_plan plan = gemm_plan(device, a);
  switch (plan.tile) {
    case conv2d_gemm_tile::m128_n128: return launch_gemm<128, 128, 2>(what, device, a, plan, stream);
    case conv2d_gemm_tile::m128_n64: return launch_gemm<128, 64, 2>(what, device, a, plan, stream);
    case conv2d_gemm_tile::m64_n64: return launch_gemm<64, 64, 1>(what, device, a, plan, stream);
  }
}

template <int BM, int BN, int MIN_BLOCKS>
void launch_pipelined(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                      cudaStream_t stream) {
  constexpr auto kernel = &conv2d_implicit_gemm_pipelined<BM, BN, MIN_BLOCKS>;
  constexpr int smem = conv2d_pipelined_smem<BM, BN>;
  allow_dynamic_smem<kernel>(device, smem, what);
  const bool b_vec16 = a.crs % 4 == 0 && misalignment(a.wt) == 0;
  run_gemm_plan(what, device, a, plan, stream,
                [&](const conv2d_args<float>& args, bool vector_store, int slices_per_split, std::size_t split) {
                  kernel<<<gemm_grid(what, args, BM, BN, split), conv2d_pipe_threads<BM, BN>, smem, stream>>>(
                      args, vector_store, b_vec16, slices_per_split * conv2d_gemm_bk, epilogue::identity{});
                  check_launch(what);
                });
}

void launch_implicit_gemm_pipelined(const char* what, int device, const conv2d_args<float>& a, cudaStream_t stream) {
  // The plan (tile, split-K) is step 3's; minimum blocks per SM as in step 3.
  const conv2d_gemm_plan plan = gemm_plan(device, a);
  switch (plan.tile) {
    case conv2d_gemm_tile::m128_n128: return launch_pipelined<128, 128, 2>(what, device, a, plan, stream);
    case conv2d_gemm_tile::m128_n64: return launch_pipelined<128, 64, 2>(what, device, a, plan, stream);
    case conv2d_gemm_tile::m64_n64: return launch_pipelined<64, 64, 1>(what, device, a, plan, stream);
  }
}

template <int BM, int BN, int WM, int WN>
bool launch_tf32(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                 cudaStream_t stream) {
  constexpr auto kernel = &conv2d_implicit_gemm_tf32<BM, BN, WM, WN>;
  if (!compiled_for_sm80<kernel>(device, what)) return false;
  run_gemm_plan(what, device, a, plan, stream,
                [&](const conv2d_args<float>& args, bool, int slices_per_split, std::size_t split) {
                  kernel<<<gemm_grid(what, args, BM, BN, split), conv2d_tf32_threads<BM, BN, WM, WN>, 0, stream>>>(
                      args, slices_per_split);
                  check_launch(what);
                });
  return true;
}

/// false when this build holds no sm_80+ code for the device.
bool launch_implicit_gemm_tf32(const char* what, int device, const conv2d_args<float>& a, cudaStream_t stream) {
  const conv2d_gemm_plan plan = gemm_plan(device, a);
  switch (plan.tile) {
    case conv2d_gemm_tile::m128_n128: return launch_tf32<128, 128, 2, 4>(what, device, a, plan, stream);
    case conv2d_gemm_tile::m128_n64: return launch_tf32<128, 64, 4, 2>(what, device, a, plan, stream);
    case conv2d_gemm_tile::m64_n64: return launch_tf32<64, 64, 2, 2>(what, device, a, plan, stream);
  }
  return false;
}

// ---- Winograd F(2x2,3x3) ------------------------------------------------------
/// Grid for a grid-stride transform over `items`: at most 8 blocks of 256
/// threads per SM (a full SM on sm_80 and sm_90; the grid-stride loop covers the rest).
std::uint32_t transform_grid(int device, std::size_t items) {
  constexpr std::size_t blocks_per_sm = 8;
  const std::size_t cap =
      static_cast<std::size_t>(limits_for(device).sm_count > 0 ? limits_for(device).sm_count : 1) * blocks_per_sm;
  const std::size_t needed = ceil_div(items, winograd_transform_block);
  return static_cast<std::uint32_t>(needed < cap ? needed : cap);
}

template <int BM, int BN, int MIN_BLOCKS>
void launch_winograd_gemm(const char* what, int device, const conv2d_winograd_args& wa, cudaStream_t stream) {
  constexpr auto kernel = &conv2d_winograd_gemm<BM, BN, MIN_BLOCKS>;
  constexpr int smem = conv2d_pipelined_smem<BM, BN>;
  allow_dynamic_smem<kernel>(device, smem, what);
  const dim3 grid(static_cast<std::uint32_t>(ceil_div(static_cast<std::size_t>(wa.tiles), BM)),
                  static_cast<std::uint32_t>(ceil_div(static_cast<std::size_t>(wa.a.k), BN)), winograd_positions);
  if (grid.y > max_grid_yz) {
    throw_unsupported(what,
                      "conv2d_variant::winograd handles at most " + num(max_grid_yz * static_cast<std::size_t>(BN)) +
                          " output channels (K = " + num(static_cast<std::size_t>(wa.a.k)) + "); use implicit_gemm");
  }
  kernel<<<grid, conv2d_pipe_threads<BM, BN>, smem, stream>>>(wa);
  check_launch(what);
}

/// Runs the four Winograd passes; false (nothing launched) when the workspace
/// cannot be had or indexed. The layer must qualify (validate.cpp checks it
/// for conv2d_variant::winograd, tuning.hpp for best).
bool launch_winograd(const char* what, int device, const conv2d_args<float>& a, cudaStream_t stream) {
  const conv2d_winograd_layout l = make_conv2d_winograd_layout(
      static_cast<std::size_t>(a.n), static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.k),
      static_cast<std::size_t>(a.p), static_cast<std::size_t>(a.q));
  if (!l.indexable()) return false;  // conv2d_variant::winograd never gets here: validate.cpp refuses it
  pooled_workspace workspace(device, l.bytes(), stream);
  if (workspace.data<float>() == nullptr) return false;
  conv2d_winograd_args wa;
  wa.a = a;
  wa.tiles_h = static_cast<int>(l.tiles_h);
  wa.tiles_w = static_cast<int>(l.tiles_w);
  wa.tiles = static_cast<int>(l.tiles);
  wa.tiles_ld = static_cast<int>(l.tiles_ld);
  wa.c_ld = static_cast<int>(l.c_ld);
  wa.div_tiles_w = fast_divmod(static_cast<unsigned>(l.tiles_w));
  wa.div_tiles_h = fast_divmod(static_cast<unsigned>(l.tiles_h));
  wa.div_c = fast_divmod(static_cast<unsigned>(a.c));
  wa.div_k = fast_divmod(static_cast<unsigned>(a.k));
  wa.u = workspace.data<float>();  // each part a multiple of 4 floats: all three 16-byte aligned
  wa.v = wa.u + l.u_floats;
  wa.mm = wa.v + l.v_floats;

  conv2d_winograd_filter<<<transform_grid(device, static_cast<std::size_t>(a.k) * a.c), winograd_transform_block, 0,
                           stream>>>(wa);
  check_launch(what);
  conv2d_winograd_input<<<transform_grid(device, l.tiles * a.c), winograd_transform_block, 0, stream>>>(wa);
  check_launch(what);
  switch (choose_conv2d_winograd_tile(l.tiles, static_cast<std::size_t>(a.k), limits_for(device).sm_count)) {
    case conv2d_gemm_tile::m128_n128: launch_winograd_gemm<128, 128, 2>(what, device, wa, stream); break;
    case conv2d_gemm_tile::m128_n64: launch_winograd_gemm<128, 64, 2>(what, device, wa, stream); break;
    case conv2d_gemm_tile::m64_n64: launch_winograd_gemm<64, 64, 1>(what, device, wa, stream); break;
  }
  conv2d_winograd_output<<<transform_grid(device, l.tiles * a.k), winograd_transform_block, 0, stream>>>(
      wa, epilogue::identity{});
  check_launch(what);
  return true;
}

void launch_winograd_or_throw(const char* what, int device, const conv2d_args<float>& a, cudaStream_t stream) {
  if (!launch_winograd(what, device, a, stream)) {
    throw error(errc::out_of_memory,
                std::string(what) +
                    ": conv2d_variant::winograd could not allocate its workspace for the transformed "
                    "filters, inputs and products; free device memory or use implicit_gemm");
  }
}

void dispatch(const char* what, int device, const conv2d_args<float>& a, const conv2d_options& options) {
  switch (options.variant) {
    case conv2d_variant::naive: return launch_naive(what, a, options.stream);
    case conv2d_variant::smem_tiled: return launch_smem_tiled(what, a, options.stream);
    case conv2d_variant::implicit_gemm: return launch_implicit_gemm(what, device, a, options.stream);
    case conv2d_variant::implicit_gemm_pipelined:
      return launch_implicit_gemm_pipelined(what, device, a, options.stream);
    case conv2d_variant::winograd: return launch_winograd_or_throw(what, device, a, options.stream);
    case conv2d_variant::implicit_gemm_tf32: {
      const int cc = compute_capability(device);
      if (cc < tf32_min_cc) {
        throw_unsupported(what,
                          "conv2d_variant::implicit_gemm_tf32 needs TF32 tensor cores (compute capability 8.0 or "
                          "newer); this device is sm_" +
                              std::to_string(cc) + ". Use implicit_gemm (exact fp32)");
      }
      if (!launch_implicit_gemm_tf32(what, device, a, options.stream)) {
        throw_unsupported(what, "this build of kernelforge holds no sm_80+ code for this device (sm_" +
                                    std::to_string(cc) + "), so implicit_gemm_tf32 is unavailable; add " +
                                    std::to_string(cc) + " to CMAKE_CUDA_ARCHITECTURES");
      }
      return;
    }
    case conv2d_variant::best: break;
  }
  if (options.math == math_mode::tf32 && compute_capability(device) >= tf32_min_cc &&
      launch_implicit_gemm_tf32(what, device, a, options.stream)) {
    return;
  }
  switch (choose_conv2d_exact_kernel(static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.k),
                                     static_cast<std::size_t>(a.r), static_cast<std::size_t>(a.s),
                                     static_cast<std::size_t>(a.stride_h), static_cast<std::size_t>(a.stride_w),
                                     static_cast<std::size_t>(a.dilation_h), static_cast<std::size_t>(a.dilation_w))) {
    case conv2d_exact_kernel::winograd:
      if (launch_winograd(what, device, a, options.stream)) return;
      break;  // no workspace: the implicit GEMM needs none
    case conv2d_exact_kernel::implicit_gemm_pipelined:
      return launch_implicit_gemm_pipelined(what, device, a, options.stream);
    case conv2d_exact_kernel::implicit_gemm: break;
  }
  launch_implicit_gemm(what, device, a, options.stream);
}

}  // namespace

template <class T>
void conv2d_forward_impl(const conv2d_params& p, const T* x, const T* w, const T* bias, T* y,
                         const conv2d_options& options) {
  const char* what = "kf::conv2d_forward";
  const conv2d_geometry geometry = validate_conv2d(what, p, x, w, bias, y, sizeof(T), options);
  if (geometry.y_elements == 0) return;  // N = 0 or K = 0
  const int device = current_device(what);
  require_kernel_image_cached(device, what);
  dispatch(what, device, make_args(p, geometry.p, geometry.q, x, w, bias, y), options);
}

template void conv2d_forward_impl<float>(const conv2d_params&, const float*, const float*, const float*, float*,
                                         const conv2d_options&);

}  // namespace detail

}  // namespace kf
