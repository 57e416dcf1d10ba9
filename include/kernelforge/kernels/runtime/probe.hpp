// SPDX-License-Identifier: Apache-2.0
// A do-nothing kernel compiled for the library's architecture list: if the
// runtime cannot load it on a device, no kernelforge kernel can run there.
#pragma once

namespace kf::detail {
const void* probe_kernel() noexcept;
}
