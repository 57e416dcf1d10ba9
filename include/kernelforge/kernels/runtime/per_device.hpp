// SPDX-License-Identifier: Apache-2.0
// The runtime's one mechanism for per-device state: a value per device ordinal,
// made on first use (thread-safe, once per device) and read lock-free after.
// Device facts, kernel attributes, shared-memory opt-ins, workspace pools and
// the constant-memory slots all live in per_device<T> objects, never in a
// family's own once_flag arrays.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>

namespace kf::detail {

constexpr int max_cached_devices = 64;

/// errc::unsupported for an ordinal the caches cannot hold (negative or >= 64).
void require_cacheable_device(int device);

template <class T>
class per_device {
 public:
  /// The value for `device`, made by `init(value, device)` the first time. If
  /// init throws, the next call tries again.
  template <class Init>
  T& get(int device, Init init) {
    require_cacheable_device(device);
    const auto d = static_cast<std::size_t>(device);
    std::call_once(once_[d], [&] { init(values_[d], device); });
    return values_[d];
  }

 private:
  std::array<std::once_flag, max_cached_devices> once_{};
  std::array<T, max_cached_devices> values_{};
};

}  // namespace kf::detail
