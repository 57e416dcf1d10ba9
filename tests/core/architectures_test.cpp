// SPDX-License-Identifier: Apache-2.0
// kf::compiled_architectures(): the list comes from the build itself
// (__CUDA_ARCH_LIST__), so it must equal what CMake configured for the library
// target. tests/core/CMakeLists.txt passes that setting in as
// KF_EXPECTED_ARCHITECTURES (comma-separated, e.g. "75-real,80-real,...,121").
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "kernelforge/device.hpp"
#include "kernelforge/kernels/arch/ptx_sharing.hpp"

#ifndef KF_EXPECTED_ARCHITECTURES
#error "tests/core/CMakeLists.txt must define KF_EXPECTED_ARCHITECTURES"
#endif

namespace {

std::string join(const std::vector<int>& v) {
  std::ostringstream out;
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  return out.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  return s;
}

struct parsed_architectures {
  std::vector<int> numbers;  ///< ascending, unique
  std::string symbolic;      ///< "native", "all", ... when CMake resolves the list itself
};

/// "75-real,90a-real,121" -> {75, 90, 121}: strips -real / -virtual and the
/// 'a' / 'f' feature suffixes (sm_90a code reports __CUDA_ARCH__ 900).
parsed_architectures parse(const std::string& setting) {
  parsed_architectures out;
  std::stringstream in(setting);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    entry = trim(entry);
    if (entry.empty()) continue;
    if (entry == "native" || entry == "all" || entry == "all-major" || entry == "OFF") {
      out.symbolic = entry;
      continue;
    }
    for (const char* suffix : {"-real", "-virtual"}) {
      const std::string s = suffix;
      if (entry.size() > s.size() && entry.compare(entry.size() - s.size(), s.size(), s) == 0) {
        entry.erase(entry.size() - s.size());
      }
    }
    if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) entry.pop_back();
    if (entry.empty() || !std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(c); })) {
      continue;  // not a numeric architecture
    }
    out.numbers.push_back(std::stoi(entry));
  }
  std::sort(out.numbers.begin(), out.numbers.end());
  out.numbers.erase(std::unique(out.numbers.begin(), out.numbers.end()), out.numbers.end());
  return out;
}

TEST(CompiledArchitectures, NonEmptyAscendingUnique) {
  const std::vector<int> archs = kf::compiled_architectures();
  ASSERT_FALSE(archs.empty());
  for (std::size_t i = 1; i < archs.size(); ++i) {
    EXPECT_LT(archs[i - 1], archs[i]) << "not strictly ascending: " << join(archs);
  }
  for (int a : archs) {
    EXPECT_GE(a, 50) << join(archs);  // compute capabilities as major*10 + minor
    EXPECT_LT(a, 1000) << join(archs);
  }
}

TEST(CompiledArchitectures, MatchesTheConfiguredList) {
  const std::string setting = KF_EXPECTED_ARCHITECTURES;
  const parsed_architectures expected = parse(setting);
  if (!expected.symbolic.empty()) {
    GTEST_SKIP() << "CMAKE_CUDA_ARCHITECTURES is '" << setting << "' ('" << expected.symbolic
                 << "' is resolved by CMake/nvcc, so there is no explicit list to compare with)";
  }
  ASSERT_FALSE(expected.numbers.empty()) << "no numeric architecture in '" << setting << "'";
  EXPECT_EQ(kf::compiled_architectures(), expected.numbers)
      << "library reports {" << join(kf::compiled_architectures()) << "}, CMake configured '" << setting << "'";
}

TEST(CompiledArchitectures, ParserHandlesEveryCMakeSpelling) {
  // The parser above is itself part of the check; make sure it cannot pass vacuously.
  EXPECT_EQ(parse("75-real,80-real,121").numbers, (std::vector<int>{75, 80, 121}));
  EXPECT_EQ(parse("90a-real,90-real").numbers, (std::vector<int>{90}));
  EXPECT_EQ(parse("100f,120-virtual, 86 ").numbers, (std::vector<int>{86, 100, 120}));
  EXPECT_EQ(parse("native").symbolic, "native");
  EXPECT_EQ(parse("all-major").symbolic, "all-major");
  EXPECT_TRUE(parse("").numbers.empty());
}

// KERNELFORGE_PTX_SHARING's source-level rule (kernels/arch/ptx_sharing.hpp): the
// default pair passes, and each way two architectures' device code can differ is
// caught. A pair also needs equal PTX (scripts/compare_ptx.sh), which this cannot see.
TEST(PtxSharing, SameDeviceCodeOnlyWhereNothingTellsThemApart) {
  using kf::detail::same_device_code;
  EXPECT_TRUE(same_device_code(110, 100));  // the default pair
  EXPECT_TRUE(same_device_code(103, 100));  // same code at the source level (its PTX differs: not paired)
  EXPECT_TRUE(same_device_code(121, 120));
  EXPECT_FALSE(same_device_code(100, 110));  // PTX never runs on an older architecture
  EXPECT_FALSE(same_device_code(120, 100));  // warp_tiled / large_tile tuning: small vs large shared memory
  EXPECT_FALSE(same_device_code(89, 86));    // KF_ARCH_SM89: FP8 mma.sync
  EXPECT_FALSE(same_device_code(86, 80));    // tuning
  EXPECT_FALSE(same_device_code(80, 75));    // KF_ARCH_SM80: cp.async, mma.sync TF32
  EXPECT_TRUE(same_device_code(100, 90));    // same source-level code; the PTX differs a lot: not paired
}

}  // namespace
