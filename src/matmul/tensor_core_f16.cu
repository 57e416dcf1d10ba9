// SPDX-License-Identifier: Apache-2.0
// Step 10 (the mma.sync fp16 / bf16 kernel) compiled for the library, for
// __half and __nv_bfloat16: what tensor_core_f16 and wgmma_f16 run where wgmma
// does not (instances.cuh declares it for the family's other translation units).
#include "instances.cuh"

namespace kf::detail {

template void launch_tensor_core_f16<__half>(const gemm_args<__half>&, cudaStream_t);
template void launch_tensor_core_f16<__nv_bfloat16>(const gemm_args<__nv_bfloat16>&, cudaStream_t);

}  // namespace kf::detail
