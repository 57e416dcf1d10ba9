// SPDX-License-Identifier: Apache-2.0
// Step 8 (large_tile) compiled for the library with the identity epilogue,
// which aligned plain calls run (both tunings, both orientations, every
// transpose; 16-byte copies only: misaligned plain calls take the fused
// kernels with nothing enabled, matmul.cu), in a translation unit of its own so that it compiles in parallel
// with the rest (instances.cuh declares it for the others).
#include "instances.cuh"

namespace kf::detail {

template void launch_large_tile<epilogue::identity, true>(const gemm_args<float>&, cudaStream_t,
                                                          const epilogue::identity&);
// The identity split-k reduction, for the wgmma TF32 step too (split_k_instances.cuh).
template void split_k_workspace::reduce<float, epilogue::identity>(const gemm_args<float>&, const epilogue::identity&,
                                                                   cudaStream_t) const;

}  // namespace kf::detail
