// kernelforge: the umbrella header. Host-only C++17; compiles with g++ or clang
// without nvcc (it needs the CUDA toolkit's include directory on the path).
#pragma once

#include "kernelforge/conv.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/math_mode.hpp"
#include "kernelforge/pinned_buffer.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/matmul.hpp"
#include "kernelforge/version.hpp"
