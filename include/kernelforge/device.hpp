// SPDX-License-Identifier: Apache-2.0
// Device queries: what GPU this is, and whether the library holds code for it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kf {

/// Identity and datasheet-style ceilings of one CUDA device.
struct device_info {
  std::string name;
  int device = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::size_t global_memory_bytes = 0;
  double peak_bandwidth_gbs = 0;  ///< 2 x memory clock x bus width (DDR), in GB/s
  double peak_fp32_tflops = 0;    ///< SMs x FP32 lanes per SM x 2 x boost clock, in TFLOP/s
};

/// Queries device `device` (-1: the current device). Throws errc::no_device
/// when there is no usable GPU or driver, errc::invalid_argument for a bad ordinal.
[[nodiscard]] device_info get_device_info(int device = -1);

/// The compute capabilities (major*10 + minor) this library's fatbin was built
/// for, ascending, e.g. {75, 80, 86, 89, 90, 100, 120}.
[[nodiscard]] std::vector<int> compiled_architectures();

/// Throws errc::no_kernel_image when the library holds neither machine code nor
/// PTX that device `device` (-1: current) can run; the message names the
/// device's sm_XY, the compiled list and the CMake setting that fixes it.
void require_kernel_image(int device = -1);

}  // namespace kf
