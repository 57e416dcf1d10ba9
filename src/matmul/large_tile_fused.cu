// SPDX-License-Identifier: Apache-2.0
// Step 8 (large_tile) compiled for the library with the fused bias / ReLU
// epilogue (options.bias / options.relu), beside large_tile.cu's identity
// kernels (instances.cuh declares it for the family's other translation units).
#include "instances.cuh"

namespace kf::detail {

template void launch_large_tile<fused_epilogue>(const gemm_args<float>&, cudaStream_t, const fused_epilogue&);

}  // namespace kf::detail
