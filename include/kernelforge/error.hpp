// SPDX-License-Identifier: Apache-2.0
// kf::error: the one exception type kernelforge throws, and the reasons it carries.
#pragma once

#include <stdexcept>
#include <string>

namespace kf {

/// Why a kernelforge call failed.
enum class errc {
  invalid_argument,  ///< an argument is wrong: null pointer, bad size, bad option
  no_device,         ///< no CUDA device (or no driver) is available
  no_kernel_image,   ///< the library holds no code this GPU can run
  out_of_memory,     ///< a device allocation failed
  unsupported,       ///< valid arguments, but this variant cannot run them on this device
  cuda_runtime,      ///< any other CUDA error (e.g. a kernel fault reported late)
};

/// Human-readable name of an error code ("invalid_argument", ...).
[[nodiscard]] const char* to_string(errc code) noexcept;

/// The exception every kernelforge entry point throws. The message says what
/// happened, with the numbers, and what to do about it.
class error : public std::runtime_error {
 public:
  error(errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] errc code() const noexcept { return code_; }

 private:
  errc code_;
};

}  // namespace kf
