// SPDX-License-Identifier: Apache-2.0
// FP8 step 3, the wgmma GEMM's instances with float output (scaled_wgmma_sm90a.cuh).
#include "scaled_wgmma_sm90a.cuh"

KF_INSTANTIATE_SCALED_WGMMA_FOR(float)
