// SPDX-License-Identifier: Apache-2.0
// bench_matmul's matmul/pack/ rows (bench_matmul_main.cu's header comment lists them):
// the wgmma steps' repack pass (include/kernelforge/kernels/matmul/pack_k_major.cuh)
// timed alone against cudaMemcpyAsync of the same bytes, spot-checked bit for bit.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <benchmark/benchmark.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "bench_matmul.hpp"
#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/kernels/matmul/scaled/wgmma_sm90a.hpp"  // the FP8 repack
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "kernelforge/kernelforge.hpp"

namespace kf::bench::matmul {
namespace {

// ---- the repack pass alone ---------------------------------------------------
struct pack_shape {
  std::size_t rows, k;
  std::string name() const { return std::to_string(rows) + "x" + std::to_string(k); }
};

/// A rows x k operand's source (one element of slack for the misaligned rows) and
/// its packed copy, as raw bytes: the f32, f16 and fp8 rows read them as their type.
struct pack_buffers {
  pack_shape s;
  kf::device_buffer<float> src, dst;
  explicit pack_buffers(const pack_shape& s_) : s(s_), src(s_.rows * s_.k + 4), dst(s_.rows * s_.k + 4) {
    fill_random(src.data(), src.size(), 5);
    check(cudaDeviceSynchronize(), "fill");
  }
};

pack_buffers& pack_buffers_for(const pack_shape& s) {
  static std::unique_ptr<pack_buffers> current;
  if (!current || current->s.rows != s.rows || current->s.k != s.k) {
    current.reset();
    current = std::make_unique<pack_buffers>(s);
  }
  return *current;
}

/// memcpy rates (GB/s) of this run by bytes moved (read + written).
std::map<double, double>& pack_copy_rates() {
  static std::map<double, double> r;
  return r;
}

void bm_pack_memcpy(benchmark::State& state, pack_shape s, std::size_t element_bytes) {
  KF_BENCH_REQUIRE_GPU(state);
  pack_buffers& b = pack_buffers_for(s);
  const std::size_t bytes = s.rows * s.k * element_bytes;
  time_gpu(state, [&](cudaStream_t stream) {
    check(cudaMemcpyAsync(b.dst.data(), b.src.data(), bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  copy_rate_gbs() = 0;  // set_bandwidth must not divide the copy by itself
  set_bandwidth(state, 2.0 * static_cast<double>(bytes));
  pack_copy_rates()[2.0 * static_cast<double>(bytes)] = state.counters["GB/s"];
  state.counters["frac_copy"] = 1.0;
}

/// One call of the repack: T's operand, transposing (stored rows-contiguous) or
/// copying (k-contiguous), from an aligned base or one element in.
template <class T>
void run_pack(pack_buffers& b, bool copy, bool misaligned, cudaStream_t stream) {
  const T* src = reinterpret_cast<const T*>(b.src.data()) + (misaligned ? 1 : 0);
  T* dst = reinterpret_cast<T*>(b.dst.data());
  const std::size_t ld_src = copy ? b.s.k : b.s.rows;
  if (!kf::detail::wgmma_pack_k_major(src, ld_src, copy, dst, b.s.k, b.s.rows, b.s.k, stream)) {
    throw std::runtime_error("the repack runs with the wgmma kernels (compute capability 9.0 and 90 in the build)");
  }
}

/// 16 elements of the packed copy against their source elements, bit for bit.
template <class T>
std::string spot_check_pack(pack_buffers& b, bool copy, bool misaligned) {
  check(cudaMemset(b.dst.data(), 0xFF, b.dst.size_bytes()), "poison dst");
  run_pack<T>(b, copy, misaligned, nullptr);
  check(cudaDeviceSynchronize(), "spot check run");
  const T* src = reinterpret_cast<const T*>(b.src.data()) + (misaligned ? 1 : 0);
  const T* dst = reinterpret_cast<const T*>(b.dst.data());
  for (int t = 0; t < 16; ++t) {
    const std::size_t x = mix64(300 + t) % b.s.rows, p = mix64(400 + t) % b.s.k;
    T got{}, expected{};
    check(cudaMemcpy(&got, dst + x * b.s.k + p, sizeof(T), cudaMemcpyDeviceToHost), "copy dst element");
    check(cudaMemcpy(&expected, src + (copy ? x * b.s.k + p : p * b.s.rows + x), sizeof(T), cudaMemcpyDeviceToHost),
          "copy src element");
    if (std::memcmp(&got, &expected, sizeof(T)) != 0) {
      return "the repack is wrong at (" + std::to_string(x) + ", " + std::to_string(p) + ")";
    }
  }
  return {};
}

template <class T>
void bm_pack(benchmark::State& state, pack_shape s, bool copy, bool misaligned) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    pack_buffers& b = pack_buffers_for(s);
    const std::string wrong = spot_check_pack<T>(b, copy, misaligned);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu(state, [&](cudaStream_t stream) { run_pack<T>(b, copy, misaligned, stream); });
    const double bytes = 2.0 * static_cast<double>(s.rows * s.k * sizeof(T));  // k a multiple of 16 bytes
    const auto rate = pack_copy_rates().find(bytes);
    copy_rate_gbs() = rate == pack_copy_rates().end() ? 0.0 : rate->second;
    set_bandwidth(state, bytes);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

void register_pack() {
  constexpr std::int64_t pack_iterations = 200;
  for (const pack_shape s : {pack_shape{4096, 4096}, pack_shape{8192, 8192}}) {
    for (const std::size_t element_bytes : {std::size_t{4}, std::size_t{2}, std::size_t{1}}) {
      const std::string type = element_bytes == 4 ? "f32" : element_bytes == 2 ? "f16" : "fp8";
      benchmark::RegisterBenchmark(("matmul/pack/memcpy_" + type + "/" + s.name()).c_str(), bm_pack_memcpy, s,
                                   element_bytes)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(pack_iterations);
      for (const bool misaligned : {false, true}) {
        if (misaligned && s.rows != 4096) continue;
        for (const bool copy : {false, true}) {
          const std::string name =
              "matmul/pack/" + type + (copy ? "_copy" : "_transpose") + (misaligned ? "_misaligned/" : "/") + s.name();
          auto* b = element_bytes == 4 ? benchmark::RegisterBenchmark(name.c_str(), bm_pack<float>, s, copy, misaligned)
                    : element_bytes == 2
                        ? benchmark::RegisterBenchmark(name.c_str(), bm_pack<__half>, s, copy, misaligned)
                        : benchmark::RegisterBenchmark(name.c_str(), bm_pack<__nv_fp8_e4m3>, s, copy, misaligned);
          b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(pack_iterations);
        }
      }
    }
  }
}

}  // namespace kf::bench::matmul
