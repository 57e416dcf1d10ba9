// SPDX-License-Identifier: Apache-2.0
// Step 14, the __nv_bfloat16 instances of the wgmma GEMM (wgmma_sm90a_16bit.cuh;
// the __half ones: wgmma_sm90a_f16.cu, which compiles in parallel).
#include <cuda_bf16.h>

#include "wgmma_sm90a_16bit.cuh"

KF_DEFINE_WGMMA_16BIT(__nv_bfloat16)
