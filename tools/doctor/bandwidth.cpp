// SPDX-License-Identifier: Apache-2.0
// kernelforge-doctor --bandwidth: copy rates like CUDA's bandwidthTest --
// host-to-device and device-to-host from pageable and from pinned memory, and
// device-to-device -- in GB/s against the device's peaks (the PCIe link for
// host copies, the memory for device copies). Timed with CUDA events.
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "doctor.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/pinned_buffer.hpp"

namespace kf::doctor {
namespace {

constexpr std::size_t host_copy_bytes = std::size_t{256} << 20;  // 256 MiB: far past any cache, quick over PCIe
constexpr std::size_t device_copy_bytes = std::size_t{1} << 30;  // 1 GiB: far past L2 (50 MB on an H200)
constexpr int repeats = 10;

/// GB/s of `repeats` calls of copy(stream), after one warm-up, timed with events.
template <class Copy>
double rate_gbs(std::size_t bytes_per_call, Copy copy) {
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  copy(s);
  cudaStreamSynchronize(s);
  cudaEventRecord(start, s);
  for (int i = 0; i < repeats; ++i) copy(s);
  cudaEventRecord(stop, s);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(s);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw kf::error(kf::errc::cuda_runtime, cudaGetErrorString(status));
  return ms > 0 ? static_cast<double>(bytes_per_call) * repeats / (ms * 1e-3) / 1e9 : 0;
}

}  // namespace

void measure_bandwidth(report& r, const std::vector<int>& devices) {
  r.heading("Bandwidth (like bandwidthTest; GB/s = 1e9 bytes/s)");
  json results = json::array();
  for (int d : devices) {
    const std::string section = format("bandwidth %d", d);
    try {
      cudaSetDevice(d);
      const kf::device_info info = kf::get_device_info(d);
      std::vector<char> pageable(host_copy_bytes, 1);
      kf::pinned_buffer<char> pinned(host_copy_bytes);
      std::memset(pinned.data(), 1, pinned.size());
      kf::device_buffer<char> dev(device_copy_bytes), dev2(device_copy_bytes);
      r.note(format("  device %d: timing %d copies of %zu MiB each way...", d, repeats, host_copy_bytes >> 20));
      const std::size_t h = host_copy_bytes;
      const double h2d_pageable = rate_gbs(
          h, [&](cudaStream_t s) { cudaMemcpyAsync(dev.data(), pageable.data(), h, cudaMemcpyHostToDevice, s); });
      const double h2d_pinned = rate_gbs(h, [&](cudaStream_t s) { kf::copy_async(dev.data(), pinned.data(), h, s); });
      const double d2h_pageable = rate_gbs(
          h, [&](cudaStream_t s) { cudaMemcpyAsync(pageable.data(), dev.data(), h, cudaMemcpyDeviceToHost, s); });
      const double d2h_pinned = rate_gbs(h, [&](cudaStream_t s) { kf::copy_async(pinned.data(), dev.data(), h, s); });
      // Device-to-device reads and writes every byte: counted twice, as bandwidthTest and the benchmarks do.
      const double d2d = rate_gbs(2 * device_copy_bytes, [&](cudaStream_t s) {
        kf::copy_async(dev2.data(), dev.data(), device_copy_bytes, s);
      });
      // Read right after the copies: an idle link trains down to save power.
      const double link_gbs = pcie_link_peak_gbs(d);  // 0 where sysfs does not tell
      struct row {
        const char* name;
        double gbs;
        double peak;
        const char* of;
      };
      const row rows[] = {
          {"host-to-device, pageable", h2d_pageable, link_gbs, "the PCIe link"},
          {"host-to-device, pinned", h2d_pinned, link_gbs, "the PCIe link"},
          {"device-to-host, pageable", d2h_pageable, link_gbs, "the PCIe link"},
          {"device-to-host, pinned", d2h_pinned, link_gbs, "the PCIe link"},
          {"device-to-device (read + write)", d2d, info.peak_bandwidth_gbs, "the memory's peak"},
      };
      json facts = json::object();
      facts.set("device", d);
      for (const row& w : rows) facts.set(w.name, w.gbs);
      facts.set("peak_bandwidth_gbs", info.peak_bandwidth_gbs);
      facts.set("pcie_peak_gbs", link_gbs > 0 ? json(link_gbs) : json());
      results.push(facts);
      check c{section,
              status::ok,
              format("device %d: pinned %.1f GB/s host-to-device, %.1f GB/s device-to-host; device-to-device %.0f GB/s "
                     "(%.0f%% of the %.0f GB/s peak)",
                     d, h2d_pinned, d2h_pinned, d2d, 100 * d2d / info.peak_bandwidth_gbs, info.peak_bandwidth_gbs),
              {},
              ""};
      for (const row& w : rows) {
        c.detail.push_back(w.peak > 0 ? format("%-32s %8.1f GB/s  (%.0f%% of %s, %.0f GB/s)", w.name, w.gbs,
                                               100 * w.gbs / w.peak, w.of, w.peak)
                                      : format("%-32s %8.1f GB/s", w.name, w.gbs));
      }
      if (d2d < 0.5 * info.peak_bandwidth_gbs) {
        c.level = status::warn;
        c.fix =
            "device-to-device copies reach less than half the memory's peak: another process may be using the GPU "
            "(nvidia-smi), or clocks are capped (nvidia-smi -q -d CLOCK,PERFORMANCE)";
      } else if (h2d_pinned < 0.5 * h2d_pageable) {
        c.level = status::warn;
        c.fix =
            "pinned host copies are slower than pageable ones: check the PCIe link (lspci -vv, LnkSta) and NUMA "
            "placement (numactl --cpunodebind to the GPU's node)";
      }
      r.add(c);
    } catch (const kf::error& e) {
      r.add({section,
             status::fail,
             std::string(kf::to_string(e.code())) + ": " + e.what(),
             {},
             "free memory on the GPU (the test needs 2 GiB on the device and 256 MiB of pinned host memory)"});
    }
  }
  r.facts().set("bandwidth", results);
}

}  // namespace kf::doctor
