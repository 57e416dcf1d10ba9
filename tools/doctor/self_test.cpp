// SPDX-License-Identifier: Apache-2.0
// kernelforge-doctor --self-test: one small call of every family and variant
// (elementwise x 4 ops, matmul, filter2d, conv2d; exact and TF32) on each
// device, compared with the CPU reference; PASSED / FAILED / SKIPPED each
// (SKIPPED: errc::unsupported, e.g. tensor cores before sm_80), and the time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "doctor.hpp"
#include "kernelforge/kernelforge.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/matmul.hpp"

namespace kf::doctor {
namespace {

constexpr double exact_tolerance = 1e-5;  // normwise, fp32 accumulation of at most a few hundred terms
constexpr double tf32_tolerance = 1e-2;   // 10-bit mantissa inputs

/// Deterministic values in [-1, 1], never 0 (a kernel that writes nothing cannot pass).
std::vector<float> inputs(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    e = (static_cast<float>(x % 2000u) + 1.0f) / 1000.0f - 1.0005f;
  }
  return v;
}

/// max |got - ref| / max |ref|: the error relative to the result's size.
double normwise_error(const std::vector<float>& got, const std::vector<float>& ref) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(double(got[i]) - ref[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

struct outcome {
  int passed = 0, failed = 0, skipped = 0;
};

/// Runs one case: `call` returns the normwise error; kf::error unsupported -> SKIPPED.
void run_case(check& family, json& cases, outcome& o, const std::string& name, double tolerance,
              const std::function<double()>& call) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string verdict, why;
  double error = 0;
  try {
    error = call();
    verdict = error <= tolerance ? "PASSED" : "FAILED";
  } catch (const kf::error& e) {
    verdict = e.code() == kf::errc::unsupported ? "SKIPPED" : "FAILED";
    why = std::string(kf::to_string(e.code())) + ": " + e.what();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (verdict == "PASSED")
    ++o.passed;
  else if (verdict == "FAILED")
    ++o.failed;
  else
    ++o.skipped;
  family.detail.push_back(why.empty() ? format("%-28s %-7s error %.1e (tolerance %.0e), %.1f ms", name.c_str(),
                                               verdict.c_str(), error, tolerance, ms)
                                      : format("%-28s %-7s %s", name.c_str(), verdict.c_str(), why.c_str()));
  cases.push(json::object()
                 .set("case", name)
                 .set("result", verdict)
                 .set("error", why.empty() ? json(error) : json())
                 .set("tolerance", tolerance)
                 .set("ms", ms)
                 .set("message", why.empty() ? json() : json(why)));
}

void elementwise_cases(check& c, json& cases, outcome& o) {
  const std::size_t n = 100003;  // not a multiple of any block or vector width
  const std::vector<float> x = inputs(n, 1), y0 = inputs(n, 2);
  const auto dx = kf::to_device(x);
  for (auto v : {kf::elementwise_variant::naive, kf::elementwise_variant::vectorized, kf::elementwise_variant::best}) {
    kf::elementwise_options opt;
    opt.variant = v;
    const std::string tag = std::string("/") + kf::to_string(v);
    run_case(c, cases, o, "saxpy" + tag, exact_tolerance, [&] {
      auto dy = kf::to_device(y0);
      kf::saxpy(n, 1.5f, dx.data(), dy.data(), opt);
      std::vector<float> ref = y0;
      kf::reference::saxpy(n, 1.5f, x.data(), ref.data());
      return normwise_error(kf::to_host(dy), ref);
    });
    run_case(c, cases, o, "vector_add" + tag, exact_tolerance, [&] {
      auto db = kf::to_device(y0);
      kf::device_buffer<float> dc(n);
      kf::vector_add(n, dx.data(), db.data(), dc.data(), opt);
      std::vector<float> ref(n);
      kf::reference::vector_add(n, x.data(), y0.data(), ref.data());
      return normwise_error(kf::to_host(dc), ref);
    });
    run_case(c, cases, o, "relu_threshold_forward" + tag, 0.0, [&] {
      kf::device_buffer<float> dy(n);
      kf::relu_threshold_forward(n, dx.data(), dy.data(), 0.25f, opt);
      std::vector<float> ref(n);
      kf::reference::relu_threshold_forward(n, x.data(), ref.data(), 0.25f);
      return normwise_error(kf::to_host(dy), ref);
    });
    run_case(c, cases, o, "relu_threshold_backward" + tag, 0.0, [&] {
      auto ddy = kf::to_device(y0);
      kf::device_buffer<float> ddx(n);
      kf::relu_threshold_backward(n, ddy.data(), dx.data(), ddx.data(), 0.25f, opt);
      std::vector<float> ref(n);
      kf::reference::relu_threshold_backward(n, y0.data(), x.data(), ref.data(), 0.25f);
      return normwise_error(kf::to_host(ddx), ref);
    });
  }
}

void matmul_cases(check& c, json& cases, outcome& o) {
  const std::size_t m = 97, n = 131, k = 67;  // odd sizes: every tile has a ragged edge
  const std::vector<float> a = inputs(m * k, 3), b = inputs(k * n, 4), c0 = inputs(m * n, 5);
  std::vector<float> ref = c0;
  kf::reference::matmul(kf::op::none, kf::op::none, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.5f, ref.data(), n);
  const auto da = kf::to_device(a), db = kf::to_device(b);
  using V = kf::matmul_variant;
  for (V v : {V::naive, V::coalesced, V::smem_tiled, V::blocktile_1d, V::blocktile_2d, V::vectorized, V::warp_tiled,
              V::large_tile, V::tensor_core_tf32, V::best}) {
    for (kf::math_mode math : {kf::math_mode::exact, kf::math_mode::tf32}) {
      if (v == V::tensor_core_tf32 && math == kf::math_mode::exact) continue;  // needs tf32 by contract
      if (math == kf::math_mode::tf32 && v != V::tensor_core_tf32 && v != V::best) continue;
      kf::matmul_options opt;
      opt.variant = v;
      opt.math = math;
      const std::string name = std::string("matmul/") + kf::to_string(v) + (math == kf::math_mode::tf32 ? "/tf32" : "");
      run_case(c, cases, o, name, math == kf::math_mode::tf32 ? tf32_tolerance : exact_tolerance, [&] {
        auto dc = kf::to_device(c0);
        kf::matmul(kf::op::none, kf::op::none, m, n, k, 1.0f, da.data(), k, db.data(), n, 0.5f, dc.data(), n, opt);
        return normwise_error(kf::to_host(dc), ref);
      });
    }
  }
}

void filter2d_cases(check& c, json& cases, outcome& o) {
  const std::size_t h = 67, w = 132, pitch = 136, taps = 5;  // pitch a multiple of 4: register_window applies
  const std::vector<float> in = inputs(h * pitch, 6), filter = inputs(taps * taps, 7);
  std::vector<float> ref(h * pitch, 0.0f);
  kf::reference::filter2d(1, h, w, in.data(), pitch, filter.data(), taps, taps, kf::border::zero, ref.data(), pitch);
  const auto din = kf::to_device(in), dfilter = kf::to_device(filter);
  using V = kf::filter2d_variant;
  for (V v : {V::naive, V::constant_memory, V::smem_tiled, V::register_window, V::rolling_window, V::best}) {
    kf::filter2d_options opt;
    opt.variant = v;
    run_case(c, cases, o, std::string("filter2d/") + kf::to_string(v), exact_tolerance, [&] {
      auto dout = kf::to_device(std::vector<float>(h * pitch, 0.0f));
      kf::filter2d(1, h, w, din.data(), pitch, dfilter.data(), taps, taps, dout.data(), pitch, opt);
      return normwise_error(kf::to_host(dout), ref);
    });
  }
}

// conv2d_params' field names: batch, in_channels, ... (the API this is written
// for); the fallback takes the earlier n, c, h, w, k, r, s so the doctor also
// builds against a library from before the rename. Delete it once main has it.
void conv2d_cases(check& c, json& cases, outcome& o) {
  kf::conv2d_params p;
  p.batch = 2, p.in_channels = 5, p.in_height = 13, p.in_width = 11;
  p.out_channels = 7, p.filter_height = 3, p.filter_width = 3;
  p.pad_h = 1, p.pad_w = 1;
  const std::size_t batch = 2, in_channels = 5, in_height = 13, in_width = 11, out_channels = 7, taps = 3;
  const std::size_t out_h = kf::conv2d_output_height(p), out_w = kf::conv2d_output_width(p);
  const std::vector<float> x = inputs(batch * in_channels * in_height * in_width, 8);
  const std::vector<float> wgt = inputs(out_channels * in_channels * taps * taps, 9);
  const std::vector<float> bias = inputs(out_channels, 10);
  std::vector<float> ref(batch * out_channels * out_h * out_w);
  kf::reference::conv2d_forward(p, x.data(), wgt.data(), bias.data(), ref.data());
  const auto dx = kf::to_device(x), dw = kf::to_device(wgt), db = kf::to_device(bias);
  using V = kf::conv2d_variant;
  // The layer is 3x3, stride 1: winograd computes it too.
  for (V v : {V::naive, V::smem_tiled, V::implicit_gemm, V::implicit_gemm_pipelined, V::winograd, V::implicit_gemm_tf32,
              V::best}) {
    for (kf::math_mode math : {kf::math_mode::exact, kf::math_mode::tf32}) {
      if (v == V::implicit_gemm_tf32 && math == kf::math_mode::exact) continue;
      if (math == kf::math_mode::tf32 && v != V::implicit_gemm_tf32 && v != V::best) continue;
      kf::conv2d_options opt;
      opt.variant = v;
      opt.math = math;
      const std::string name = std::string("conv2d/") + kf::to_string(v) + (math == kf::math_mode::tf32 ? "/tf32" : "");
      run_case(c, cases, o, name, math == kf::math_mode::tf32 ? tf32_tolerance : exact_tolerance, [&] {
        kf::device_buffer<float> dy(ref.size());
        kf::conv2d_forward(p, dx.data(), dw.data(), db.data(), dy.data(), opt);
        return normwise_error(kf::to_host(dy), ref);
      });
    }
  }
}

}  // namespace

void run_self_test(report& r, const std::vector<int>& devices) {
  r.heading("Self-test (every family and variant against the CPU reference)");
  json all = json::array();
  for (int d : devices) {
    cudaSetDevice(d);
    const auto t0 = std::chrono::steady_clock::now();
    outcome total;
    json device_cases = json::object();
    struct family {
      const char* name;
      void (*run)(check&, json&, outcome&);
    };
    for (const family& f : {family{"elementwise", elementwise_cases}, family{"matmul", matmul_cases},
                            family{"filter2d", filter2d_cases}, family{"conv2d", conv2d_cases}}) {
      check c{format("self-test %d", d), status::ok, "", {}, ""};
      json cases = json::array();
      outcome o;
      try {
        f.run(c, cases, o);
      } catch (const kf::error& e) {  // set-up failed (allocation, upload)
        ++o.failed;
        c.detail.push_back(std::string("set-up failed: ") + e.what());
      }
      c.message = format("%s: %d PASSED, %d FAILED, %d SKIPPED", f.name, o.passed, o.failed, o.skipped);
      if (o.failed) {
        c.level = status::fail;
        c.fix =
            "a kernel disagrees with the CPU reference on this GPU: please report it with the output of "
            "kernelforge-doctor --self-test --json";
      }
      r.add(c);
      total.passed += o.passed, total.failed += o.failed, total.skipped += o.skipped;
      device_cases.set(f.name, cases);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.add({format("self-test %d", d),
           total.failed ? status::fail : status::ok,
           format("device %d: %d PASSED, %d FAILED, %d SKIPPED in %.2f s", d, total.passed, total.failed, total.skipped,
                  s),
           {},
           ""});
    all.push(json::object()
                 .set("device", d)
                 .set("passed", total.passed)
                 .set("failed", total.failed)
                 .set("skipped", total.skipped)
                 .set("seconds", s)
                 .set("families", device_cases));
  }
  r.facts().set("self_test", all);
}

}  // namespace kf::doctor
