// SPDX-License-Identifier: Apache-2.0
// math_mode: whether a family may use reduced-precision tensor-core arithmetic.
#pragma once

namespace kf {

/// exact: fp32 arithmetic (FFMA) throughout. tf32: tensor cores may round fp32
/// inputs to TF32 (10-bit mantissa, fp32 accumulation), about 1e-3 relative error.
enum class math_mode { exact, tf32 };

/// "exact" or "tf32", for messages and benchmark labels.
[[nodiscard]] const char* to_string(math_mode mode) noexcept;

}  // namespace kf
