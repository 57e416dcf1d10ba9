// SPDX-License-Identifier: Apache-2.0
// Step 6 -- tma_pipeline, host interface: what the filter2d launcher
// (filter2d.cu) calls. The kernel (06_tma_pipeline.cuh) and its launch
// (tma_sm90a.cu) are compiled for sm_90a only (src/filter2d/sources.cmake); without
// 90 in CMAKE_CUDA_ARCHITECTURES, tma_sm90a.cu compiles to stubs that return
// false. Applicability and the grid: tma_plan.hpp.
#pragma once

#include <cuda_runtime_api.h>

#include "args.cuh"
#include "tma_plan.hpp"

namespace kf::detail {

/// True when the tma_pipeline kernel is compiled into this library and
/// `device` is compute capability 9.0 (sm_90a code runs there only).
bool filter2d_tma_available(int device);

/// Enqueues `a` (filter2d_tma_unsupported_reason == nullptr for it) with the
/// tma_pipeline kernel on `device` (the current device) and returns true;
/// returns false, having enqueued nothing, when the kernel is not available on
/// it, the driver has no cuTensorMapEncodeTiled, or the tensor map cannot be
/// encoded.
bool filter2d_tma_try_launch(int device, const filter2d_args<float>& a, cudaStream_t stream);

}  // namespace kf::detail
