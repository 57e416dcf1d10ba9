// SPDX-License-Identifier: Apache-2.0
// Bindings of the matrix products:
//  * matmul (kernelforge/matmul.hpp): out (m x n) = alpha a b + beta out for 2-D
//    float32/float64/float16/bfloat16 arrays (DLPack). A row-major operand is read as
//    stored; a transposed view (a.T of a row-major array: unit stride along rows) is
//    read through the library's transpose flag and leading dimension, without a copy.
//  * scaled_matmul_raw (kernelforge/scaled_matmul.hpp): the FP8 product, a raw entry
//    (pointers as ints, dtypes by name, op flags and leading dimensions) for
//    kernelforge.scaled_matmul, which checks torch tensors and maps their strides in
//    Python (python/kernelforge/_scaled_matmul.py). A raw entry because DLPack export of
//    float8 tensors exists only in recent torch versions (older ones raise), and CuPy
//    has no float8 dtype: FP8 reaches kernelforge from torch only.
#include <algorithm>

#include <nanobind/stl/string.h>

#include "common.hpp"

namespace kfpy {
namespace {

struct operand {
  kf::op trans;
  std::size_t ld;
};

// How to read a rows x cols array: row-major (stride (ld, 1)) or column-major (a
// transposed view, stride (1, ld)). Size-1 dimensions may carry any stride.
template <class A>
operand layout(const char* what, const char* name, const A& a) {
  const std::size_t rows = a.shape(0), cols = a.shape(1);
  const std::int64_t s0 = a.stride(0), s1 = a.stride(1);
  if ((cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= static_cast<std::int64_t>(cols))) {
    return {kf::op::none, std::max<std::size_t>({rows <= 1 ? cols : static_cast<std::size_t>(s0), cols, 1})};
  }
  if ((rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= static_cast<std::int64_t>(rows))) {
    return {kf::op::transpose, std::max<std::size_t>({cols <= 1 ? rows : static_cast<std::size_t>(s1), rows, 1})};
  }
  invalid(what, std::string("'") + name + "' of shape " + shape_string(a) + " has strides (" + std::to_string(s0) +
                    ", " + std::to_string(s1) +
                    "): neither row-major nor a transposed view of a row-major array; call .contiguous() "
                    "(torch) or cupy.ascontiguousarray() on it first");
}

void matmul(const in_array& a, const in_array& b, const out_array& out, double alpha, double beta,
            const std::string& math, const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.matmul";
  const dtype t = require_dtype(what, "a", a.dtype(), {dtype::f32, dtype::f64, dtype::f16, dtype::bf16});
  require_same_dtype(what, "b", b.dtype(), a.dtype(), "a");
  require_same_dtype(what, "out", out.dtype(), a.dtype(), "a");
  if (a.ndim() != 2 || b.ndim() != 2 || out.ndim() != 2) {
    invalid(what, "a, b and out must be 2-D; got shapes " + shape_string(a) + ", " + shape_string(b) + ", " +
                      shape_string(out));
  }
  const std::size_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  if (b.shape(0) != k || out.shape(0) != m || out.shape(1) != n) {
    invalid(what, "shapes do not compose: a " + shape_string(a) + " @ b " + shape_string(b) + " -> out " +
                      shape_string(out) + "; need a (m, k), b (k, n), out (m, n)");
  }
  const operand op_a = layout(what, "a", a);
  const operand op_b = layout(what, "b", b);
  const operand op_c = layout(what, "out", out);
  if (op_c.trans != kf::op::none) {
    invalid(what, "'out' must be row-major (unit stride along its rows); got strides (" +
                      std::to_string(out.stride(0)) + ", " + std::to_string(out.stride(1)) + ")");
  }
  kf::matmul_options o;
  o.stream = to_stream(stream);
  o.math = math_by_name(what, math);
  o.variant = enum_by_name(
      what, "variant", variant,
      {kf::matmul_variant::best, kf::matmul_variant::naive, kf::matmul_variant::coalesced,
       kf::matmul_variant::smem_tiled, kf::matmul_variant::blocktile_1d, kf::matmul_variant::blocktile_2d,
       kf::matmul_variant::vectorized, kf::matmul_variant::warp_tiled, kf::matmul_variant::large_tile,
       kf::matmul_variant::tensor_core_tf32, kf::matmul_variant::tensor_core_f16, kf::matmul_variant::wgmma_f16});
  const int device = require_one_cuda_device(what, {ref("a", a), ref("b", b), ref("out", out)});
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using S = kf::compute_t<T>;  // float for the 16-bit types (fp32 accumulation and epilogue)
    kf::matmul<T>(op_a.trans, op_b.trans, m, n, k, static_cast<S>(alpha), static_cast<const T*>(a.data()), op_a.ld,
                  static_cast<const T*>(b.data()), op_b.ld, static_cast<S>(beta), static_cast<T*>(out.data()), op_c.ld,
                  o);
  };
  switch (t) {
    case dtype::f32: return run(float{});
    case dtype::f64: return run(double{});
    case dtype::f16: return run(__half{});
    case dtype::bf16: return run(__nv_bfloat16{});
    default: break;
  }
}

// ---- FP8: the raw entry of kernelforge.scaled_matmul -----------------------------------

enum class fp8 { e4m3, e5m2 };

// The FP8 element types by torch's names (what kernelforge.scaled_matmul passes).
fp8 fp8_by_name(const char* what, const char* name, const std::string& dtype_name) {
  if (dtype_name == "float8_e4m3fn") return fp8::e4m3;
  if (dtype_name == "float8_e5m2") return fp8::e5m2;
  invalid(what, std::string(name) + " '" + dtype_name + "' is not one of: float8_e4m3fn, float8_e5m2");
}

dtype output_by_name(const char* what, const std::string& dtype_name) {
  if (dtype_name == "bfloat16") return dtype::bf16;
  if (dtype_name == "float16") return dtype::f16;
  if (dtype_name == "float32") return dtype::f32;
  invalid(what, "out_dtype '" + dtype_name + "' is not one of: bfloat16, float16, float32");
}

// InvalidArgumentError for the pair e5m2 x e5m2 (kf::is_fp8_operand_pair_v: cuBLASLt and
// torch._scaled_mm leave it out too).
void require_fp8_pair(const char* what, fp8 ta, fp8 tb) {
  if (ta == fp8::e5m2 && tb == fp8::e5m2) {
    invalid(what,
            "a_dtype float8_e5m2 with b_dtype float8_e5m2 is not shipped; the operand pairs are float8_e4m3fn x "
            "float8_e4m3fn, float8_e4m3fn x float8_e5m2 and float8_e5m2 x float8_e4m3fn");
  }
}

// Calls f(TA{}, TB{}, TD{}) for a shipped combination (require_fp8_pair first).
template <class F>
void dispatch_fp8(const char* what, fp8 ta, fp8 tb, dtype td, F&& f) {
  auto with_output = [&](auto a_tag, auto b_tag) {
    switch (td) {
      case dtype::bf16: return f(a_tag, b_tag, __nv_bfloat16{});
      case dtype::f16: return f(a_tag, b_tag, __half{});
      default: return f(a_tag, b_tag, float{});
    }
  };
  if (ta == fp8::e4m3) {
    if (tb == fp8::e4m3) return with_output(__nv_fp8_e4m3{}, __nv_fp8_e4m3{});
    return with_output(__nv_fp8_e4m3{}, __nv_fp8_e5m2{});
  }
  if (tb == fp8::e4m3) return with_output(__nv_fp8_e5m2{}, __nv_fp8_e4m3{});
  invalid(what, "float8_e5m2 x float8_e5m2 is not shipped (checked before)");
}

// D (m x n, row-major, ldd) = act(alpha * (scaled op(A) op(B)) + beta * D + bias) through
// kf::scaled_matmul on `device`. The pointers are device addresses as ints (0: none for
// bias and amax); kf::scaled_matmul checks them (null, alignment, leading dimensions,
// overlaps) before anything is enqueued.
void scaled_matmul_raw(std::uintptr_t a, const std::string& a_dtype, bool trans_a, std::size_t lda, std::uintptr_t b,
                       const std::string& b_dtype, bool trans_b, std::size_t ldb, std::size_t m, std::size_t n,
                       std::size_t k, const std::string& scaling, std::uintptr_t scale_a, std::uintptr_t scale_b,
                       double alpha, double beta, std::uintptr_t out, const std::string& out_dtype, std::size_t ldd,
                       std::uintptr_t bias, bool relu, double relu_threshold, std::uintptr_t amax,
                       const std::string& variant, int device, std::uintptr_t stream) {
  const char* what = "kernelforge.scaled_matmul_raw";
  const fp8 ta = fp8_by_name(what, "a_dtype", a_dtype);
  const fp8 tb = fp8_by_name(what, "b_dtype", b_dtype);
  require_fp8_pair(what, ta, tb);
  const dtype td = output_by_name(what, out_dtype);
  kf::fp8_scales scales;
  scales.mode = enum_by_name(what, "scaling", scaling,
                             {kf::fp8_scaling::per_tensor, kf::fp8_scaling::rowwise, kf::fp8_scaling::blockwise});
  scales.a = reinterpret_cast<const float*>(scale_a);
  scales.b = reinterpret_cast<const float*>(scale_b);
  kf::scaled_matmul_options o;
  o.stream = to_stream(stream);
  o.variant = enum_by_name(
      what, "variant", variant,
      {kf::scaled_matmul_variant::best, kf::scaled_matmul_variant::naive, kf::scaled_matmul_variant::wgmma});
  o.bias = reinterpret_cast<const void*>(bias);
  o.relu = relu;
  o.relu_threshold = static_cast<float>(relu_threshold);
  o.amax = reinterpret_cast<float*>(amax);
  require_cuda_device_index(what, "a", device);
  dispatch_fp8(what, ta, tb, td, [&](auto a_tag, auto b_tag, auto d_tag) {
    using TA = decltype(a_tag);
    using TB = decltype(b_tag);
    using TD = decltype(d_tag);
    nb::gil_scoped_release nogil;
    device_guard guard(device);
    kf::scaled_matmul<TA, TB, TD>(trans_a ? kf::op::transpose : kf::op::none,
                                  trans_b ? kf::op::transpose : kf::op::none, m, n, k, static_cast<float>(alpha),
                                  reinterpret_cast<const TA*>(a), lda, reinterpret_cast<const TB*>(b), ldb, scales,
                                  static_cast<float>(beta), reinterpret_cast<TD*>(out), ldd, o);
  });
}

}  // namespace

void bind_matmul(nb::module_& m) {
  using nb::arg;
  m.def("matmul", &matmul, arg("a"), arg("b"), arg("out"), arg("alpha"), arg("beta"), arg("math"), arg("variant"),
        arg("stream"),
        "out = alpha * (a @ b) + beta * out. a (m, k), b (k, n), out (m, n): 2-D, one dtype (float32, float64, "
        "float16, bfloat16), on one CUDA device; a and b row-major or transposed views of row-major arrays, out "
        "row-major. math: 'exact', 'tf32' or 'fp32_emulated'; variant: 'best' or a step's name (e.g. 'naive', "
        "'warp_tiled', 'wgmma_f16'); stream: a cudaStream_t as an int. TypeError for a dtype; InvalidArgumentError "
        "for shapes, strides, device or names; UnsupportedError for a variant or math mode this dtype or GPU lacks.");
  m.def("scaled_matmul_raw", &scaled_matmul_raw, arg("a"), arg("a_dtype"), arg("trans_a"), arg("lda"), arg("b"),
        arg("b_dtype"), arg("trans_b"), arg("ldb"), arg("m"), arg("n"), arg("k"), arg("scaling"), arg("scale_a"),
        arg("scale_b"), arg("alpha"), arg("beta"), arg("out"), arg("out_dtype"), arg("ldd"), arg("bias"), arg("relu"),
        arg("relu_threshold"), arg("amax"), arg("variant"), arg("device"), arg("stream"),
        "out (m, n, row-major, ldd) = act(alpha * scaled(op(a) @ op(b)) + beta * out + bias), FP8 operands, on "
        "device addresses (ints; 0: no bias, no amax): kernelforge.scaled_matmul's entry. a_dtype, b_dtype: "
        "'float8_e4m3fn' or 'float8_e5m2' (not both e5m2); out_dtype: 'bfloat16', 'float16' or 'float32'; "
        "scaling: 'per_tensor', 'rowwise' or 'blockwise'. InvalidArgumentError for names, pointers, alignment or "
        "leading dimensions; NoDeviceError without a GPU; UnsupportedError where the GPU lacks the variant.");
}

}  // namespace kfpy
