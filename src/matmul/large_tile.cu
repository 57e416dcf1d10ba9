// SPDX-License-Identifier: Apache-2.0
// Step 8 (large_tile) compiled for the library with the identity epilogue,
// which plain calls run (both tunings, both orientations, every transpose and
// copy path), in a translation unit of its own so that it compiles in parallel
// with the rest (instances.cuh declares it for the others).
#include "instances.cuh"

namespace kf::detail {

template void launch_large_tile<epilogue::identity>(const gemm_args<float>&, cudaStream_t, const epilogue::identity&);

}  // namespace kf::detail
