// SPDX-License-Identifier: Apache-2.0
// Step 14, the __half instances of the wgmma GEMM (wgmma_sm90a_16bit.cuh; the
// __nv_bfloat16 ones: wgmma_sm90a_bf16.cu, which compiles in parallel).
#include <cuda_fp16.h>

#include "wgmma_sm90a_16bit.cuh"

KF_DEFINE_WGMMA_16BIT(__half)
