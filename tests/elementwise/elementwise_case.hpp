// SPDX-License-Identifier: Apache-2.0
// One elementwise GPU test case, described as data and checked completely:
// every pointer sits `offset` elements into its own allocation, everything
// around the n elements is poisoned (0xFF bytes = NaN), inputs are random
// (never zero), the result is compared with the CPU reference, inputs that are
// not outputs must come back bit-for-bit unchanged, and the poisoned slack
// around every array must still be 0xFF (an out-of-bounds write fails).
//
// Tolerances (relative, times the error scale of each element):
//  * saxpy:      |got - ref| <= 2u (|a*x| + |y|) for float, __half, __nv_bfloat16,
//                where u = unit_roundoff<T>(): the kernel rounds its FMA once to the
//                compute type (fp32 for the half types) and once more to T, the
//                reference rounds an exact double result once to T, so they differ
//                by at most one ulp of T (two ulps of slack is 2u of the scale).
//                double: 4u (|a*x| + |y|), because the reference itself is computed
//                in double (a*x and the sum each round once, the kernel's FMA once).
//  * vector_add: 2u (|a| + |b|) (4u for double, same reason).
//  * ReLU forward and backward: exact (tolerance 0): they only select values.
// NaN passes only where the reference is NaN; an infinity only where the
// reference is the same infinity (kf::test::all_close).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "test_support.hpp"

namespace kf::test {

enum class elementwise_op { saxpy, vector_add, relu_forward, relu_backward };

inline const char* to_string(elementwise_op op) {
  switch (op) {
    case elementwise_op::saxpy: return "saxpy";
    case elementwise_op::vector_add: return "vector_add";
    case elementwise_op::relu_forward: return "relu_threshold_forward";
    case elementwise_op::relu_backward: return "relu_threshold_backward";
  }
  return "?";
}

/// Element offsets of each allocation's array from the allocation start
/// (cudaMalloc returns 256-byte aligned memory, so offset k puts the pointer
/// k * sizeof(T) bytes past a 16-byte boundary). Indexed by allocation, in the
/// order of the op's pointer arguments.
using offsets = std::array<std::size_t, 3>;

/// Elements of poisoned slack after each array: more than one 16-byte vector
/// of the narrowest type (8 halves), so a vector store that runs past the end
/// lands in the slack.
constexpr std::size_t slack_after = 16;

/// Sizes every op x type x variant is checked at: empty, one element, smaller
/// than a vector, around a warp, a prime-ish 1023, and 2^20 + 7 (many blocks,
/// a tail that is not a multiple of any tile).
inline const std::vector<std::size_t>& awkward_sizes() {
  static const std::vector<std::size_t> sizes = {0, 1, 3, 31, 33, 1023, (std::size_t{1} << 20) + 7};
  return sizes;
}

/// Offset layouts: all aligned (the vector path with no head), all at the same
/// misaligned offset (the peeled-head path), and different offsets (the
/// one-element-chunk path; for double, offset 2 is 16 bytes, i.e. aligned).
inline const std::vector<offsets>& pointer_layouts() {
  static const std::vector<offsets> layouts = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {1, 2, 3}, {3, 0, 2}};
  return layouts;
}

struct elementwise_case {
  elementwise_op op = elementwise_op::saxpy;
  kf::elementwise_variant variant = kf::elementwise_variant::best;
  std::size_t n = 0;
  offsets offset = {0, 0, 0};
  /// -1: out-of-place. k >= 0: the output is the very same array as input k
  /// (saxpy: k = 0 means x == y; y is always both input and output).
  int alias_input = -1;
  int block_size = 0;
  cudaStream_t stream = nullptr;
  /// Sprinkle NaN, +inf, -inf and the threshold itself into the inputs.
  bool special_values = false;
  double a = 1.5;          ///< saxpy's scalar
  double threshold = 0.5;  ///< ReLU's threshold
  std::uint64_t seed = 1;

  std::string describe() const {
    std::ostringstream out;
    out << to_string(op) << " variant=" << kf::to_string(variant) << " n=" << n << " offsets={" << offset[0] << ","
        << offset[1] << "," << offset[2] << "}";
    if (alias_input >= 0) out << " in-place(output == input " << alias_input << ")";
    if (block_size) out << " block_size=" << block_size;
    if (stream) out << " stream=non-default";
    if (special_values) out << " with NaN/inf";
    return out.str();
  }
};

/// Which allocation each role uses: inputs in[0..1] (in[1] = -1 for one-input
/// ops), the output, and how many allocations there are.
struct wiring {
  int in[2];
  int out;
  int allocations;
};

inline wiring wire(elementwise_op op, int alias_input) {
  switch (op) {
    case elementwise_op::saxpy:  // inputs (x, y); y is the output
      return alias_input == 0 ? wiring{{0, 0}, 0, 1} : wiring{{0, 1}, 1, 2};
    case elementwise_op::relu_forward:  // input x, output y
      return alias_input == 0 ? wiring{{0, -1}, 0, 1} : wiring{{0, -1}, 1, 2};
    case elementwise_op::vector_add:     // inputs (a, b), output c
    case elementwise_op::relu_backward:  // inputs (dy, x), output dx
      if (alias_input == 0) return {{0, 1}, 0, 2};
      if (alias_input == 1) return {{0, 1}, 1, 2};
      return {{0, 1}, 2, 3};
  }
  return {{0, 1}, 2, 3};
}

inline int input_count(elementwise_op op) { return op == elementwise_op::relu_forward ? 1 : 2; }

/// Random inputs, never zero; with special values, about one element in 16 of
/// each input is NaN, +inf, -inf or exactly +-threshold (x == t must give 0).
template <class T>
std::vector<T> make_input(std::size_t n, std::uint64_t seed, bool special_values, double threshold) {
  std::vector<T> v = random_vector<T>(n, seed);
  if (special_values) {
    const double specials[] = {std::nan(""), INFINITY, -INFINITY, threshold, -threshold};
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t r = mix64(seed ^ (0xABCDEFull + i));
      if (r % 16 == 0) v[i] = kf::reference::from_double<T>(specials[(r >> 8) % 5]);
    }
  }
  return v;
}

/// Host reference for `c`, from the inputs as they were before the call.
template <class T>
std::vector<T> reference_result(const elementwise_case& c, const std::vector<T>& in0, const std::vector<T>& in1) {
  std::vector<T> ref(c.n);
  const T a = kf::reference::from_double<T>(c.a);
  const T t = kf::reference::from_double<T>(c.threshold);
  switch (c.op) {
    case elementwise_op::saxpy:
      ref = in1;
      kf::reference::saxpy<T>(c.n, a, in0.data(), ref.data());
      break;
    case elementwise_op::vector_add: kf::reference::vector_add<T>(c.n, in0.data(), in1.data(), ref.data()); break;
    case elementwise_op::relu_forward: kf::reference::relu_threshold_forward<T>(c.n, in0.data(), ref.data(), t); break;
    case elementwise_op::relu_backward:
      kf::reference::relu_threshold_backward<T>(c.n, in0.data(), in1.data(), ref.data(), t);
      break;
  }
  return ref;
}

/// The comparison of the output against the reference (see the file comment).
template <class T>
::testing::AssertionResult check_output(const elementwise_case& c, const std::vector<T>& got, std::size_t offset,
                                        const std::vector<T>& ref, const std::vector<T>& in0,
                                        const std::vector<T>& in1) {
  if (c.op == elementwise_op::relu_forward || c.op == elementwise_op::relu_backward) {
    return all_close(got, ref, tolerance{0, 0}, nullptr, offset);
  }
  const double rounding_ulps = std::is_same_v<T, double> ? 4.0 : 2.0;
  const double a = kf::reference::to_double(kf::reference::from_double<T>(c.a));
  std::vector<double> scale(c.n);
  for (std::size_t i = 0; i < c.n; ++i) {
    const double first = kf::reference::to_double(in0[i]);
    const double second = kf::reference::to_double(in1[i]);
    scale[i] =
        c.op == elementwise_op::saxpy ? std::fabs(a * first) + std::fabs(second) : std::fabs(first) + std::fabs(second);
  }
  return all_close(got, ref, tolerance{rounding_ulps * unit_roundoff<T>(), 0}, &scale, offset);
}

/// Counts the elements of `host` outside [offset, offset + n) that are not 0xFF bytes.
template <class T>
std::size_t damaged_slack(const std::vector<T>& host, std::size_t offset, std::size_t n, std::size_t* first) {
  std::size_t damaged = 0;
  const auto poisoned = [](const T& v) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (unsigned char b : bytes) {
      if (b != 0xFF) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (i >= offset && i < offset + n) continue;
    if (!poisoned(host[i]) && damaged++ == 0) *first = i;
  }
  return damaged;
}

/// Runs one case on the GPU and records every mismatch as a test failure.
template <class T>
void run_case(const elementwise_case& c) {
  SCOPED_TRACE(c.describe());
  const wiring w = wire(c.op, c.alias_input);
  const int inputs = input_count(c.op);

  // Allocations: poisoned whole, then the inputs copied into their windows.
  std::vector<kf::device_buffer<T>> dev;
  dev.reserve(w.allocations);
  std::vector<std::vector<T>> initial(w.allocations);
  for (int b = 0; b < w.allocations; ++b) {
    dev.emplace_back(c.offset[b] + c.n + slack_after);
    poison(dev[b].data(), dev[b].size_bytes(), c.stream);
  }
  for (int k = 0; k < inputs; ++k) {
    const int b = w.in[k];
    if (!initial[b].empty() || c.n == 0) continue;  // aliased inputs share one allocation
    initial[b] = make_input<T>(c.n, c.seed * 7 + b, c.special_values, c.threshold);
    ASSERT_EQ(cudaMemcpyAsync(dev[b].data() + c.offset[b], initial[b].data(), c.n * sizeof(T), cudaMemcpyHostToDevice,
                              c.stream),
              cudaSuccess);
  }
  const std::vector<T> none;
  const std::vector<T>& in0 = c.n ? initial[w.in[0]] : none;
  const std::vector<T>& in1 = (c.n && inputs == 2) ? initial[w.in[1]] : none;
  const std::vector<T> ref = reference_result<T>(c, in0, in1);

  const auto at = [&](int b) { return dev[b].data() + c.offset[b]; };
  kf::elementwise_options options;
  options.variant = c.variant;
  options.block_size = c.block_size;
  options.stream = c.stream;
  const T a = kf::reference::from_double<T>(c.a);
  const T t = kf::reference::from_double<T>(c.threshold);
  switch (c.op) {
    case elementwise_op::saxpy: kf::saxpy<T>(c.n, a, at(w.in[0]), at(w.out), options); break;
    case elementwise_op::vector_add: kf::vector_add<T>(c.n, at(w.in[0]), at(w.in[1]), at(w.out), options); break;
    case elementwise_op::relu_forward: kf::relu_threshold_forward<T>(c.n, at(w.in[0]), at(w.out), t, options); break;
    case elementwise_op::relu_backward:
      kf::relu_threshold_backward<T>(c.n, at(w.in[0]), at(w.in[1]), at(w.out), t, options);
      break;
  }

  for (int b = 0; b < w.allocations; ++b) {
    const std::vector<T> host = kf::to_host(dev[b], c.stream);  // waits for c.stream
    std::size_t first = 0;
    const std::size_t damaged = damaged_slack(host, c.offset[b], c.n, &first);
    EXPECT_EQ(damaged, 0u) << "allocation " << b << ": " << damaged << " element(s) outside the array were "
                           << "written (first at index " << first << ", array at [" << c.offset[b] << ", "
                           << c.offset[b] + c.n << "))";
    if (b == w.out) {
      EXPECT_TRUE(check_output(c, host, c.offset[b], ref, in0, in1)) << "output (allocation " << b << ")";
    } else if (c.n) {
      EXPECT_EQ(std::memcmp(host.data() + c.offset[b], initial[b].data(), c.n * sizeof(T)), 0)
          << "input allocation " << b << " was modified";
    }
  }
}

}  // namespace kf::test
