// SPDX-License-Identifier: Apache-2.0
// kernelforge: the umbrella header. Host-only C++17; compiles with g++ or clang
// without nvcc (it needs the CUDA toolkit's include directory on the path).
// The CPU references (kernelforge/reference/*.hpp) are not part of it:
// include them where you check results.
#pragma once

#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/math_mode.hpp"
#include "kernelforge/pinned_buffer.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/scaled_matmul.hpp"
#include "kernelforge/types.hpp"
#include "kernelforge/version.hpp"
