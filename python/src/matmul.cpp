// SPDX-License-Identifier: Apache-2.0
// Binding of the matrix product (kernelforge/matmul.hpp): out (m x n) = alpha a b + beta out
// for 2-D float32/float64 arrays. A row-major operand is read as stored; a transposed
// view (a.T of a row-major array: unit stride along rows) is read through the
// library's transpose flag and leading dimension, without a copy.
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

void matmul(const in_array& a, const in_array& b, const out_array& out, double alpha, double beta, bool tf32,
            const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.matmul";
  const dtype t = require_dtype(what, "a", a.dtype(), {dtype::f32, dtype::f64});
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
  o.math = tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
  o.variant =
      enum_by_name(what, "variant", variant,
                   {kf::matmul_variant::best, kf::matmul_variant::naive, kf::matmul_variant::coalesced,
                    kf::matmul_variant::smem_tiled, kf::matmul_variant::blocktile_1d, kf::matmul_variant::blocktile_2d,
                    kf::matmul_variant::vectorized, kf::matmul_variant::warp_tiled, kf::matmul_variant::large_tile,
                    kf::matmul_variant::tensor_core_tf32});
  const int device = require_one_cuda_device(what, {ref("a", a), ref("b", b), ref("out", out)});
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    kf::matmul<T>(op_a.trans, op_b.trans, m, n, k, static_cast<T>(alpha), static_cast<const T*>(a.data()), op_a.ld,
                  static_cast<const T*>(b.data()), op_b.ld, static_cast<T>(beta), static_cast<T*>(out.data()), op_c.ld,
                  o);
  };
  if (t == dtype::f32) {
    run(float{});
  } else {
    run(double{});
  }
}

}  // namespace

void bind_matmul(nb::module_& m) {
  using nb::arg;
  m.def("matmul", &matmul, arg("a"), arg("b"), arg("out"), arg("alpha"), arg("beta"), arg("tf32"), arg("variant"),
        arg("stream"));
}

}  // namespace kfpy
