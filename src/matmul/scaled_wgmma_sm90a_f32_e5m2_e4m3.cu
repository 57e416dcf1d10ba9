// SPDX-License-Identifier: Apache-2.0
// FP8 step 3, the wgmma GEMM's instances for e5m2 x e4m3 operands with float output
// (scaled_wgmma_sm90a.cuh; one translation unit per operand pair and output type).
#include "scaled_wgmma_sm90a.cuh"

KF_INSTANTIATE_SCALED_WGMMA(__nv_fp8_e5m2, __nv_fp8_e4m3, float)
