// SPDX-License-Identifier: Apache-2.0
// kernelforge-doctor, section 1: the CUDA driver (present? recent enough for the
// runtime kernelforge was built with?), the host, and the environment variables
// that change what a CUDA program sees.
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include <cuda_runtime_api.h>

#include "doctor.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/version.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/utsname.h>
#endif

namespace kf::doctor {
namespace {

/// The kernel module's version ("580.65.06") from /proc on Linux; empty elsewhere.
std::string kernel_module_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return {};
  std::smatch m;
  if (std::regex_search(line, m, std::regex(R"((\d{3,}\.\d+(\.\d+)?))"))) return m[1];
  return {};
}

/// The oldest Linux driver branch a CUDA major version needs (CUDA release notes).
const char* minimum_driver_for(int runtime_version) {
  switch (runtime_version / 1000) {
    case 13: return "580";
    case 12: return "525";
    case 11: return "450";
    default: return "a recent";
  }
}

std::string host_description() {
#if defined(__unix__) || defined(__APPLE__)
  utsname u{};
  if (uname(&u) == 0) return std::string(u.sysname) + " " + u.release + " " + u.machine;
#endif
#if defined(_WIN32)
  return "Windows";
#else
  return "unknown";
#endif
}

struct variable {
  const char* name;
  const char* effect;  ///< what it does when set
  bool (*harmful)(const std::string& value);
  const char* fix;
};

bool never(const std::string&) { return false; }
bool is_one(const std::string& v) { return v == "1"; }
bool is_zero(const std::string& v) { return v == "0"; }
bool is_empty_or_none(const std::string& v) { return v.empty() || v == "-1" || v == "none" || v == "NoDevFiles"; }

const variable variables[] = {
    {"CUDA_VISIBLE_DEVICES",
     "only the GPUs listed are visible, renumbered from 0 in that order (device 0 here may not be GPU 0 in "
     "nvidia-smi)",
     is_empty_or_none, "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. CUDA_VISIBLE_DEVICES=0)"},
    {"CUDA_DEVICE_ORDER",
     "changes how devices are numbered (PCI_BUS_ID matches nvidia-smi; FASTEST_FIRST is the default)", never, ""},
    {"CUDA_MODULE_LOADING",
     "LAZY (the default since CUDA 12.2) loads each kernel at first use; EAGER loads every kernel at start-up "
     "(slower start, more memory)",
     never, ""},
    {"NVIDIA_TF32_OVERRIDE",
     "0 forbids TF32 in cuBLAS and cuDNN (the benchmarks' vendor baselines run in exact FP32); kernelforge's own "
     "math_mode is not affected",
     is_zero, "unset NVIDIA_TF32_OVERRIDE when benchmarking against cuBLAS/cuDNN TF32"},
    {"CUDA_LAUNCH_BLOCKING",
     "1 makes every kernel launch synchronous: streams no longer overlap and timings include launch waits", is_one,
     "unset CUDA_LAUNCH_BLOCKING (use it only to locate a faulting kernel)"},
    {"CUDA_FORCE_PTX_JIT", "1 ignores machine code and JIT-compiles PTX at first use (slow first calls)", is_one,
     "unset CUDA_FORCE_PTX_JIT"},
    {"CUDA_DISABLE_PTX_JIT", "1 forbids JIT compilation: GPUs that only have PTX cannot run anything", is_one,
     "unset CUDA_DISABLE_PTX_JIT, or build kernelforge with machine code for this GPU"},
    {"CUDA_CACHE_DISABLE", "1 disables the JIT cache: PTX is compiled again in every process", is_one,
     "unset CUDA_CACHE_DISABLE"},
    {"CUDA_CACHE_PATH", "where JIT-compiled kernels are cached (default ~/.nv/ComputeCache)", never, ""},
};

void check_environment(report& r) {
  json env = json::object();
  int set_count = 0;
  for (const variable& v : variables) {
    const char* value = std::getenv(v.name);
    env.set(v.name, value ? json(value) : json());
    if (value == nullptr) continue;
    ++set_count;
    const bool harmful = v.harmful(value);
    check c{"environment",
            harmful ? status::warn : status::ok,
            std::string(v.name) + "=\"" + value + "\": " + v.effect,
            {},
            harmful ? v.fix : ""};
    r.add(c);
  }
  r.facts().set("environment", env);
  if (set_count == 0) {
    r.add({"environment",
           status::ok,
           "none of CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, CUDA_MODULE_LOADING, NVIDIA_TF32_OVERRIDE, "
           "CUDA_LAUNCH_BLOCKING, CUDA_FORCE_PTX_JIT, CUDA_DISABLE_PTX_JIT, CUDA_CACHE_DISABLE is set",
           {},
           ""});
  }
}

}  // namespace

bool check_driver_and_environment(report& r) {
  json build = json::object();
  build.set("kernelforge_version", KERNELFORGE_VERSION_STRING);
  build.set("cuda_runtime_built_with", cuda_version_string(CUDART_VERSION));
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  build.set("cuda_runtime_loaded", cuda_version_string(runtime));
  json archs = json::array();
  for (int a : kf::compiled_architectures()) archs.push(a);
  build.set("compiled_architectures", archs);
  build.set("cmake_cuda_architectures", KF_DOCTOR_CUDA_ARCHITECTURES);
  r.facts().set("kernelforge", build);
  r.facts().set("host", json::object().set("os", host_description()));

  r.heading("CUDA driver");
  json driver = json::object();
  int driver_version = 0;
  const cudaError_t version_status = cudaDriverGetVersion(&driver_version);
  const std::string module = kernel_module_version();
  driver.set("cuda_version", driver_version ? json(cuda_version_string(driver_version)) : json());
  driver.set("kernel_module_version", module.empty() ? json() : json(module));
  int count = 0;
  const cudaError_t count_status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  driver.set("device_count", count_status == cudaSuccess ? count : 0);
  driver.set("cuda_status", cudaGetErrorName(count_status));
  r.facts().set("driver", driver);

  const std::string built = cuda_version_string(CUDART_VERSION);
  bool usable = true;
  if (version_status != cudaSuccess || driver_version == 0) {
#if defined(__APPLE__)
    r.add({"driver",
           status::fail,
           "no CUDA driver: macOS has no CUDA (NVIDIA stopped supporting it after CUDA 10.2)",
           {},
           "use a Linux machine with an NVIDIA GPU, or a remote one (a cloud GPU instance), and run there"});
#else
    r.add({"driver",
           status::fail,
           "no NVIDIA driver found (libcuda cannot be loaded" +
               (module.empty() ? std::string(", and /proc/driver/nvidia/version does not exist)") : std::string(")")) +
               ": this machine cannot run CUDA programs",
           {},
           "on a machine with an NVIDIA GPU install the NVIDIA driver (" +
               std::string(minimum_driver_for(CUDART_VERSION)) + " or newer for CUDA " + built +
               ") and reboot; in a container, run it with the GPU passed in "
               "(docker run --gpus all); without a GPU, use a remote Linux machine with one"});
#endif
    usable = false;
  } else if (driver_version < CUDART_VERSION || count_status == cudaErrorInsufficientDriver) {
    r.add({"driver",
           status::fail,
           "the driver is too old: it supports CUDA " + cuda_version_string(driver_version) +
               ", but kernelforge was built with the CUDA " + built + " runtime" +
               (module.empty() ? "" : " (driver " + module + ")"),
           {},
           "upgrade the NVIDIA driver to " + std::string(minimum_driver_for(CUDART_VERSION)) + " or newer (CUDA " +
               built + "), or rebuild kernelforge with a CUDA toolkit no newer than " +
               cuda_version_string(driver_version)});
    usable = false;
  } else {
    r.add({"driver",
           status::ok,
           "NVIDIA driver " + (module.empty() ? std::string("(version unknown)") : module) + " supports CUDA " +
               cuda_version_string(driver_version) + " >= the CUDA " + built + " runtime kernelforge was built with",
           {},
           ""});
  }

  if (usable && count_status != cudaSuccess) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    r.add({"devices",
           status::fail,
           std::string("the driver reports no usable device (") + cudaGetErrorName(count_status) + ": " +
               cudaGetErrorString(count_status) + ")",
           {},
           visible
               ? "CUDA_VISIBLE_DEVICES=\"" + std::string(visible) + "\" may hide every GPU: unset it or fix the list"
               : "check that nvidia-smi lists a GPU; in a container pass the GPU in (docker run --gpus all)"});
    usable = false;
  } else if (usable && count == 0) {
    r.add({"devices",
           status::fail,
           "the driver is loaded but reports 0 CUDA devices",
           {},
           "check nvidia-smi and CUDA_VISIBLE_DEVICES"});
    usable = false;
  }
  r.heading("Environment");
  check_environment(r);
  return usable;
}

}  // namespace kf::doctor
