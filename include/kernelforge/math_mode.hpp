// SPDX-License-Identifier: Apache-2.0
// math_mode: whether a family may use reduced-precision tensor-core arithmetic.
#pragma once

namespace kf {

/// exact: fp32 arithmetic (FFMA) throughout. tf32: tensor cores may round fp32
/// inputs to TF32 (10-bit mantissa, fp32 accumulation), about 1e-3 relative error.
/// fp32_emulated: fp32 accuracy on TF32 tensor cores -- each operand split into
/// two TF32 parts, three products per pair, partial sums promoted into fp32
/// every 32 of k (matmul steps 15, wgmma, and 16, mma.sync). The tests hold it to the exact steps' error
/// on uniform, randn and wide-magnitude inputs, and to their infinities and
/// NaNs; subnormal inputs (|x| < 2^-126) keep fewer bits (TF32's bit positions:
/// up to ~2^-8 relative for x near 2^-130; scale such data, or use exact).
/// kf::matmul (variant best) on float: step 15 on compute capability 9.0 with
/// the library's sm_90a image, step 16 on any other of 8.0 or newer
/// (errc::unsupported below 8.0). kf::conv2d_forward (step 9; variant best):
/// compute capability 9.0 with the sm_90a image only (errc::unsupported
/// elsewhere, and in the conv2d gradients). Never chosen unless asked for.
/// Short sums (matmul k < 128; conv2d C R S < 128 or C < 32, strides > 8) run
/// the exact kernels, which are never less accurate.
enum class math_mode { exact, tf32, fp32_emulated };

/// "exact", "tf32" or "fp32_emulated", for messages and benchmark labels.
[[nodiscard]] const char* to_string(math_mode mode) noexcept;

}  // namespace kf
