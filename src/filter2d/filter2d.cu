// SPDX-License-Identifier: Apache-2.0
// The filter2d launcher: validate -> plan -> dispatch by variant, and the
// explicit instantiations shipped in the fatbin (float and __half: every
// variant but register_window and rolling_window, which are float only;
// double: naive). tma_pipeline (float) lives in its own sm_90a object,
// reached through tma_sm90a.hpp.
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/validate.hpp"
#include "kernelforge/kernels/common/vector_access.cuh"
#include "kernelforge/kernels/filter2d/args.cuh"
#include "kernelforge/kernels/filter2d/02_constant_memory.cuh"
#include "kernelforge/kernels/filter2d/01_naive.cuh"
#include "kernelforge/kernels/filter2d/04_register_window.cuh"
#include "kernelforge/kernels/filter2d/05_rolling_window.cuh"
#include "kernelforge/kernels/filter2d/03_smem_tiled.cuh"
#include "kernelforge/kernels/filter2d/plan.hpp"
#include "kernelforge/kernels/filter2d/tile.cuh"
#include "kernelforge/kernels/filter2d/tma_sm90a.hpp"
#include "kernelforge/kernels/filter2d/tuning.hpp"
#include "kernelforge/kernels/filter2d/validate.hpp"
#include "kernelforge/kernels/filter2d/window_launch.cuh"
#include "kernelforge/conv.hpp"

namespace kf {

const char* to_string(border mode) noexcept {
  switch (mode) {
    case border::zero: return "zero";
    case border::clamp: return "clamp";
    case border::reflect: return "reflect";
  }
  return "unknown";
}

const char* to_string(filter2d_variant variant) noexcept {
  switch (variant) {
    case filter2d_variant::best: return "best";
    case filter2d_variant::naive: return "naive";
    case filter2d_variant::constant_memory: return "constant_memory";
    case filter2d_variant::smem_tiled: return "smem_tiled";
    case filter2d_variant::register_window: return "register_window";
    case filter2d_variant::rolling_window: return "rolling_window";
    case filter2d_variant::tma_pipeline: return "tma_pipeline";
  }
  return "unknown";
}

namespace detail {
namespace {

// ---- naive and constant_memory: one pixel per thread ------------------------
template <class T>
dim3 pixel_grid(const filter2d_args<T>& a) {
  const std::size_t gx = ceil_div(static_cast<std::size_t>(a.width), filter2d_pixel_block_x);
  const std::size_t gy = ceil_div(static_cast<std::size_t>(a.height), filter2d_pixel_block_y);
  return dim3(static_cast<std::uint32_t>(gx), capped_grid_dim(gy), capped_grid_dim(a.channels));
}

template <class T>
void launch_naive(const char* what, const filter2d_args<T>& a, cudaStream_t stream) {
  const dim3 block(filter2d_pixel_block_x, filter2d_pixel_block_y);
  filter2d_naive<T><<<pixel_grid(a), block, 0, stream>>>(a);
  check_launch(what);
}

/// The constant-memory slots of one device: a ring, a host mutex, and an
/// event per slot marking the last launch that reads it (see
/// 02_constant_memory.cuh for why).
struct constant_slot_ring {
  std::mutex mutex;
  std::array<cudaEvent_t, filter2d_constant_slots> released{};
  unsigned next = 0;
};

/// The ring of `device`, its events created on first use (by the runtime's per-device cache).
constant_slot_ring& slot_ring(int device, const char* what) {
  static per_device<constant_slot_ring> rings;
  return rings.get(device, [what](constant_slot_ring& ring, int) {
    for (cudaEvent_t& e : ring.released) cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
  });
}

template <class T>
void launch_constant_memory(const char* what, int device, const filter2d_args<T>& a, cudaStream_t stream) {
  const dim3 block(filter2d_pixel_block_x, filter2d_pixel_block_y);
  const std::size_t filter_bytes = static_cast<std::size_t>(a.r) * a.s * sizeof(T);
  if (filter_bytes > filter2d_constant_slot_bytes) {  // the generic rule: too big for a slot
    filter2d_constant_memory<T, false><<<pixel_grid(a), block, 0, stream>>>(a, 0);
    check_launch(what);
    return;
  }
  constant_slot_ring& ring = slot_ring(device, what);
  std::lock_guard<std::mutex> lock(ring.mutex);
  const int slot = static_cast<int>(ring.next++ % filter2d_constant_slots);
  // The previous kernel that read this slot (on whatever stream) must finish
  // before the copy below overwrites it: a GPU-side wait, no host sync.
  cuda_check(cudaStreamWaitEvent(stream, ring.released[slot], 0), what);
  cuda_check(
      cudaMemcpyToSymbolAsync(filter2d_constant_filter, a.filter, filter_bytes,
                              static_cast<std::size_t>(slot) * filter2d_constant_slot_bytes, cudaMemcpyDefault, stream),
      what);
  filter2d_constant_memory<T, true><<<pixel_grid(a), block, 0, stream>>>(a, slot);
  check_launch(what);
  cuda_check(cudaEventRecord(ring.released[slot], stream), what);
}

// ---- smem_tiled (and the separable path) ------------------------------------
template <class T, int R, int S, bool Separable>
void launch_tiled(const char* what, const filter2d_args<T>& a, cudaStream_t stream) {
  const std::size_t tiles_x = ceil_div(static_cast<std::size_t>(a.width), filter2d_tile_width);
  const std::size_t tiles_y = ceil_div(static_cast<std::size_t>(a.height), filter2d_tile_height);
  const dim3 grid(static_cast<std::uint32_t>(tiles_x), capped_grid_dim(tiles_y), capped_grid_dim(a.channels));
  const dim3 block(filter2d_tile_threads_x, filter2d_tile_threads_y);
  // At most (32 + 30) x 160 + 961 + 70 floats = 43.8 KB for 31 x 31: under the
  // 48 KB every device gives without an opt-in.
  const std::size_t smem = filter2d_tile_smem_bytes<T>(a.r, a.s, Separable);
  constexpr int V = filter2d_vector_elements<T>;
  const bool vector_loads = misalignment(a.in) == 0 && a.in_pitch % V == 0;
  filter2d_smem_tiled<T, R, S, Separable><<<grid, block, smem, stream>>>(a, vector_loads, static_cast<int>(tiles_y));
  check_launch(what);
}

template <class T>
void launch_tiled_2d(const char* what, const filter2d_args<T>& a, cudaStream_t stream) {
  if (a.r == 3 && a.s == 3) return launch_tiled<T, 3, 3, false>(what, a, stream);
  if (a.r == 5 && a.s == 5) return launch_tiled<T, 5, 5, false>(what, a, stream);
  launch_tiled<T, 0, 0, false>(what, a, stream);
}

// ---- tma_pipeline (step 6, sm_90a) ----------------------------------------------
/// filter2d_variant::tma_pipeline by name: runs, or errc::unsupported saying why not.
void launch_tma_pipeline_by_name(const char* what, int device, const filter2d_args<float>& a, cudaStream_t stream) {
  const char* reason = filter2d_tma_unsupported_reason(static_cast<std::size_t>(a.r), static_cast<std::size_t>(a.s),
                                                       a.mode, a.in, static_cast<std::size_t>(a.in_pitch), a.out,
                                                       static_cast<std::size_t>(a.out_pitch));
  if (reason != nullptr) {
    throw_unsupported(what, std::string("filter2d_variant::tma_pipeline needs ") + reason +
                                "; use register_window or best, which run every case");
  }
  const int cc = compute_capability(device);
  if (cc != 90) {
    throw_unsupported(what,
                      "filter2d_variant::tma_pipeline needs Hopper's TMA copies built for sm_90a (compute capability "
                      "9.0); this device is sm_" +
                          std::to_string(cc) + ". Use register_window or best");
  }
  if (!filter2d_tma_available(device)) {
    throw_unsupported(what,
                      "this build of kernelforge holds no sm_90a code, so filter2d_variant::tma_pipeline is "
                      "unavailable; add 90 to CMAKE_CUDA_ARCHITECTURES (and keep KERNELFORGE_ENABLE_SM90A on)");
  }
  if (!filter2d_tma_try_launch(device, a, stream)) {
    throw_unsupported(what,
                      "filter2d_variant::tma_pipeline could not run: the driver has no cuTensorMapEncodeTiled or "
                      "rejected the image's tensor map (a channel plane of 2^40 bytes or more); use register_window");
  }
}

/// `best` with the switch on: tma_pipeline where it applies; false (nothing enqueued) elsewhere.
bool try_tma_pipeline_for_best(int device, const filter2d_args<float>& a, cudaStream_t stream) {
  if (!best_uses_tma_pipeline) return false;
  if (filter2d_tma_unsupported_reason(static_cast<std::size_t>(a.r), static_cast<std::size_t>(a.s), a.mode, a.in,
                                      static_cast<std::size_t>(a.in_pitch), a.out,
                                      static_cast<std::size_t>(a.out_pitch)) != nullptr) {
    return false;
  }
  return filter2d_tma_try_launch(device, a, stream);
}

// ---- register_window and rolling_window ---------------------------------------
template <int R, int S>
void launch_rolling_window(const char* what, const filter2d_args<float>& a, cudaStream_t stream) {
  const filter2d_window_grid g = filter2d_strip_grid(a, filter2d_rolling_cols, filter2d_rolling_threads,
                                                     static_cast<std::size_t>(filter2d_rolling_strip_rows<R>()));
  with_border(a.mode, [&](auto mode) {
    filter2d_rolling_window<R, S, decltype(mode)::value><<<g.grid, filter2d_rolling_threads, 0, stream>>>(a, g.strips);
  });
  check_launch(what);
}

/// `variant` (register_window or rolling_window) where the window kernels
/// apply, else smem_tiled (same results up to rounding).
void launch_window_or_tiled(const char* what, filter2d_variant variant, const filter2d_args<float>& a,
                            cudaStream_t stream) {
  if (!filter2d_window_kernels_apply(a)) return launch_tiled_2d(what, a, stream);
  const bool rolling = variant == filter2d_variant::rolling_window;
  if (a.r == 3)
    return rolling ? launch_rolling_window<3, 3>(what, a, stream)
                   : launch_filter2d_register_window<3, 3>(what, a, stream);
  rolling ? launch_rolling_window<5, 5>(what, a, stream) : launch_filter2d_register_window<5, 5>(what, a, stream);
}

/// double is compiled for the naive kernel only; the window kernels for float only.
template <class T>
void require_variant_for_type(const char* what, filter2d_variant variant) {
  if constexpr (!std::is_same_v<T, float>) {
    if (variant == filter2d_variant::register_window || variant == filter2d_variant::rolling_window ||
        variant == filter2d_variant::tma_pipeline) {
      const char* type = std::is_same_v<T, double> ? "double" : "__half";
      const char* instead =
          std::is_same_v<T, double> ? "filter2d_variant::naive or best" : "filter2d_variant::smem_tiled or best";
      throw error(errc::unsupported, std::string(what) + ": filter2d_variant::" + to_string(variant) +
                                         " is compiled for float only, not " + type + "; use " + instead);
    }
  }
  if constexpr (std::is_same_v<T, double>) {
    if (variant != filter2d_variant::naive && variant != filter2d_variant::best) {
      throw error(errc::unsupported, std::string(what) + ": filter2d_variant::" + to_string(variant) +
                                         " is not available for double (only naive is compiled for double); "
                                         "use filter2d_variant::naive or best, or float");
    }
  }
}

template <class T>
void dispatch(const char* what, int device, const filter2d_args<T>& a, filter2d_variant variant, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    launch_naive(what, a, stream);  // require_variant_for_type let only naive and best through
  } else {
    switch (variant) {
      case filter2d_variant::naive: return launch_naive(what, a, stream);
      case filter2d_variant::constant_memory: return launch_constant_memory(what, device, a, stream);
      case filter2d_variant::smem_tiled: return launch_tiled_2d(what, a, stream);
      case filter2d_variant::register_window:
      case filter2d_variant::rolling_window:
        if constexpr (std::is_same_v<T, float>) return launch_window_or_tiled(what, variant, a, stream);
        break;  // unreachable: require_variant_for_type rejected them for other types
      case filter2d_variant::tma_pipeline:
        if constexpr (std::is_same_v<T, float>) return launch_tma_pipeline_by_name(what, device, a, stream);
        break;  // unreachable, likewise
      case filter2d_variant::best: break;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (try_tma_pipeline_for_best(device, a, stream)) return;
      if (filter2d_window_kernels_apply(a)) return launch_window_or_tiled(what, best_window_kernel(a.r), a, stream);
    }
    const std::size_t taps = static_cast<std::size_t>(a.r) * a.s;
    if (a.r > 1 && a.s > 1 && taps >= filter2d_separable_min_taps) return launch_tiled<T, 0, 0, true>(what, a, stream);
    launch_tiled_2d(what, a, stream);
  }
}

}  // namespace

template <class T>
void filter2d_impl(std::size_t channels, std::size_t height, std::size_t width, const T* in, std::size_t in_pitch,
                   const T* filter, std::size_t r, std::size_t s, T* out, std::size_t out_pitch,
                   const filter2d_options& options) {
  const char* what = "kf::filter2d";
  validate_filter2d(what, channels, height, width, in, in_pitch, filter, r, s, out, out_pitch, sizeof(T), options);
  require_variant_for_type<T>(what, options.variant);
  if (channels == 0 || height == 0 || width == 0) return;
  const int device = current_device(what);
  require_kernel_image_cached(device, what);
  const auto a = make_filter2d_args(channels, height, width, in, in_pitch, filter, r, s, out, out_pitch, options.mode);
  dispatch(what, device, a, options.variant, options.stream);
}

#define KF_INSTANTIATE_FILTER2D(T)                                                                                    \
  template void filter2d_impl<T>(std::size_t, std::size_t, std::size_t, const T*, std::size_t, const T*, std::size_t, \
                                 std::size_t, T*, std::size_t, const filter2d_options&);

KF_INSTANTIATE_FILTER2D(float)
KF_INSTANTIATE_FILTER2D(__half)
KF_INSTANTIATE_FILTER2D(double)

}  // namespace detail
}  // namespace kf
