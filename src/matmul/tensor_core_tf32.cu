// SPDX-License-Identifier: Apache-2.0
// Step 9 (the mma.sync TF32 kernel) compiled for the library with the fused
// bias / ReLU epilogue, which plain calls run with nothing enabled: what
// tensor_core_tf32 runs where wgmma does not (instances.cuh declares it for the
// family's other translation units).
#include "instances.cuh"

namespace kf::detail {

template void launch_tensor_core_tf32<fused_epilogue>(const gemm_args<float>&, cudaStream_t, const fused_epilogue&,
                                                      const char*);

}  // namespace kf::detail
