// SPDX-License-Identifier: Apache-2.0
// Device queries and the per-device caches behind every launcher.
#include <cstdint>
#include <sstream>
#include <string>

#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/kernels/runtime/probe.hpp"

namespace kf {
namespace detail {
namespace {

int resolve_device(int device, const char* what) {
  if (device >= 0) {
    int count = 0;
    cuda_check(cudaGetDeviceCount(&count), what);
    if (device >= count) {
      throw error(errc::invalid_argument, std::string(what) + ": device " + std::to_string(device) +
                                              " does not exist; this machine has " + std::to_string(count) +
                                              " CUDA device(s), numbered from 0");
    }
    return device;
  }
  return current_device(what);
}

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  cuda_check(cudaDeviceGetAttribute(&value, attr, device), "kf::get_device_info");
  return value;
}

// FP32 lanes per SM, by compute capability (CUDA C Programming Guide, arithmetic throughput table).
int fp32_lanes_per_sm(int major, int minor) {
  if (major == 7 || (major == 8 && minor == 0)) return 64;
  return 128;
}

std::string architecture_list() {
  std::ostringstream out;
  const auto archs = compiled_architectures();
  for (std::size_t i = 0; i < archs.size(); ++i) out << (i ? ", " : "") << "sm_" << archs[i];
  return out.str();
}

// Switches to `device` for the lifetime of the guard (queries that have no device argument).
class device_guard {
 public:
  explicit device_guard(int device) {
    cudaGetDevice(&previous_);
    if (previous_ != device) cudaSetDevice(device);
  }
  ~device_guard() {
    int now = 0;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

int current_device(const char* what) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), what);
  return device;
}

void require_kernel_image_cached(int device, const char* what) {
  static per_device<kernel_profile> probe;
  probe.get(device, [what](kernel_profile& p, int d) { query_kernel_profile(p, probe_kernel(), d, what); });
}

void require_cacheable_device(int device) {
  if (device < 0 || device >= max_cached_devices) {
    throw error(errc::unsupported, "kernelforge caches at most " + std::to_string(max_cached_devices) +
                                       " devices; device " + std::to_string(device) + " is beyond that");
  }
}

const device_limits& limits_for(int device) {
  static per_device<device_limits> limits;
  return limits.get(device, [](device_limits& l, int d) {
    const char* what = "kernelforge device query";
    cuda_check(cudaDeviceGetAttribute(&l.sm_count, cudaDevAttrMultiProcessorCount, d), what);
    cuda_check(cudaDeviceGetAttribute(&l.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, d), what);
    cuda_check(cudaDeviceGetAttribute(&l.max_threads_per_block, cudaDevAttrMaxThreadsPerBlock, d), what);
    int grid_x = 0;
    cuda_check(cudaDeviceGetAttribute(&grid_x, cudaDevAttrMaxGridDimX, d), what);
    l.max_grid_x = static_cast<std::uint32_t>(grid_x);
    cuda_check(cudaDeviceGetAttribute(&l.cc_major, cudaDevAttrComputeCapabilityMajor, d), what);
    cuda_check(cudaDeviceGetAttribute(&l.cc_minor, cudaDevAttrComputeCapabilityMinor, d), what);
    int smem_optin = 0;
    cuda_check(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, d), what);
    l.max_smem_per_block_optin = static_cast<std::size_t>(smem_optin);
  });
}

cudaMemPool_t workspace_pool(int device) {
  static per_device<cudaMemPool_t> pools;
  return pools.get(device, [](cudaMemPool_t& result, int device) {
    result = nullptr;
    int supported = 0;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess || !supported) {
      cudaGetLastError();
      return;
    }
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    std::uint64_t keep_everything = ~std::uint64_t{0};
    if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything) != cudaSuccess) {
      cudaGetLastError();
    }
    result = pool;
  });
}

void throw_no_kernel_image(int device, const char* what) {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  cudaGetLastError();  // the failed load is not sticky; leave no error behind
  const std::string sm = std::to_string(major * 10 + minor);
  throw error(errc::no_kernel_image,
              std::string(what) + ": kernelforge has no kernel image for device " + std::to_string(device) + " (" +
                  prop.name + ", compute capability " + std::to_string(major) + "." + std::to_string(minor) + ", sm_" +
                  sm + "). The library was compiled for: " + architecture_list() +
                  ". Rebuild kernelforge with -DCMAKE_CUDA_ARCHITECTURES=" + sm + " (or add " + sm +
                  " to your list, or leave CMAKE_CUDA_ARCHITECTURES unset to get every "
                  "architecture your CUDA toolkit supports).");
}

void throw_needs_compute_capability(const char* what, int device, int min_cc, const std::string& feature,
                                    const char* fix) {
  const int cc = compute_capability(device);
  throw error(errc::unsupported, std::string(what) + ": " + feature + " needs compute capability " +
                                     std::to_string(min_cc / 10) + "." + std::to_string(min_cc % 10) + " (sm_" +
                                     std::to_string(min_cc) + ") or newer; device " + std::to_string(device) + " is " +
                                     std::to_string(cc / 10) + "." + std::to_string(cc % 10) + "; " + fix);
}

void query_kernel_profile(kernel_profile& p, const void* kernel, int device, const char* what) {
  cudaFuncAttributes attrs{};
  const cudaError_t status = cudaFuncGetAttributes(&attrs, kernel);
  if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) {
    throw_no_kernel_image(device, what);
  }
  cuda_check(status, what);
  p.max_threads_per_block = attrs.maxThreadsPerBlock;
  p.ptx_version = attrs.ptxVersion;
  p.binary_version = attrs.binaryVersion;
  for (int warps = 1; warps <= static_cast<int>(p.occupancy.size()); ++warps) {
    const int block = warps * 32;
    int blocks = 0;
    if (block <= attrs.maxThreadsPerBlock) {
      cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, 0), what);
    }
    p.occupancy[warps - 1] = blocks;
  }
  p.default_block = choose_block_size(p.occupancy);
  if (p.default_block == 0) {
    throw error(errc::unsupported, std::string(what) + ": the kernel cannot launch any block size on device " +
                                       std::to_string(device) + " (registers or shared memory exceed the SM)");
  }
}

void set_dynamic_smem_limit(const void* kernel, int bytes, const char* what) {
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), what);
}

int blocks_per_sm_with_smem(const void* kernel, int threads, std::size_t smem_bytes, int device, const char* what) {
  int blocks = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem_bytes), what);
  if (blocks == 0) {
    throw error(errc::unsupported, std::string(what) + ": a block of " + std::to_string(threads) + " threads with " +
                                       std::to_string(smem_bytes) + " bytes of shared memory cannot run on device " +
                                       std::to_string(device) + "; adjust the family's tuning.hpp");
  }
  return blocks;
}

int active_clusters_with_smem(const void* kernel, int threads, std::size_t smem_bytes, int cluster, int device,
                              const char* what) {
  if (cluster <= 1) {
    return blocks_per_sm_with_smem(kernel, threads, smem_bytes, device, what) * limits_for(device).sm_count;
  }
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config =
      cluster_launch_config(dim3(static_cast<unsigned>(cluster)), dim3(static_cast<unsigned>(threads)), smem_bytes,
                            nullptr, cluster, attribute);
  int clusters = 0;
  cuda_check(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config), what);
  if (clusters == 0) {
    throw error(errc::unsupported, std::string(what) + ": no cluster of " + std::to_string(cluster) + " blocks of " +
                                       std::to_string(threads) + " threads with " + std::to_string(smem_bytes) +
                                       " bytes of shared memory fits on device " + std::to_string(device));
  }
  return clusters;
}

int resolve_block_size(const kernel_profile& profile, int requested, const char* what) {
  if (requested == 0) return profile.default_block;
  if (requested > profile.max_threads_per_block || profile.occupancy[requested / 32 - 1] == 0) {
    throw error(errc::unsupported, std::string(what) + ": options.block_size = " + std::to_string(requested) +
                                       " cannot launch this kernel on this device (it allows at most " +
                                       std::to_string(profile.max_threads_per_block) +
                                       " threads per block); pass 0 to let the launcher choose");
  }
  return requested;
}

}  // namespace detail

device_info get_device_info(int device) {
  const char* what = "kf::get_device_info";
  const int d = detail::resolve_device(device, what);
  cudaDeviceProp prop{};
  detail::cuda_check(cudaGetDeviceProperties(&prop, d), what);
  device_info info;
  info.name = prop.name;
  info.device = d;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.global_memory_bytes = prop.totalGlobalMem;
  const double mem_clock_khz = detail::attribute(cudaDevAttrMemoryClockRate, d);
  const double bus_bits = detail::attribute(cudaDevAttrGlobalMemoryBusWidth, d);
  info.peak_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  const double sm_clock_khz = detail::attribute(cudaDevAttrClockRate, d);
  info.peak_fp32_tflops =
      info.sm_count * detail::fp32_lanes_per_sm(prop.major, prop.minor) * 2.0 * sm_clock_khz * 1e3 / 1e12;
  return info;
}

void require_kernel_image(int device) {
  const char* what = "kf::require_kernel_image";
  const int d = detail::resolve_device(device, what);
  detail::device_guard guard(d);
  cudaFuncAttributes attrs{};
  const cudaError_t status = cudaFuncGetAttributes(&attrs, detail::probe_kernel());
  if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) {
    detail::throw_no_kernel_image(d, what);
  }
  detail::cuda_check(status, what);
}

}  // namespace kf
