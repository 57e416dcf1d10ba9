// kernelforge: the umbrella header. Host-only C++17; compiles with g++ or clang
// without nvcc (it needs the CUDA toolkit's include directory on the path).
#pragma once

#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/version.hpp"
