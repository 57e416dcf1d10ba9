// SPDX-License-Identifier: Apache-2.0
// What the launchers know about a device, queried once per device and cached:
// the current device, its limits for planning, its compute capability, and
// whether the library holds an image for it.
#pragma once

#include <string>

#include "launch_plan.hpp"
#include "per_device.hpp"  // max_cached_devices

namespace kf::detail {

/// The current device; errc::no_device when there is none. No synchronization.
int current_device(const char* what);

/// Device limits for planning, queried once per device and cached.
const device_limits& limits_for(int device);

/// Compute capability of `device` as major * 10 + minor (e.g. 90), from the cache.
inline int compute_capability(int device) {
  const device_limits& l = limits_for(device);
  return l.cc_major * 10 + l.cc_minor;
}

/// Whether code built for sm_90a (wgmma, setmaxnreg: the architecture-specific
/// target) runs on `device`: compute capability 9.0 only, no later one.
inline bool sm90a_code_runs_on(int device) {
  return device >= 0 && device < max_cached_devices && compute_capability(device) == 90;
}

/// errc::unsupported: "<what>: <feature> needs compute capability M.m (sm_Mm) or
/// newer; device <device> is a.b; <fix>". For a variant or type whose hardware
/// (tensor cores, FP8) `device` lacks; callers test compute_capability first, so
/// the message is built only when it is thrown.
[[noreturn]] void throw_needs_compute_capability(const char* what, int device, int min_cc, const std::string& feature,
                                                 const char* fix);

/// kf::require_kernel_image for `device`, checked once per device and then
/// cached: for launchers whose kernels need no occupancy profile (fixed tiles).
void require_kernel_image_cached(int device, const char* what);

}  // namespace kf::detail
