// SPDX-License-Identifier: Apache-2.0
// compiled_architectures() and the probe kernel. nvcc defines __CUDA_ARCH_LIST__
// (e.g. 750,800,860) for the virtual architectures this translation unit is
// compiled for, and kernelforge_ptx_sharing.inc (generated for the library
// target, cmake/kernelforge_library.cmake) names the real architectures built
// from another's PTX (sm_110 from compute_100): together, the library target's
// list. The answer comes from the build itself, never from a hard-coded table.
#include <algorithm>
#include <vector>

#include "kernelforge/device.hpp"
#include "kernelforge/kernels/arch/ptx_sharing.hpp"
#include "kernelforge/kernels/runtime/probe.hpp"

namespace kf {
namespace detail {
namespace {
__global__ void probe() {}

/// The KERNELFORGE_PTX_SHARING and KERNELFORGE_PTX_SHARING_BY_FILE pairs that apply to this
/// target, then a {0, 0} end marker.
constexpr ptx_shared_pair ptx_shared_pairs[] = {
#define KF_PTX_SHARED_PAIR(real, ptx) {real, ptx, false},
#define KF_PTX_SHARED_FILE_PAIR(real, ptx) {real, ptx, true},
#include "kernelforge_ptx_sharing.inc"
#undef KF_PTX_SHARED_PAIR
#undef KF_PTX_SHARED_FILE_PAIR
    {0, 0, false}};

/// A pair for every file must have the same device code at the source level; a
/// pair for listed files only is checked file by file, on their PTX
/// (scripts/compare_ptx.py --files, which .ci/run runs).
constexpr bool every_pair_has_the_same_device_code() {
  for (const ptx_shared_pair& p : ptx_shared_pairs) {
    if (p.real != 0 && !p.by_file && !same_device_code(p.real, p.ptx)) return false;
  }
  return true;
}
static_assert(every_pair_has_the_same_device_code(),
              "KERNELFORGE_PTX_SHARING pairs two architectures whose device code differs "
              "(kernels/arch/ptx_sharing.hpp: same_device_code); remove the pair");
}  // namespace

const void* probe_kernel() noexcept { return reinterpret_cast<const void*>(&probe); }
}  // namespace detail

std::vector<int> compiled_architectures() {
  std::vector<int> archs;
#ifdef __CUDA_ARCH_LIST__
  for (int a : {__CUDA_ARCH_LIST__}) archs.push_back(a / 10);  // 900 -> 90
#endif
  for (const detail::ptx_shared_pair& p : detail::ptx_shared_pairs) {
    if (p.real != 0) archs.push_back(p.real);
  }
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

}  // namespace kf
