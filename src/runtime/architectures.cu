// SPDX-License-Identifier: Apache-2.0
// compiled_architectures() and the probe kernel. nvcc defines __CUDA_ARCH_LIST__
// (e.g. 750,800,860) for the architectures this translation unit is compiled
// for, which is the library target's list: the answer comes from the build
// itself, never from a hard-coded table.
#include <algorithm>
#include <vector>

#include "kernelforge/device.hpp"
#include "kernelforge/kernels/runtime/probe.hpp"

namespace kf {
namespace detail {
namespace {
__global__ void probe() {}
}  // namespace

const void* probe_kernel() noexcept { return reinterpret_cast<const void*>(&probe); }
}  // namespace detail

std::vector<int> compiled_architectures() {
  std::vector<int> archs;
#ifdef __CUDA_ARCH_LIST__
  for (int a : {__CUDA_ARCH_LIST__}) archs.push_back(a / 10);  // 900 -> 90
#endif
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

}  // namespace kf
