// SPDX-License-Identifier: Apache-2.0
// Step 7 (warp_tiled) compiled for the library: its launcher with the fused
// bias / ReLU epilogue (which plain calls run with nothing enabled; matmul.cu,
// dispatch_epilogue_steps), the probe of the image's tuning that steps 7 and 8
// and `best` use, and the split-k reduction of steps 7 and 8 (instances.cuh
// declares them for the family's other translation units).
#include "instances.cuh"

namespace kf::detail {

template warp_tiled_tuning_id warp_tiled_tuning_of<fused_epilogue>(int, const char*);
template void launch_warp_tiled<float, fused_epilogue>(const gemm_args<float>&, cudaStream_t, const fused_epilogue&,
                                                       const char*);
template void split_k_workspace::reduce<float, fused_epilogue>(const gemm_args<float>&, const fused_epilogue&,
                                                               cudaStream_t) const;

}  // namespace kf::detail
