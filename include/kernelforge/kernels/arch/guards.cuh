// SPDX-License-Identifier: Apache-2.0
// The architecture guards every PTX wrapper in kernels/arch is written under.
// One macro per instruction generation, so a wrapper states the one condition it
// needs, and the host pass (no __CUDA_ARCH__) still sees every declaration.
//   KF_ARCH_SM80:  cp.async, mma.sync TF32, cvt.rna.tf32 (compute capability 8.0+)
//   KF_ARCH_SM89:  mma.sync with FP8 operands (e4m3 / e5m2; compute capability 8.9+)
//   KF_ARCH_SM90:  stmatrix (compute capability 9.0+, no architecture-specific target needed)
//   KF_ARCH_SM90A: wgmma, TMA, mbarrier transactions, clusters, setmaxnreg
//                  (the architecture-specific sm_90a target only)
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KF_ARCH_SM80 1
#else
#define KF_ARCH_SM80 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define KF_ARCH_SM89 1
#else
#define KF_ARCH_SM89 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KF_ARCH_SM90 1
#else
#define KF_ARCH_SM90 0
#endif

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KF_ARCH_SM90A 1
#else
#define KF_ARCH_SM90A 0
#endif
