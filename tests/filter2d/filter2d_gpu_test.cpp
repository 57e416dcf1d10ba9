// SPDX-License-Identifier: Apache-2.0
// filter2d on the GPU: every variant x every filter case, each run over every
// image (1x1, 7x5, 33x65, 1000x999; pitched rows, several channels, aligned and
// misaligned pointers) and every border, against the double reference.
// Outputs are poisoned first (0xFF bytes = NaN): an element a kernel fails to
// write cannot pass, and the pitch padding and the bytes before a misaligned
// output must still hold the poison afterwards.
//
// Tolerance, relative to the error scale sum |f| |in| of each output:
//   float:  (r*s + r + s + 10) * 2^-24   -- fp32 accumulation of r*s products
//           (the separable path: s + r products plus the rank-one factors,
//           each within 8 ulps of the filter entry it replaces)
//   __half: the same fp32 accumulation + 2^-11 (the output rounded to half),
//           + 8 * 2^-11 for separable filters (factors within 8 half ulps)
//   double: (r*s + 1) * 2^-53
// A misplaced tap, a wrong border pixel or a missing channel changes an
// output by about |f| |in| ~ scale / (r*s), far above any of these.
//
// register_window and rolling_window (float) need 16-byte aligned rows, which
// none of the images above have (they must fall back to smem_tiled there and
// still be right), so they and `best` also run over window_image_cases: the
// same shapes and more with aligned offsets and pitches that are multiples of
// 4 (widths that are not: the scalar tail), for 3x3 and 5x5 and for two sizes
// they have no kernel for. rolling_window's strips are 36 rows (5x5) and 46
// rows (3x3): heights at, one past and below those, strips that touch neither
// the top nor the bottom (1000), and a second block of columns holding a
// single (edge) thread (width 516).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/kernels/filter2d/tma_sm90a.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "test_support.hpp"
#include "window_candidates.hpp"

namespace {

struct filter_case {
  const char* name;
  int r, s;
  bool separable;  // built as an outer product (exercises best's row/column path)
};

const filter_case filter_cases[] = {
    {"1x1", 1, 1, false},
    {"3x3", 3, 3, false},
    {"5x5", 5, 5, false},
    {"4x4", 4, 4, false},
    {"7x1", 7, 1, false},
    {"1x9", 1, 9, false},
    {"31x31", 31, 31, false},
    {"6x8", 6, 8, false},
    {"7x7_separable", 7, 7, true},
    {"6x8_separable", 6, 8, true},
    {"31x31_separable", 31, 31, true},
};

struct image_case {
  std::size_t channels, height, width, in_pitch, out_pitch;
  std::size_t in_offset, out_offset;  // elements past a 256-byte-aligned allocation
};

// in_pitch 72 and 1000 are multiples of 8 (16-byte rows for float and half:
// the vector load path); 5 and the offsets of 1 force the scalar path.
const image_case image_cases[] = {
    {2, 1, 1, 1, 3, 0, 0},
    {3, 7, 5, 5, 9, 1, 1},
    {2, 33, 65, 72, 70, 0, 1},
    {1, 1000, 999, 1000, 1003, 0, 0},
};

// Aligned for register_window: offsets and pitches multiples of 4 floats
// (16 bytes); widths 1, 5, 65, 999, 6 leave a 1- to 3-column tail, 4 and 132
// none; heights 1, 7, 33, 17, 70 are not multiples of the 8-row strip.
const image_case window_image_cases[] = {
    {2, 1, 1, 4, 8, 0, 4},        {3, 7, 5, 8, 12, 4, 0},
    {2, 33, 65, 68, 72, 0, 0},    {1, 1000, 999, 1000, 1004, 0, 0},
    {1, 9, 4, 4, 4, 4, 4},        {2, 17, 6, 8, 8, 0, 0},
    {1, 1, 132, 132, 136, 0, 0},  {1, 70, 2, 4, 4, 0, 0},
    {1, 72, 516, 516, 520, 0, 4}, {2, 92, 13, 16, 16, 4, 8},
    {1, 37, 7, 8, 8, 0, 0},       {3, 47, 131, 132, 140, 8, 4},
};

template <class T>
std::vector<T> make_filter(const filter_case& fc, std::uint64_t seed) {
  const std::size_t n = static_cast<std::size_t>(fc.r) * fc.s;
  if (!fc.separable) return kf::test::random_vector<T>(n, seed);
  const auto u = kf::test::random_vector<double>(fc.r, seed);
  const auto v = kf::test::random_vector<double>(fc.s, seed + 1);
  std::vector<T> f(n);
  for (int i = 0; i < fc.r; ++i) {
    for (int j = 0; j < fc.s; ++j) f[i * fc.s + j] = kf::reference::from_double<T>(u[i] * v[j]);
  }
  return f;
}

template <class T>
kf::test::tolerance tolerance_for(const filter_case& fc) {
  const double taps = static_cast<double>(fc.r) * fc.s + fc.r + fc.s + 10;
  if constexpr (std::is_same_v<T, double>) {
    return {(fc.r * fc.s + 1) * std::ldexp(1.0, -53), 0};
  } else if constexpr (std::is_same_v<T, __half>) {
    return {taps * std::ldexp(1.0, -24) + std::ldexp(1.0, -11) * (fc.separable ? 9 : 1), 0};
  } else {
    return {taps * std::ldexp(1.0, -24), 0};
  }
}

bool is_poison(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) {
    if (b[i] != 0xFF) return false;
  }
  return true;
}

constexpr std::initializer_list<kf::border> all_borders = {kf::border::zero, kf::border::clamp, kf::border::reflect};

/// Runs `launch(ic, mode, in, filter, out)` (in and out at their offsets)
/// over every image and border, on a poisoned output, against the reference.
template <class T, class Launch, class Images>
void run_case_with(const Launch& launch, const filter_case& fc, const Images& images,
                   std::initializer_list<kf::border> modes = all_borders) {
  const auto filter = make_filter<T>(fc, 1000 + fc.r * 37 + fc.s);
  const auto d_filter = kf::to_device(filter);
  for (const image_case& ic : images) {
    const std::size_t in_n = ic.in_offset + ic.channels * ic.height * ic.in_pitch;
    const std::size_t out_n = ic.out_offset + ic.channels * ic.height * ic.out_pitch;
    const auto input = kf::test::random_vector<T>(in_n, 7 * ic.height + ic.width);
    const auto d_in = kf::to_device(input);
    kf::device_buffer<T> d_out(out_n);
    std::vector<double> expected(ic.channels * ic.height * ic.out_pitch), scale(expected.size());
    for (kf::border mode : modes) {
      SCOPED_TRACE(std::string("image ") + std::to_string(ic.channels) + " x " + std::to_string(ic.height) + " x " +
                   std::to_string(ic.width) + " (pitch " + std::to_string(ic.in_pitch) + " -> " +
                   std::to_string(ic.out_pitch) + "), border " + kf::to_string(mode));
      kf::reference::filter2d_exact(ic.channels, ic.height, ic.width, input.data() + ic.in_offset, ic.in_pitch,
                                    filter.data(), fc.r, fc.s, mode, expected.data(), ic.out_pitch, scale.data());
      kf::test::poison(d_out.data(), d_out.size_bytes());
      launch(ic, mode, d_in.data() + ic.in_offset, d_filter.data(), d_out.data() + ic.out_offset);
      const auto got = kf::to_host(d_out);
      ASSERT_TRUE(is_poison(got.data(), ic.out_offset * sizeof(T))) << "bytes before the output were written";
      std::vector<T> values;
      std::vector<double> want, want_scale;
      for (std::size_t row = 0; row < ic.channels * ic.height; ++row) {
        const T* out_row = got.data() + ic.out_offset + row * ic.out_pitch;
        ASSERT_TRUE(is_poison(out_row + ic.width, (ic.out_pitch - ic.width) * sizeof(T)))
            << "pitch padding of row " << row << " was written";
        for (std::size_t x = 0; x < ic.width; ++x) {
          values.push_back(out_row[x]);
          want.push_back(expected[row * ic.out_pitch + x]);
          want_scale.push_back(scale[row * ic.out_pitch + x]);
        }
      }
      ASSERT_TRUE(kf::test::all_close(values, want, tolerance_for<T>(fc), &want_scale));
    }
  }
}

/// run_case_with for kf::filter2d with `variant`.
template <class T, class Images = decltype(image_cases)>
void run_case(kf::filter2d_variant variant, const filter_case& fc, const Images& images = image_cases,
              std::initializer_list<kf::border> modes = all_borders) {
  const auto launch = [&](const image_case& ic, kf::border mode, const T* in, const T* filter, T* out) {
    kf::filter2d_options options;
    options.variant = variant;
    options.mode = mode;
    kf::filter2d<T>(ic.channels, ic.height, ic.width, in, ic.in_pitch, filter, fc.r, fc.s, out, ic.out_pitch, options);
  };
  run_case_with<T>(launch, fc, images, modes);
}

// Readable parameter values in test names.
void PrintTo(const filter_case& c, std::ostream* os) { *os << c.name; }

using filter2d_param = std::tuple<kf::filter2d_variant, filter_case>;

std::string param_name(const ::testing::TestParamInfo<filter2d_param>& info) {
  return std::string(kf::to_string(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

const auto all_variants = ::testing::Values(kf::filter2d_variant::best, kf::filter2d_variant::naive,
                                            kf::filter2d_variant::constant_memory, kf::filter2d_variant::smem_tiled);

class Filter2dFloat : public ::testing::TestWithParam<filter2d_param> {};
TEST_P(Filter2dFloat, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  run_case<float>(std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Conv, Filter2dFloat, ::testing::Combine(all_variants, ::testing::ValuesIn(filter_cases)),
                         param_name);

// register_window, rolling_window and best over the aligned images (the
// first two also over the unaligned ones): 3x3 and 5x5 take a window kernel
// where the rows are aligned; 4x4 and 1x9 have none and must fall back.
const filter_case window_filter_cases[] = {
    {"3x3", 3, 3, false}, {"5x5", 5, 5, false}, {"4x4", 4, 4, false}, {"1x9", 1, 9, false}};

class Filter2dWindowFloat : public ::testing::TestWithParam<filter2d_param> {};
TEST_P(Filter2dWindowFloat, AlignedImagesMatchReference) {
  KF_SKIP_WITHOUT_GPU();
  run_case<float>(std::get<0>(GetParam()), std::get<1>(GetParam()), window_image_cases);
  if (std::get<0>(GetParam()) != kf::filter2d_variant::best) {
    run_case<float>(std::get<0>(GetParam()), std::get<1>(GetParam()));  // the unaligned images: the fallback
  }
}
INSTANTIATE_TEST_SUITE_P(Conv, Filter2dWindowFloat,
                         ::testing::Combine(::testing::Values(kf::filter2d_variant::register_window,
                                                              kf::filter2d_variant::rolling_window,
                                                              kf::filter2d_variant::best),
                                            ::testing::ValuesIn(window_filter_cases)),
                         param_name);

// best and both window kernels on a tall image (1024 strips of 8 rows, 228 of
// 36, 179 of 46) with aligned rows: a grid the size of a real image's.
TEST(Filter2dRegisterWindow, BestOnTallImage) {
  KF_SKIP_WITHOUT_GPU();
  const image_case tall[] = {{1, 8192, 64, 64, 68, 0, 0}};
  for (auto v :
       {kf::filter2d_variant::best, kf::filter2d_variant::register_window, kf::filter2d_variant::rolling_window}) {
    SCOPED_TRACE(kf::to_string(v));
    run_case<float>(v, filter_cases[1], tall);  // 3x3
    run_case<float>(v, filter_cases[2], tall);  // 5x5
  }
}

// Neither in nor out aligned, or a pitch not a multiple of 4, one condition at
// a time: register_window and rolling_window must run smem_tiled and still be right.
TEST(Filter2dRegisterWindow, MisalignedOrOddPitchFallsBack) {
  KF_SKIP_WITHOUT_GPU();
  const image_case fallback[] = {
      {2, 40, 37, 40, 40, 1, 0},  // in plane misaligned by 4 bytes
      {2, 40, 37, 40, 40, 0, 2},  // out plane misaligned by 8 bytes
      {2, 40, 37, 41, 40, 0, 0},  // in_pitch % 4 != 0 (rows after the first misaligned)
      {2, 40, 37, 40, 42, 0, 0},  // out_pitch % 4 != 0
  };
  for (auto v : {kf::filter2d_variant::register_window, kf::filter2d_variant::rolling_window}) {
    SCOPED_TRACE(kf::to_string(v));
    run_case<float>(v, filter_cases[1], fallback);  // 3x3
    run_case<float>(v, filter_cases[2], fallback);  // 5x5
  }
}

// ---- register_window's candidate configurations (tuning.hpp) -----------------
// Every candidate bench_conv times (register_window_cfg rows) over the aligned
// images, for 3x3 and 5x5 and every border, plus images for their geometry:
// widths past one block of 128 threads x 8 columns (1031: the second block's
// one thread is an edge thread; 2053), heights that are not multiples of 2 or
// 3 rows (the 1-, 2-, 3- and 4-row strips), and 65600 rows, more strips than
// gridDim.y holds for 1-row strips (the kernel's grid-stride loop over strips).
const image_case candidate_extra_images[] = {
    {1, 19, 1031, 1032, 1036, 4, 0},
    {2, 11, 2053, 2056, 2060, 0, 4},
    {1, 65600, 8, 8, 12, 0, 0},
};

/// Runs candidate `name` where run_case_with calls the library.
template <class Images>
void run_candidate(const std::string& name, const filter_case& fc, const Images& images) {
  const auto launch = [&](const image_case& ic, kf::border mode, const float* in, const float* filter, float* out) {
    kf::test::filter2d_window_candidate(name, ic.channels, ic.height, ic.width, in, ic.in_pitch, filter, fc.r, fc.s,
                                        out, ic.out_pitch, mode);
  };
  run_case_with<float>(launch, fc, images);
}

/// Every configuration adds the same products in the same order, so candidate
/// `name` must write exactly the bytes register_window (the library) writes,
/// NaN poison where neither writes included.
template <class Images>
void expect_bits_of_register_window(const std::string& name, const filter_case& fc, const Images& images) {
  const auto filter = make_filter<float>(fc, 2000 + fc.r);
  const auto d_filter = kf::to_device(filter);
  for (const image_case& ic : images) {
    const auto input = kf::test::random_vector<float>(ic.in_offset + ic.channels * ic.height * ic.in_pitch, ic.width);
    const auto d_in = kf::to_device(input);
    const std::size_t out_n = ic.out_offset + ic.channels * ic.height * ic.out_pitch;
    kf::device_buffer<float> d_library(out_n), d_candidate(out_n);
    for (kf::border mode : all_borders) {
      SCOPED_TRACE(std::string("image ") + std::to_string(ic.channels) + " x " + std::to_string(ic.height) + " x " +
                   std::to_string(ic.width) + ", border " + kf::to_string(mode));
      kf::test::poison(d_library.data(), d_library.size_bytes());
      kf::test::poison(d_candidate.data(), d_candidate.size_bytes());
      kf::filter2d_options options;
      options.variant = kf::filter2d_variant::register_window;
      options.mode = mode;
      kf::filter2d<float>(ic.channels, ic.height, ic.width, d_in.data() + ic.in_offset, ic.in_pitch, d_filter.data(),
                          fc.r, fc.s, d_library.data() + ic.out_offset, ic.out_pitch, options);
      kf::test::filter2d_window_candidate(name, ic.channels, ic.height, ic.width, d_in.data() + ic.in_offset,
                                          ic.in_pitch, d_filter.data(), fc.r, fc.s, d_candidate.data() + ic.out_offset,
                                          ic.out_pitch, mode);
      const auto want = kf::to_host(d_library), got = kf::to_host(d_candidate);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << "candidate " << name << " differs from register_window in some bit";
    }
  }
}

using candidate_param = std::tuple<std::string, filter_case>;

class Filter2dWindowCandidate : public ::testing::TestWithParam<candidate_param> {};
TEST_P(Filter2dWindowCandidate, AlignedImagesMatchReference) {
  KF_SKIP_WITHOUT_GPU();
  const auto& [name, fc] = GetParam();
  run_candidate(name, fc, window_image_cases);
  run_candidate(name, fc, candidate_extra_images);
}
TEST_P(Filter2dWindowCandidate, SameBitsAsRegisterWindow) {
  KF_SKIP_WITHOUT_GPU();
  const auto& [name, fc] = GetParam();
  expect_bits_of_register_window(name, fc, window_image_cases);
  expect_bits_of_register_window(name, fc, candidate_extra_images);
}
INSTANTIATE_TEST_SUITE_P(Conv, Filter2dWindowCandidate,
                         ::testing::Combine(::testing::ValuesIn(kf::test::filter2d_window_candidate_names()),
                                            ::testing::Values(filter_case{"3x3", 3, 3, false},
                                                              filter_case{"5x5", 5, 5, false})),
                         [](const ::testing::TestParamInfo<candidate_param>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

// What a candidate cannot run: errc::invalid_argument naming the condition or
// the name, and nothing written.
TEST(Filter2dWindowCandidate, RefusesUnknownNamesAndUnalignedRows) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t h = 9, w = 13;
  const auto filter = kf::test::random_vector<float>(25, 8);
  const auto input = kf::test::random_vector<float>(16 * h + 4, 9);
  const auto d_filter = kf::to_device(filter);
  const auto d_in = kf::to_device(input);
  kf::device_buffer<float> d_out(16 * h + 4);
  kf::test::poison(d_out.data(), d_out.size_bytes());
  const std::string first = kf::test::filter2d_window_candidate_names().front();
  const auto call = [&](const std::string& name, std::size_t in_offset, std::size_t in_pitch, std::size_t r) {
    return [&, name, in_offset, in_pitch, r] {
      kf::test::filter2d_window_candidate(name, 1, h, w, d_in.data() + in_offset, in_pitch, d_filter.data(), r, r,
                                          d_out.data(), 16, kf::border::zero);
    };
  };
  kf::test::expect_error(kf::errc::invalid_argument, "no register_window candidate", call("rows99_cols4", 0, 16, 5));
  kf::test::expect_error(kf::errc::invalid_argument, "16-byte aligned", call(first, 1, 16, 5));  // in misaligned
  kf::test::expect_error(kf::errc::invalid_argument, "16-byte aligned", call(first, 0, 15, 3));  // in_pitch % 4
  kf::test::expect_error(kf::errc::invalid_argument, "3x3 and 5x5 filters only", call(first, 0, 16, 4));  // 4x4
  ASSERT_TRUE(is_poison(kf::to_host(d_out).data(), d_out.size_bytes())) << "the output was written";
}

// ---- tma_pipeline (step 6, sm_90a) ----------------------------------------------
// Zero border, 3x3 and 5x5, aligned rows only (no fallback: everything else is
// errc::unsupported, below). Strips are 128 columns and chunks 32 rows, each
// block a contiguous range of chunks (tma_plan.hpp): widths 1, 4, 5, 127, 128,
// 129, 131 (prime), 257, 999 and heights 1, 7, 31, 32, 33, 97 (prime), 1000
// cover partial strips and chunks, the scalar tail of the last float4, several
// ranges per strip (uneven: 1000 rows = 32 chunks over 16 ranges) and the
// channels' grid-stride loop; offsets and pitches multiples of 4 floats.
const image_case tma_image_cases[] = {
    {2, 1, 1, 4, 8, 0, 4},
    {3, 7, 5, 8, 12, 4, 0},
    {1, 31, 127, 128, 128, 0, 0},
    {1, 32, 128, 128, 132, 4, 0},
    {2, 33, 129, 132, 136, 0, 4},
    {1, 97, 131, 132, 132, 8, 8},
    {3, 1000, 999, 1000, 1004, 0, 0},
    {1, 9, 4, 4, 4, 4, 4},
    {2, 17, 257, 260, 264, 0, 0},
    {1, 2, 2, 4, 4, 0, 0},
};

/// Whether filter2d_variant::tma_pipeline runs here: the sm_90a kernel in the
/// library and a compute capability 9.0 device. Elsewhere it must raise errc::unsupported.
bool tma_pipeline_runs() { return kf::detail::filter2d_tma_available(kf::get_device_info().device); }

class Filter2dTmaPipelineFloat : public ::testing::TestWithParam<filter_case> {};
TEST_P(Filter2dTmaPipelineFloat, AlignedImagesMatchReference) {
  KF_SKIP_WITHOUT_GPU();
  if (!tma_pipeline_runs()) GTEST_SKIP() << "tma_pipeline needs compute capability 9.0 and an sm_90a build";
  run_case<float>(kf::filter2d_variant::tma_pipeline, GetParam(), tma_image_cases, {kf::border::zero});
}
INSTANTIATE_TEST_SUITE_P(Conv, Filter2dTmaPipelineFloat,
                         ::testing::Values(filter_case{"3x3", 3, 3, false}, filter_case{"5x5", 5, 5, false}),
                         [](const ::testing::TestParamInfo<filter_case>& info) {
                           return std::string(info.param.name);
                         });

// Real-sized grids: a tall narrow image (one strip, 256 ranges of one chunk),
// 2048^2 (16 strips x 24 uneven ranges on 132 SMs) and one past each multiple.
TEST(Filter2dTmaPipeline, LargeImagesMatchReference) {
  KF_SKIP_WITHOUT_GPU();
  if (!tma_pipeline_runs()) GTEST_SKIP() << "tma_pipeline needs compute capability 9.0 and an sm_90a build";
  const image_case large[] = {
      {1, 8192, 64, 64, 68, 0, 0}, {1, 2048, 2048, 2048, 2048, 0, 0}, {2, 2049, 2049, 2052, 2056, 4, 0}};
  run_case<float>(kf::filter2d_variant::tma_pipeline, filter_cases[1], large, {kf::border::zero});  // 3x3
  run_case<float>(kf::filter2d_variant::tma_pipeline, filter_cases[2], large, {kf::border::zero});  // 5x5
}

// Everything tma_pipeline does not compute: errc::unsupported naming the
// condition, and nothing written (the output keeps its poison). On a device
// other than sm_90 (or a build without sm_90a) even the supported calls are refused.
TEST(Filter2dTmaPipeline, RefusesWhatItCannotRunAndWritesNothing) {
  KF_SKIP_WITHOUT_GPU();
  struct refused {
    const char* needle;
    std::size_t r, s, in_pitch, out_pitch, in_offset, out_offset;
    kf::border mode;
  };
  const refused cases[] = {
      {"3x3 or 5x5", 4, 4, 40, 40, 0, 0, kf::border::zero},
      {"3x3 or 5x5", 1, 1, 40, 40, 0, 0, kf::border::zero},
      {"3x3 or 5x5", 7, 7, 40, 40, 0, 0, kf::border::zero},
      {"border::zero", 5, 5, 40, 40, 0, 0, kf::border::clamp},
      {"border::zero", 3, 3, 40, 40, 0, 0, kf::border::reflect},
      {"'in' 16-byte aligned", 5, 5, 40, 40, 1, 0, kf::border::zero},   // in misaligned by one element
      {"'in' 16-byte aligned", 5, 5, 41, 40, 0, 0, kf::border::zero},   // in_pitch % 4 != 0
      {"'out' 16-byte aligned", 5, 5, 40, 40, 0, 2, kf::border::zero},  // out misaligned by two elements
      {"'out' 16-byte aligned", 3, 3, 40, 42, 0, 0, kf::border::zero},  // out_pitch % 4 != 0
  };
  const std::size_t channels = 2, h = 40, w = 37;
  const auto filter = kf::test::random_vector<float>(49, 5);
  const auto d_filter = kf::to_device(filter);
  for (const refused& rc : cases) {
    SCOPED_TRACE(rc.needle);
    const auto input = kf::test::random_vector<float>(rc.in_offset + channels * h * rc.in_pitch, 3);
    const auto d_in = kf::to_device(input);
    kf::device_buffer<float> d_out(rc.out_offset + channels * h * rc.out_pitch);
    kf::test::poison(d_out.data(), d_out.size_bytes());
    kf::filter2d_options o;
    o.variant = kf::filter2d_variant::tma_pipeline;
    o.mode = rc.mode;
    kf::test::expect_error(kf::errc::unsupported, rc.needle, [&] {
      kf::filter2d<float>(channels, h, w, d_in.data() + rc.in_offset, rc.in_pitch, d_filter.data(), rc.r, rc.s,
                          d_out.data() + rc.out_offset, rc.out_pitch, o);
    });
    const auto got = kf::to_host(d_out);
    ASSERT_TRUE(is_poison(got.data(), d_out.size_bytes())) << "the output was written";
  }
  if (!tma_pipeline_runs()) {
    const auto input = kf::test::random_vector<float>(channels * h * 40, 3);
    const auto d_in = kf::to_device(input);
    kf::device_buffer<float> d_out(channels * h * 40);
    kf::test::poison(d_out.data(), d_out.size_bytes());
    kf::filter2d_options o;
    o.variant = kf::filter2d_variant::tma_pipeline;
    kf::test::expect_error(kf::errc::unsupported, "tma_pipeline", [&] {
      kf::filter2d<float>(channels, h, w, d_in.data(), 40, d_filter.data(), 5, 5, d_out.data(), 40, o);
    });
    ASSERT_TRUE(is_poison(kf::to_host(d_out).data(), d_out.size_bytes())) << "the output was written";
  }
}

class Filter2dHalf : public ::testing::TestWithParam<filter2d_param> {};
TEST_P(Filter2dHalf, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  run_case<__half>(std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Conv, Filter2dHalf, ::testing::Combine(all_variants, ::testing::ValuesIn(filter_cases)),
                         param_name);

class Filter2dDouble : public ::testing::TestWithParam<filter2d_param> {};
TEST_P(Filter2dDouble, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  run_case<double>(std::get<0>(GetParam()), std::get<1>(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Conv, Filter2dDouble,
                         ::testing::Combine(::testing::Values(kf::filter2d_variant::best, kf::filter2d_variant::naive),
                                            ::testing::ValuesIn(filter_cases)),
                         param_name);

// Concurrent constant_memory calls on different streams with different
// filters: each must see its own filter (the slot ring's events order them).
TEST(Filter2dConstantMemory, ConcurrentStreamsKeepTheirOwnFilters) {
  KF_SKIP_WITHOUT_GPU();
  constexpr int streams = 8;  // twice the slot ring, so slots are reused while busy
  const std::size_t h = 512, w = 512;
  const auto input = kf::test::random_vector<float>(h * w, 99);
  const auto d_in = kf::to_device(input);
  std::vector<cudaStream_t> s(streams);
  std::vector<std::vector<float>> filters;
  std::vector<kf::device_buffer<float>> d_filters, d_outs;
  for (int i = 0; i < streams; ++i) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking), cudaSuccess);
    filters.push_back(kf::test::random_vector<float>(25, 500 + i));
    d_filters.push_back(kf::to_device(filters.back()));
    d_outs.emplace_back(h * w);
    kf::test::poison(d_outs.back().data(), d_outs.back().size_bytes());
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < streams; ++i) {
      kf::filter2d_options o;
      o.stream = s[i];
      o.variant = kf::filter2d_variant::constant_memory;
      kf::filter2d<float>(1, h, w, d_in.data(), w, d_filters[i].data(), 5, 5, d_outs[i].data(), w, o);
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> expected(h * w), scale(h * w);
  for (int i = 0; i < streams; ++i) {
    kf::reference::filter2d_exact(1, h, w, input.data(), w, filters[i].data(), 5, 5, kf::border::zero, expected.data(),
                                  w, scale.data());
    EXPECT_TRUE(kf::test::all_close(kf::to_host(d_outs[i]), expected, {40 * std::ldexp(1.0, -24), 0}, &scale))
        << "stream " << i;
    cudaStreamDestroy(s[i]);
  }
}

}  // namespace

namespace kf {
void PrintTo(filter2d_variant v, std::ostream* os) { *os << to_string(v); }
}  // namespace kf
