// SPDX-License-Identifier: Apache-2.0
// The convolution family: image filters (filter2d) and batched NCHW forward
// convolution (conv2d_forward). Each call validates its arguments, enqueues its
// work on options.stream and returns without synchronizing the host.
//
// filter2d: out[c][y][x] = sum over (i, j) of filter[i][j] * in[c][y + i - r/2][x + j - s/2]
//   (cross-correlation, the deep-learning convention; for even sizes the anchor
//   is (r/2, s/2), so a 4x4 filter reaches 2 rows up and 1 row down).
//   - Planes of height x width; row pitch (in elements, >= width) for input and
//     output separately; channel c starts at c * height * pitch. Only the
//     `width` elements of each output row are written: pitch padding is untouched.
//   - `filter` is r x s, row-major, in device memory; 1 <= r, s <= 31.
//   - Borders: see kf::border. Precompiled for float and __half (fp32
//     accumulation, one rounding at the end) and double (naive only).
//   - `in` and `out` must not overlap (the filter reads neighbours).
//   - Empty images (channels, height or width 0) are a no-op.
//   - Separable filters: filter2d_variant::best checks, on the device, whether a
//     large filter (r, s > 1, r * s > 25) is rank one, and if it is, runs a row
//     pass then a column pass inside each tile (r + s multiply-adds per output
//     instead of r * s). The check cannot be done on the host without copying
//     the filter back (a synchronization), so each thread block tests the
//     filter it has already staged in shared memory: filter[i][j] must equal
//     u[i] * v[j] within 8 units of roundoff of T, relative to |filter[i][j]|,
//     where u is the column and v the row through the largest entry. A filter
//     that fails (or holds NaN or inf) takes the ordinary 2D path in the same
//     kernel. The separable result differs from the 2D one only by rounding.
//   - filter2d_variant::register_window (float; 3x3 and 5x5) keeps each thread's
//     window of the image in registers and re-reads the halo from L1/L2 rather
//     than staging it in shared memory. It needs 16-byte aligned `in` and `out`
//     and pitches that are multiples of 4; calls that miss a condition (or use
//     another filter size) run smem_tiled, with the same results up to rounding.
//     filter2d_variant::rolling_window has the same requirements and fallback; it
//     walks each thread down a long strip with a fixed number of rows in flight.
//     `best` runs one of the two for float 3x3 and 5x5 on aligned rows.
//   - filter2d_variant::tma_pipeline (float; 3x3 and 5x5; border::zero; sm_90)
//     decouples loading from computing: TMA copies of the image into a ring of
//     shared-memory stages, read by separate consumer warps. It has no fallback:
//     a call it cannot run (type, size, border, alignment, device, a build
//     without 90 in CMAKE_CUDA_ARCHITECTURES) is errc::unsupported saying why.
//   - filter2d_variant::constant_memory stages the filter in __constant__ memory
//     with an asynchronous device-to-device copy. A small ring of constant slots,
//     guarded by a host mutex and one event per slot, keeps concurrent calls on
//     different streams from overwriting a filter another launch still reads;
//     the stream waits on the slot's event on the GPU, never the host. It does
//     not support stream capture into CUDA graphs (the slot event is recorded
//     outside the capture); the other variants do.
//
// conv2d_forward: y[n][k][p][q] = bias[k] + sum over (c, r, s) of
//   weight[k][c][r][s] * x[n][c][p * stride_h - pad_h + r * dilation_h][q * stride_w - pad_w + s * dilation_w]
//   (zero outside the input), NCHW input, KCRS filter, NKPQ output, all dense.
//   - params.layout = conv2d_layout::nhwc: NHWC input, KRSC filter, NPQK output
//     (PyTorch's channels_last memory order): see "channels_last" below.
//   - P = (H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h + 1, Q likewise;
//     geometry that gives P or Q < 1, a stride or dilation of 0, or C, H, W, R or
//     S of 0 is errc::invalid_argument with the numbers. N = 0 or K = 0 is a no-op.
//   - Tensors of 2^31 elements or more are errc::unsupported (32-bit indexing).
//   - bias may be null (no bias). y must not overlap x, weight or bias.
//   - conv2d_params names the extents (batch, in_channels, in_height, in_width,
//     out_channels, filter_height, filter_width); below, N C H W K R S for short.
//   - math_mode::tf32 allows tensor cores with TF32 inputs (about 1e-3 relative
//     error, sm_80+); implicit_gemm_tf32 requires it (else invalid_argument) and
//     a device of compute capability 8.0 or newer (else unsupported). `best`
//     uses it on sm_80+ when math is tf32, and implicit_gemm otherwise.
//   - math_mode::fp32_emulated (float, variant best; compute capability 9.0 and
//     a library built with 90, else unsupported): fp32 accuracy on the TF32
//     tensor cores (step 9: x and the filter split into TF32 hi and lo parts in
//     a pooled workspace of 8 (N H W + K R S) round_up(C, 32) bytes, three
//     products per pair, fp32 sums), NCHW and NHWC, with bias and the fused
//     ReLU (not with your own epilogue functor: unsupported). Layers with C < 32,
//     C R S < 128 or a stride above 8 run the exact kernels.
//   - conv2d_variant::implicit_gemm_wgmma runs the TF32 GEMM on Hopper's
//     warpgroup tensor-core products (wgmma, sm_90a), fed by TMA copies from an
//     NHWC copy of x (one extra pass through a pooled workspace of
//     N*H*W*round_up(C, 4) + K*R*S*round_up(C, 32) floats). It needs
//     options.math = tf32 (else invalid_argument), stride 1 (else unsupported;
//     dilation and padding are free), a device of compute capability 9.0 and a
//     library built with 90 in CMAKE_CUDA_ARCHITECTURES (else unsupported), and
//     is precompiled for the options' bias / ReLU only (with your own functor,
//     <kernelforge/conv.cuh>: unsupported). `best` with math tf32 uses it on
//     sm_90 for stride-1 layers with C >= 32, else implicit_gemm_tf32.
//     Accuracy as implicit_gemm_tf32 (inputs rounded to TF32, fp32 sums).
//   - options.relu fuses y = y <= options.relu_threshold ? 0 : y (after the bias)
//     into the store: no second pass over y.
//   - Your own epilogue functor (value, row n*P*Q + p*Q + q, column k): the
//     templated overload in <kernelforge/conv.cuh>, from your own .cu.
//   - conv2d_variant::winograd computes 3x3, stride-1, dilation-1 layers (any
//     padding) by Winograd F(2x2,3x3): fp32 arithmetic with 2.25x fewer
//     multiplications, through a workspace of 16 (K*C + (C + K) * tiles) floats,
//     tiles = N * ceil(P/2) * ceil(Q/2). Its results are not direct summation's:
//     the error is bounded by about (C + 12) 2^-24 times the sum of the
//     magnitudes of the transformed terms (tests/conv2d states the bound), in
//     practice near direct summation's. Other layers are errc::unsupported.
//     `best` runs it in exact fp32 on such layers with C >= 64 and K >= 64, where
//     it beat the implicit GEMM on the H200 (include/kernelforge/kernels/conv2d/tuning.hpp).
//   - conv2d_variant::winograd_fused computes the same layers with the same
//     arithmetic and error bound as winograd, in one kernel after a small filter
//     transform: the transformed inputs and products stay in shared memory and
//     registers (workspace: 16 C round_up(K, 4) floats). It needs a device that
//     grants a block 168 KB of shared memory (sm_90, sm_100; elsewhere
//     errc::unsupported). `best` runs it on winograd's layers where its blocks
//     fill their waves on the device (include/kernelforge/kernels/conv2d/plan.hpp), winograd
//     elsewhere.
//   - Precompiled for float.
//
// channels_last (params.layout = conv2d_layout::nhwc): x[n][h][w][c],
//   weight[k][r][s][c], y[n][p][q][k], for float, __half and __nv_bfloat16
//   (16-bit types: fp32 accumulation and one rounding at the end; NHWC only, an
//   NCHW call with them is errc::unsupported). The variants that read it:
//   - naive: any device, any geometry, exact fp32 sums (every type).
//   - implicit_gemm_wgmma (sm_90, a library built with 90): strides up to 8
//     (any padding and dilation); x and weight are read in place where C *
//     sizeof(T) is a multiple of 16 bytes and both are 16-byte aligned, else
//     the filter's columns are first folded into channels in a pooled
//     workspace (N*H*Q*C' + K*R*C' elements, C' = S*C rounded up to 16 bytes:
//     the RGB stem's 7 x 3 become 24); float needs options.math = tf32 (the products
//     read TF32: the low 13 mantissa bits of each input are dropped), __half
//     and __nv_bfloat16 take either math mode. A stride above 8 is
//     errc::unsupported.
//   - best: for __half and __nv_bfloat16 layers of at most 4 input channels
//     and 64 filter taps (the RGB stem) on compute capability 8.0+, a kernel
//     of their own (mma.sync, the input patch and the filter in shared
//     memory, no workspace; any stride, padding and dilation whose patch fits);
//     else implicit_gemm_wgmma where it applies (for float only under
//     math_mode::tf32); else, for float (math_mode::exact, the default, and
//     the layers fp32_emulated leaves to it), NCHW best's kernels -- Winograd
//     on 3x3 layers, the implicit GEMM elsewhere; exact fp32 FMA sums, or
//     mma.sync under tf32 -- on copies of x and the filter transposed into a
//     pooled workspace (plus y's N*K*P*Q floats, transposed into y at the
//     end; a tensor whose two orders coincide is not copied); else (16-bit,
//     or no workspace) naive.
//   The other variants read NCHW only (errc::unsupported naming the layout).
//   bias and options.relu work as in NCHW; your own epilogue functor
//   (<kernelforge/conv.cuh>) is NCHW only so far (errc::unsupported).
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "kernelforge/math_mode.hpp"
#include "kernelforge/types.hpp"

namespace kf {

/// What filter2d reads outside the image.
enum class border {
  zero,     ///< 0
  clamp,    ///< the nearest edge pixel (OpenCV BORDER_REPLICATE): -1 -> 0, n -> n-1
  reflect,  ///< mirror about the edge pixel, not repeating it (OpenCV BORDER_REFLECT_101,
            ///< PyTorch/NumPy 'reflect'): -1 -> 1, -2 -> 2, n -> n-2. When the filter reaches
            ///< further than the image is wide, the mirror repeats with period 2(n-1)
            ///< (as OpenCV's borderInterpolate does): n = 3: -3 -> 1, -4 -> 0, 5 -> 1.
            ///< A 1-pixel dimension maps every index to 0.
};

/// The steps of the image-filter progression; `best` picks the fastest one.
enum class filter2d_variant {
  best,             ///< float 3x3 and 5x5 with aligned rows: register_window (3x3) or rolling_window
                    ///< (5x5); otherwise smem_tiled,
                    ///< with the separable row/column path for large rank-one filters
  naive,            ///< one output per thread, image and filter read from global memory
  constant_memory,  ///< naive, with the filter in __constant__ memory (broadcast to a warp)
  smem_tiled,       ///< an input tile plus halo in shared memory, 32 outputs per thread
  register_window,  ///< the filter in registers, a float4 of columns and a strip of rows per thread,
                    ///< sliding down the image; no shared memory. float only (errc::unsupported
                    ///< for __half and double); runs smem_tiled instead unless the filter is 3x3
                    ///< or 5x5, in and out are 16-byte aligned and both pitches are multiples of 4
  rolling_window,   ///< register_window's float4 columns, each thread walking down a long strip with
                    ///< a fixed number of input rows in flight (loads spread evenly over the FMAs);
                    ///< the same types, requirements and smem_tiled fallback as register_window
  tma_pipeline,     ///< a producer warp streams the image through a ring of shared-memory stages with
                    ///< TMA (Hopper), consumer warps compute from them; float, 3x3 or 5x5,
                    ///< border::zero, in and out 16-byte aligned with pitches a multiple of 4,
                    ///< compute capability 9.0: errc::unsupported naming the missing condition
                    ///< otherwise (no fallback). Measured slower than register_window on the
                    ///< H200, so `best` does not choose it
};

struct filter2d_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  filter2d_variant variant = filter2d_variant::best;
  border mode = border::zero;
};

/// Largest filter extent filter2d accepts (rows and columns).
constexpr std::size_t filter2d_max_extent = 31;

/// The element types filter2d is precompiled for (double: the naive variant only).
template <class T>
inline constexpr bool is_filter2d_type_v = is_one_of_v<T, float, __half, double>;
/// The element types conv2d_forward is precompiled for (the 16-bit ones in
/// the NHWC layout only).
template <class T>
inline constexpr bool is_conv2d_type_v = is_one_of_v<T, float, __half, __nv_bfloat16>;

namespace detail {
// Defined and instantiated for the shipped types in src/filter2d/ and src/conv2d/.
template <class T>
void filter2d_impl(std::size_t channels, std::size_t height, std::size_t width, const T* in, std::size_t in_pitch,
                   const T* filter, std::size_t r, std::size_t s, T* out, std::size_t out_pitch,
                   const filter2d_options& options);
}  // namespace detail

/// out = in cross-correlated with the r x s filter (see the top of this header).
template <class T>
void filter2d(std::size_t channels, std::size_t height, std::size_t width, const T* in, std::size_t in_pitch,
              const T* filter, std::size_t r, std::size_t s, T* out, std::size_t out_pitch,
              const filter2d_options& options = {}) {
  static_assert(is_filter2d_type_v<T>,
                "kf::filter2d: unsupported element type; filter2d ships float, __half and "
                "double (double: naive only)");
  detail::filter2d_impl<T>(channels, height, width, in, in_pitch, filter, r, s, out, out_pitch, options);
}

/// The memory order of conv2d_forward's tensors (all dense, outermost first).
enum class conv2d_layout {
  nchw,  ///< x N x C x H x W, weight K x C x R x S, y N x K x P x Q (the default)
  /// x N x H x W x C, weight K x R x S x C, y N x P x Q x K: PyTorch's
  /// channels_last memory order (see "channels_last" at the top of this header).
  nhwc,
};

/// The shape of a conv2d_forward call: input x is batch x in_channels x
/// in_height x in_width, weight is out_channels x in_channels x filter_height x
/// filter_width, stored in the order `layout` names (NCHW and KCRS by default).
/// Every field starts at a valid value or 0, so a forgotten extent is an error
/// with its name, never garbage.
struct conv2d_params {
  std::size_t batch = 0;          ///< N
  std::size_t in_channels = 0;    ///< C
  std::size_t in_height = 0;      ///< H
  std::size_t in_width = 0;       ///< W
  std::size_t out_channels = 0;   ///< K
  std::size_t filter_height = 0;  ///< R
  std::size_t filter_width = 0;   ///< S
  std::size_t stride_h = 1, stride_w = 1;
  std::size_t pad_h = 0, pad_w = 0;
  std::size_t dilation_h = 1, dilation_w = 1;
  /// The memory order of x, weight and y.
  conv2d_layout layout = conv2d_layout::nchw;
};

/// The steps of the conv2d progression; `best` picks the fastest one this device runs.
enum class conv2d_variant {
  best,
  naive,               ///< one output per thread, direct summation from global memory
  smem_tiled,          ///< direct, with input patches and filters staged in shared memory
  implicit_gemm,       ///< a register-tiled GEMM over (N*P*Q) x K x (C*R*S), im2col on the fly
  implicit_gemm_tf32,  ///< the same GEMM on TF32 tensor cores (mma.sync, sm_80+)
  /// implicit_gemm fed by a 3-stage cp.async pipeline with 16-deep K slices (exact fp32).
  implicit_gemm_pipelined,
  /// Winograd F(2x2,3x3) (see the top of this header): 3x3 filters at stride 1 and
  /// dilation 1 only, else errc::unsupported.
  winograd,
  /// The TF32 implicit GEMM on Hopper's wgmma tensor-core products, fed by TMA
  /// (see the top of this header): options.math = tf32, stride 1, sm_90 only.
  implicit_gemm_wgmma,
  /// Winograd F(2x2,3x3) in one kernel (input and output transforms fused
  /// around the 16 products; see the top of this header): the layers `winograd`
  /// computes, on devices granting 168 KB of shared memory per block (sm_90,
  /// sm_100), else errc::unsupported. `best` takes it where its blocks fill their waves.
  winograd_fused,
};

struct conv2d_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  conv2d_variant variant = conv2d_variant::best;
  math_mode math = math_mode::exact;
  /// Fused threshold ReLU, applied after the bias in registers before the store
  /// (kf::relu_threshold_forward's rule: y <= relu_threshold ? 0 : y; NaN stays
  /// NaN), on every variant. With your own epilogue functor (<kernelforge/conv.cuh>)
  /// leave it off and compose the ReLU into the functor.
  bool relu = false;
  float relu_threshold = 0.0f;
};

/// P, the output height. Throws errc::invalid_argument (with the numbers) for
/// geometry with no output row: R, H or the stride or dilation 0, or a dilated
/// filter taller than the padded input.
[[nodiscard]] std::size_t conv2d_output_height(const conv2d_params& params);
/// Q, the output width; the same rules along the width.
[[nodiscard]] std::size_t conv2d_output_width(const conv2d_params& params);

namespace detail {
template <class T>
void conv2d_forward_impl(const conv2d_params& params, const T* x, const T* weight, const T* bias, T* y,
                         const conv2d_options& options);
}  // namespace detail

/// y (N x K x P x Q) = conv(x (N x C x H x W), weight (K x C x R x S)) + bias (K; nullptr: none).
/// T comes from x, weight and y; bias takes no part in the deduction, so nullptr works.
template <class T>
void conv2d_forward(const conv2d_params& params, const T* x, const T* weight, const nondeduced_t<T>* bias, T* y,
                    const conv2d_options& options = {}) {
  static_assert(is_conv2d_type_v<T>,
                "kf::conv2d_forward: unsupported element type; conv2d ships float, and __half and "
                "__nv_bfloat16 in the NHWC layout");
  detail::conv2d_forward_impl<T>(params, x, weight, bias, y, options);
}

/// Names for messages and benchmark labels ("smem_tiled", "reflect", ...).
[[nodiscard]] const char* to_string(border mode) noexcept;
[[nodiscard]] const char* to_string(filter2d_variant variant) noexcept;
[[nodiscard]] const char* to_string(conv2d_variant variant) noexcept;
[[nodiscard]] const char* to_string(conv2d_layout layout) noexcept;

}  // namespace kf
