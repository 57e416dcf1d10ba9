// SPDX-License-Identifier: Apache-2.0
// kernelforge-doctor, section 2: each device -- name, compute capability, SMs,
// memory, clocks, bus, the peaks kernelforge computes -- and whether the library
// holds machine code for it, only PTX (JIT-compiled at first use: timed here),
// or nothing (no_kernel_image, with the CMake setting that fixes it).
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "doctor.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/error.hpp"

namespace kf::doctor {
namespace {

/// What the library's CMAKE_CUDA_ARCHITECTURES (e.g. "75-real,...,121") holds for compute capability `cc`.
struct image_kind {
  bool machine_code = false;
  bool ptx = false;
  bool assumed = false;  ///< the list was "native"/"all": read from compiled_architectures() instead
};

image_kind images_for(int cc) {
  image_kind k;
  std::string list = KF_DOCTOR_CUDA_ARCHITECTURES;
  std::stringstream in(list);
  std::string entry;
  bool symbolic = false;
  while (std::getline(in, entry, ',')) {
    if (entry.empty()) continue;
    if (!std::isdigit(static_cast<unsigned char>(entry[0]))) {
      symbolic = true;  // native, all, all-major
      continue;
    }
    const int arch = std::atoi(entry.c_str());
    std::size_t digits = 0;
    while (digits < entry.size() && std::isdigit(static_cast<unsigned char>(entry[digits]))) ++digits;
    // 90a, 100f: arch-specific code that runs on this exact compute capability only.
    const bool specific = digits < entry.size() && std::isalpha(static_cast<unsigned char>(entry[digits]));
    const bool real = entry.find("-virtual") == std::string::npos;
    const bool virt = entry.find("-real") == std::string::npos;
    if (real && (specific ? arch == cc : (arch / 10 == cc / 10 && arch <= cc))) k.machine_code = true;
    if (virt && !specific && arch <= cc) k.ptx = true;
  }
  if (symbolic) {
    for (int arch : kf::compiled_architectures()) {
      if (arch / 10 == cc / 10 && arch <= cc) k.machine_code = true;
    }
    k.assumed = true;
  }
  return k;
}

int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) cudaGetLastError();
  return v;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

/// PCIe link of the GPU from Linux sysfs: "16.0 GT/s PCIe" x 16 -> GB/s per direction.
struct pcie_link {
  std::string speed, max_speed;
  int width = 0, max_width = 0;
  double gbs = 0;  ///< the current link's peak per direction (after 128b/130b encoding)
};

pcie_link link_of(const std::string& bus_id) {
  pcie_link l;
  std::string id = bus_id;
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (id.size() > 12) id = id.substr(id.size() - 12);  // 00000000:18:00.0 -> 0000:18:00.0
  const std::string dir = "/sys/bus/pci/devices/" + id + "/";
  l.speed = read_line(dir + "current_link_speed");
  l.max_speed = read_line(dir + "max_link_speed");
  l.width = std::atoi(read_line(dir + "current_link_width").c_str());
  l.max_width = std::atoi(read_line(dir + "max_link_width").c_str());
  const double gts = std::atof(l.speed.c_str());
  const double encoding = gts >= 8.0 ? 128.0 / 130.0 : 0.8;  // gen3+: 128b/130b, gen1/2: 8b/10b
  l.gbs = gts * l.width * encoding / 8.0;
  return l;
}

/// Milliseconds of the first and second kf::saxpy on 4096 floats (first includes module load / JIT).
std::pair<double, double> first_call_ms(int device) {
  cudaSetDevice(device);
  kf::device_buffer<float> x(4096), y(4096);
  double ms[2];
  for (double& m : ms) {
    const auto t0 = std::chrono::steady_clock::now();
    kf::saxpy(x.size(), 1.0f, x.data(), y.data());
    if (cudaDeviceSynchronize() != cudaSuccess) throw kf::error(kf::errc::cuda_runtime, "saxpy probe failed");
    m = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return {ms[0], ms[1]};
}

}  // namespace

double pcie_link_peak_gbs(int device) {
  char bus[32] = "";
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return link_of(bus).gbs;
}

std::vector<int> check_devices(report& r, const options& o, int& accessible) {
  accessible = 0;
  int count = 0;
  cudaGetDeviceCount(&count);
  r.heading(format("Devices (%d)", count));
  std::vector<int> usable;
  json devices = json::array();
  if (o.device >= count) {
    r.add({"devices",
           status::fail,
           format("--device %d: this machine has %d CUDA device(s), numbered from 0", o.device, count),
           {},
           format("pass --device 0 to %d", count - 1)});
  }
  for (int d = 0; d < count; ++d) {
    if (o.device >= 0 && d != o.device) continue;
    const std::string section = format("device %d", d);
    json facts = json::object();
    facts.set("ordinal", d);
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      cudaGetLastError();
      r.add({section, status::fail, "cannot query the device's properties", {}, "check nvidia-smi for this GPU"});
      devices.push(facts);
      continue;
    }
    const int cc = p.major * 10 + p.minor;
    std::size_t free_bytes = 0, total_bytes = p.totalGlobalMem;
    cudaSetDevice(d);
    const cudaError_t mem_status = cudaMemGetInfo(&free_bytes, &total_bytes);  // creates the context
    if (mem_status != cudaSuccess) {
      cudaGetLastError();
      r.add({section,
             status::fail,
             format("%s: cannot create a context (%s: %s)", p.name, cudaGetErrorName(mem_status),
                    cudaGetErrorString(mem_status)),
             {},
             "the GPU may be in exclusive-process compute mode and used by another process, or in a bad state: "
             "check nvidia-smi (compute mode, running processes, Xid errors in dmesg)"});
      devices.push(facts);
      continue;
    }
    ++accessible;
    char bus[32] = "";
    cudaDeviceGetPCIBusId(bus, sizeof bus, d);
    const pcie_link link = link_of(bus);
    kf::device_info info = kf::get_device_info(d);
    const double gib = 1024.0 * 1024.0 * 1024.0;
    facts.set("name", p.name)
        .set("compute_capability", format("%d.%d", p.major, p.minor))
        .set("sm_count", p.multiProcessorCount)
        .set("memory_total_bytes", static_cast<unsigned long long>(total_bytes))
        .set("memory_free_bytes", static_cast<unsigned long long>(free_bytes))
        .set("sm_clock_mhz", attribute(cudaDevAttrClockRate, d) / 1000)
        .set("memory_clock_mhz", attribute(cudaDevAttrMemoryClockRate, d) / 1000)
        .set("memory_bus_bits", attribute(cudaDevAttrGlobalMemoryBusWidth, d))
        .set("l2_cache_bytes", attribute(cudaDevAttrL2CacheSize, d))
        .set("pci_bus_id", bus)
        .set("pcie_link", link.width ? json(format("%s x%d (max %s x%d)", link.speed.c_str(), link.width,
                                                   link.max_speed.c_str(), link.max_width))
                                     : json())
        .set("pcie_peak_gbs", link.gbs > 0 ? json(link.gbs) : json())
        .set("peak_bandwidth_gbs", info.peak_bandwidth_gbs)
        .set("peak_fp32_tflops", info.peak_fp32_tflops)
        .set("ecc", attribute(cudaDevAttrEccEnabled, d) != 0)
        .set("compute_mode", attribute(cudaDevAttrComputeMode, d));
    check c{section,
            status::ok,
            format("%s, compute capability %d.%d (sm_%d), %d SMs", p.name, p.major, p.minor, cc, p.multiProcessorCount),
            {format("memory %.1f GiB total, %.1f GiB free; SM clock %d MHz, memory clock %d MHz, %d-bit bus",
                    total_bytes / gib, free_bytes / gib, attribute(cudaDevAttrClockRate, d) / 1000,
                    attribute(cudaDevAttrMemoryClockRate, d) / 1000, attribute(cudaDevAttrGlobalMemoryBusWidth, d)),
             std::string("PCI ") + bus +
                 (link.width ? format(", PCIe %s x%d (%.1f GB/s per direction; max %s x%d)", link.speed.c_str(),
                                      link.width, link.gbs, link.max_speed.c_str(), link.max_width)
                             : std::string()),
             format("peak (computed by kernelforge): %.0f GB/s memory, %.1f TFLOP/s FP32", info.peak_bandwidth_gbs,
                    info.peak_fp32_tflops)},
            ""};
    if (free_bytes < total_bytes / 10) {
      c.level = status::warn;
      c.fix = "less than 10% of the memory is free: other processes use this GPU (nvidia-smi lists them)";
    }
    r.add(c);

    // Kernel images.
    const image_kind k = images_for(cc);
    std::string archs;
    for (int a : kf::compiled_architectures()) archs += (archs.empty() ? "sm_" : ", sm_") + std::to_string(a);
    facts.set("kernel_image", k.machine_code ? "machine code" : k.ptx ? "ptx" : "none");
    try {
      kf::require_kernel_image(d);
      const auto [first, second] = first_call_ms(d);
      facts.set("first_call_ms", first).set("second_call_ms", second);
      if (k.machine_code) {
        r.add({section,
               status::ok,
               format("kernelforge holds machine code for sm_%d (first kf::saxpy call %.1f ms, loading included; next "
                      "%.2f ms)",
                      cc, first, second),
               {},
               ""});
      } else {
        r.add(
            {section,
             status::warn,
             format("kernelforge holds only PTX for sm_%d: kernels are JIT-compiled at first use (the first kf::saxpy "
                    "call took %.0f ms; each kernel's first call pays this, cached in ~/.nv/ComputeCache afterwards)",
                    cc, first),
             {},
             format("rebuild kernelforge with -DCMAKE_CUDA_ARCHITECTURES=%d (or add %d to the list) for machine code",
                    cc, cc)});
      }
      usable.push_back(d);
    } catch (const kf::error& e) {
      facts.set("kernel_image_error", e.what());
      r.add({section,
             status::fail,
             std::string(kf::to_string(e.code())) + ": " + e.what(),
             {},
             e.code() == kf::errc::no_kernel_image
                 ? format(
                       "reconfigure kernelforge with -DCMAKE_CUDA_ARCHITECTURES=%d (compiled now: %s) in a fresh build "
                       "directory, rebuild and reinstall",
                       cc, archs.c_str())
                 : "see the message above"});
    }
    devices.push(facts);
  }
  r.facts().set("devices", devices);
  return usable;
}

}  // namespace kf::doctor
