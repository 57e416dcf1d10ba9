// SPDX-License-Identifier: Apache-2.0
// bench_elementwise: the elementwise family against its ceiling and its baselines,
// in one run so that every comparison is a ratio of figures measured together.
//
//   copy/<type>/memcpy/<n>             cudaMemcpyAsync device to device: the in-run ceiling
//   <op>/<type>/<impl>/<n>             op: saxpy, vector_add, relu_threshold_forward,
//                                      relu_threshold_backward; impl: naive, vectorized
//                                      (kernelforge), cub (cub::DeviceTransform), cublas
//                                      (cublasSaxpy, fp32 saxpy only)
//   launch_overhead/{bare_launch,kf_saxpy}   host cost of one call (launch_overhead.cu)
//
// Counters (gpu_benchmark.hpp): GB/s, frac_peak (of the datasheet bandwidth),
// frac_copy (of the copy rate measured in this run for arrays of the same size in
// bytes), bytes. Bytes count each input read once and each output written once.
// GPU time comes from CUDA events around the call alone, with L2 flushed before
// each sample. benchmarks/report.py turns the JSON into tables.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "baselines.cuh"
#include "kernelforge/transform.cuh"
#include "bench_inputs.cuh"
#include "gpu_benchmark.hpp"
#include "launch_overhead.hpp"

namespace kf::bench::elementwise {
namespace {

// 2^20 (launch-bound, fits in L2), 2^24 (64 MiB per fp32 array: past L2),
// 2^28 (1 GiB per fp32 array: the bandwidth figure the goals quote).
const std::vector<std::int64_t> sizes = {std::int64_t{1} << 20, std::int64_t{1} << 24, std::int64_t{1} << 28};

// a = 1e-3 keeps saxpy's in-place y finite across thousands of timed calls:
// each call moves |y| by at most |a| * max|x| = 1e-3.
constexpr float saxpy_alpha = 1e-3f;
constexpr float relu_threshold = 0.0f;  // inputs are +-[0.5, 1): half the elements pass

// Iteration counts: about target_bytes of traffic per benchmark (a quarter
// second at H200 bandwidth), clamped so small sizes, whose samples cost a flush
// and a synchronization each, stay cheap and large ones still get a fair sample.
constexpr double target_bytes = 1e12;
constexpr std::int64_t min_iterations = 20;
constexpr std::int64_t max_iterations = 3000;

std::int64_t iterations_for(double bytes_per_call) {
  const auto want = static_cast<std::int64_t>(target_bytes / bytes_per_call);
  return std::clamp(want, min_iterations, max_iterations);
}

// ---- the in-run ceiling, per array size -------------------------------------
/// Copy rate (GB/s) measured by copy/<type>/memcpy/<n>, keyed by bytes per array,
/// so frac_copy compares arrays of the same size in bytes (like with like).
std::map<std::size_t, double>& copy_rates() {
  static std::map<std::size_t, double> rates;
  return rates;
}

/// Points kf::bench::copy_rate_gbs() at the rate for arrays of `array_bytes`
/// (0, so no frac_copy, when that copy did not run, e.g. filtered out).
void use_copy_rate_for(std::size_t array_bytes) {
  const auto it = copy_rates().find(array_bytes);
  copy_rate_gbs() = it == copy_rates().end() ? 0.0 : it->second;
}

template <class T>
void bm_copy(benchmark::State& state) {
  KF_BENCH_REQUIRE_GPU(state);
  const auto n = static_cast<std::size_t>(state.range(0));
  try {
    kf::device_buffer<T> src(n), dst(n);
    fill_random(src.data(), n, /*seed=*/1, nullptr);
    time_gpu(state, [&](cudaStream_t s) {
      check(cudaMemcpyAsync(dst.data(), src.data(), n * sizeof(T), cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    });
    const double bytes = 2.0 * static_cast<double>(n * sizeof(T));  // read once, written once
    const double s = state.counters["gpu_s"];
    copy_rates()[n * sizeof(T)] = s > 0 ? bytes / s / 1e9 : 0.0;
    use_copy_rate_for(n * sizeof(T));
    set_bandwidth(state, bytes);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// ---- the operations -----------------------------------------------------------
enum class op { saxpy, vector_add, relu_forward, relu_backward, fused3 };
enum class impl { naive, vectorized, cub, cublas, transform };

/// The user-op row's constants: out = clamp(a*x + b*y + z, lo, hi).
constexpr fused3_fn fused3_op{0.75f, -1.25f, -2.0f, 2.0f};

const char* op_name(op o) {
  switch (o) {
    case op::saxpy: return "saxpy";
    case op::vector_add: return "vector_add";
    case op::relu_forward: return "relu_threshold_forward";
    case op::relu_backward: return "relu_threshold_backward";
    case op::fused3: return "user_op_fused3";
  }
  return "unknown";
}

const char* impl_name(impl i) {
  switch (i) {
    case impl::naive: return kf::to_string(kf::elementwise_variant::naive);
    case impl::vectorized: return kf::to_string(kf::elementwise_variant::vectorized);
    case impl::cub: return "cub";
    case impl::cublas: return "cublas";
    case impl::transform: return "kf_transform";
  }
  return "unknown";
}

/// Arrays an op reads (in0, in1, in2) and writes (out). saxpy writes y = in1 in place.
/// relu_backward reads (dy, x) = (in0, in1); fused3 reads (x, y, z).
int inputs_of(op o) { return o == op::relu_forward ? 1 : o == op::fused3 ? 3 : 2; }

template <class T>
struct operands {
  op o;
  std::size_t n;
  kf::device_buffer<T> in0, in1, in2, out_buffer;

  operands(op o_, std::size_t n_)
      : o(o_),
        n(n_),
        in0(n_),
        in1(inputs_of(o_) >= 2 ? n_ : 0),
        in2(inputs_of(o_) >= 3 ? n_ : 0),
        out_buffer(o_ == op::saxpy ? 0 : n_) {
    fill_random(in0.data(), n, /*seed=*/2, nullptr);
    if (!in1.empty()) fill_random(in1.data(), n, /*seed=*/3, nullptr);
    if (!in2.empty()) fill_random(in2.data(), n, /*seed=*/4, nullptr);
  }
  T* out() { return o == op::saxpy ? in1.data() : out_buffer.data(); }

  /// Each input read once, the output written once.
  double bytes() const { return static_cast<double>((inputs_of(o) + 1) * n * sizeof(T)); }
};

/// Enqueues one call of `o` by implementation `i` on `stream`.
template <class T>
void run(impl i, operands<T>& p, cudaStream_t stream) {
  const T* in0 = p.in0.data();
  const T* in1 = p.in1.data();
  T* out = p.out();
  const std::size_t n = p.n;
  if (p.o == op::fused3) {
    if constexpr (std::is_same_v<T, float>) {
      if (i == impl::transform) {
        kf::transform_options options;
        options.stream = stream;
        return kf::transform(n, fused3_op, out, in0, in1, p.in2.data(), options);
      }
      if (i == impl::cub) return cub_transform(in0, in1, p.in2.data(), out, n, fused3_op, stream);
    }
    throw std::runtime_error("the user-op row exists for fp32 kf::transform and cub only");
  }
  if (i == impl::naive || i == impl::vectorized) {
    kf::elementwise_options options;
    options.stream = stream;
    options.variant = i == impl::naive ? kf::elementwise_variant::naive : kf::elementwise_variant::vectorized;
    switch (p.o) {
      case op::saxpy: kf::saxpy(n, static_cast<T>(saxpy_alpha), in0, out, options); return;
      case op::vector_add: kf::vector_add(n, in0, in1, out, options); return;
      case op::relu_forward: kf::relu_threshold_forward(n, in0, out, static_cast<T>(relu_threshold), options); return;
      case op::relu_backward:
        kf::relu_threshold_backward(n, in0, in1, out, static_cast<T>(relu_threshold), options);
        return;
      case op::fused3: break;  // handled above
    }
  }
  if (i == impl::cublas) {
    if constexpr (std::is_same_v<T, float>) {
      if (p.o == op::saxpy) return cublas_saxpy(n, saxpy_alpha, in0, out, stream);
    }
    throw std::runtime_error("cublas baseline exists for fp32 saxpy only");
  }
  switch (p.o) {  // impl::cub
    case op::saxpy: return cub_transform(in0, in1, out, n, cub_saxpy_fn<T>{saxpy_alpha}, stream);
    case op::vector_add: return cub_transform(in0, in1, out, n, cub_add_fn<T>{}, stream);
    case op::relu_forward: return cub_transform(in0, out, n, cub_relu_forward_fn<T>{relu_threshold}, stream);
    case op::relu_backward: return cub_transform(in0, in1, out, n, cub_relu_backward_fn<T>{relu_threshold}, stream);
    case op::fused3: break;  // handled above
  }
}

/// Runs one call and compares a few output elements with the formula in double.
/// Empty when right, else why not.
template <class T>
std::string spot_check(impl i, operands<T>& p) {
  const std::vector<std::size_t> idx = spot_check_indices(p.n);
  const std::vector<double> a = read_elements(p.in0.data(), idx);
  const std::vector<double> b = inputs_of(p.o) >= 2 ? read_elements(p.in1.data(), idx) : a;
  const std::vector<double> c = inputs_of(p.o) >= 3 ? read_elements(p.in2.data(), idx) : a;
  run(i, p, nullptr);
  const std::vector<double> got = read_elements(p.out(), idx);
  std::vector<double> expected(idx.size()), scale(idx.size(), 0.0);
  const double alpha = static_cast<double>(static_cast<float>(static_cast<T>(saxpy_alpha)));
  for (std::size_t k = 0; k < idx.size(); ++k) {
    switch (p.o) {
      case op::saxpy:  // inputs (x, y)
        expected[k] = alpha * a[k] + b[k];
        scale[k] = std::fabs(alpha * a[k]) + std::fabs(b[k]);
        break;
      case op::vector_add:
        expected[k] = a[k] + b[k];
        scale[k] = std::fabs(a[k]) + std::fabs(b[k]);
        break;
      case op::relu_forward: expected[k] = a[k] <= relu_threshold ? 0.0 : a[k]; break;
      case op::relu_backward: expected[k] = b[k] <= relu_threshold ? 0.0 : a[k]; break;  // inputs (dy, x)
      case op::fused3: {
        const double v = fused3_op.a * a[k] + fused3_op.b * b[k] + c[k];
        expected[k] = std::min(std::max(v, static_cast<double>(fused3_op.lo)), static_cast<double>(fused3_op.hi));
        scale[k] = std::fabs(fused3_op.a * a[k]) + std::fabs(fused3_op.b * b[k]) + std::fabs(c[k]);
        break;
      }
    }
  }
  const std::string wrong = compare_points<T>(idx, got, expected, scale);
  return wrong.empty() ? wrong : std::string(op_name(p.o)) + "/" + impl_name(i) + ": " + wrong;
}

template <class T>
void bm_op(benchmark::State& state, op o, impl i) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    operands<T> p(o, static_cast<std::size_t>(state.range(0)));
    const std::string wrong = spot_check(i, p);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu(state, [&](cudaStream_t s) { run(i, p, s); });
    use_copy_rate_for(p.n * sizeof(T));
    set_bandwidth(state, p.bytes());
  } catch (const std::exception& e) {  // kf::error, or a baseline's failure
    state.SkipWithError(e.what());
  }
}

// ---- registration: the copies first, so every later row has its frac_copy ----
template <class T>
void register_copy() {
  for (std::int64_t n : sizes) {
    const std::string name = std::string("copy/") + type_name<T>() + "/memcpy";
    benchmark::RegisterBenchmark(name.c_str(), bm_copy<T>)
        ->Arg(n)
        ->Iterations(iterations_for(2.0 * static_cast<double>(n) * sizeof(T)))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

template <class T>
void register_op(op o, std::initializer_list<impl> impls) {
  for (impl i : impls) {
    for (std::int64_t n : sizes) {
      const std::string name = std::string(op_name(o)) + "/" + type_name<T>() + "/" + impl_name(i);
      const double bytes = static_cast<double>((inputs_of(o) + 1) * n) * sizeof(T);
      benchmark::RegisterBenchmark(name.c_str(), [o, i](benchmark::State& state) { bm_op<T>(state, o, i); })
          ->Arg(n)
          ->Iterations(iterations_for(bytes))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

/// Registration touches no GPU, so --benchmark_list_tests works anywhere.
const bool registered = [] {
  register_copy<float>();
  register_copy<__nv_bfloat16>();
  register_op<float>(op::saxpy, {impl::naive, impl::vectorized, impl::cub, impl::cublas});
  register_op<float>(op::vector_add, {impl::naive, impl::vectorized, impl::cub});
  register_op<float>(op::relu_forward, {impl::naive, impl::vectorized, impl::cub});
  register_op<float>(op::relu_backward, {impl::naive, impl::vectorized, impl::cub});
  register_op<__nv_bfloat16>(op::vector_add, {impl::naive, impl::vectorized, impl::cub});
  register_op<float>(op::fused3, {impl::transform, impl::cub});  // your own op: kf::transform vs CUB
  register_launch_overhead_benchmarks();
  return true;
}();

}  // namespace
}  // namespace kf::bench::elementwise

KF_BENCHMARK_MAIN();
