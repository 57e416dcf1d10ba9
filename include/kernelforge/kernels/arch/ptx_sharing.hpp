// SPDX-License-Identifier: Apache-2.0
// When the library may build one architecture's machine code from another's PTX.
//
// nvcc compiles a translation unit in two stages per architecture: the front end
// (cicc) writes PTX for a virtual architecture (compute_100), then ptxas turns
// that PTX into machine code for a real one (sm_100). The front end is about two
// thirds of the time. Where two architectures get the same PTX, one front-end
// pass can feed both: `-gencode arch=compute_100,code=[sm_100,sm_110]` puts
// sm_110 machine code in the fatbin, the instructions that compute_110's own
// pass would give. KERNELFORGE_PTX_SHARING (cmake/kernelforge_library.cmake)
// lists such pairs; with CUDA 13.0 the library's PTX for compute_110 equals its
// PTX for compute_100 in every translation unit (scripts/compare_ptx.py).
// KERNELFORGE_PTX_SHARING_BY_FILE lists pairs that hold in some translation units
// only (compute_103 and compute_100: 11 of 17; compute_120 and compute_100: 14;
// compute_86 and compute_80, compute_89 and compute_80: 12; compute_89 and
// compute_86 for the 3 SIMT matrix steps), each with the list of those units
// (cmake/ptx_sharing_<real>_<ptx>.txt); the others keep their own front-end pass.
// Such a pair may cross a threshold below (89:80 and 89:86 do: the listed files
// do not read KF_ARCH_SM89; 86:80, 89:80 and 120:100 the SIMT matrix tuning, which
// the listed files do not read), so it is checked on the listed files' PTX
// (scripts/compare_ptx.py --files, run by .ci/run) rather than by same_device_code.
//
// same_device_code() is the source-level half of that condition: the library's
// device code reads the architecture only through the guards of guards.cuh
// (KF_ARCH_SM80 / SM89 / SM90; sm_90a objects are a target of their own) and
// warp_tiled_tuning_for(__CUDA_ARCH__ / 10) (matmul/plan.hpp). A new test of
// __CUDA_ARCH__ belongs in this function; tests/core/check_arch_conditions.cmake
// fails the build's tests when one appears elsewhere. src/runtime/architectures.cu
// checks every configured pair against it at compile time.
#pragma once

#include "../matmul/plan.hpp"

namespace kf::detail {

/// The compute capabilities (major * 10 + minor) at which guards.cuh's macros change.
inline constexpr int device_code_thresholds[] = {80, 89, 90};

/// True when the library's device code is the same for compute capability
/// `real_cc` as for `ptx_cc`, so `real_cc`'s machine code may be built from
/// `ptx_cc`'s PTX (which runs only on its own architecture and newer ones).
constexpr bool same_device_code(int real_cc, int ptx_cc) {
  if (ptx_cc > real_cc) return false;
  for (int threshold : device_code_thresholds) {
    if ((real_cc >= threshold) != (ptx_cc >= threshold)) return false;
  }
  return warp_tiled_tuning_for(real_cc) == warp_tiled_tuning_for(ptx_cc);
}

/// A pair of KERNELFORGE_PTX_SHARING (by_file: of KERNELFORGE_PTX_SHARING_BY_FILE, for the
/// files its list names): `real`'s machine code is built from `ptx`'s PTX.
struct ptx_shared_pair {
  int real;
  int ptx;
  bool by_file;
};

}  // namespace kf::detail
