// SPDX-License-Identifier: Apache-2.0
// main() of every test binary (instead of GTest::gtest_main): runs the selected
// tests and exits 77 -- the SKIP_RETURN_CODE tests/CMakeLists.txt gives every
// ctest entry -- when at least one test was selected, none failed and every one
// of them skipped, after one line saying why. So a binary whose GPU tests all
// skip on a machine without a GPU shows as "Skipped" in ctest, not "Passed";
// one where some tests ran and others skipped by design passes (exit 0).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

/// The first skip message (its first line) and how many tests gave another.
class skip_reasons : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.skipped()) return;
    std::string message = result.message();
    message = message.substr(0, message.find('\n'));
    if (first_.empty() && !message.empty()) {
      first_ = message;
    } else if (message != first_) {
      ++others_;
    }
  }
  [[nodiscard]] std::string summary() const {
    std::string text = first_.empty() ? "no reason given" : first_;
    if (others_ > 0) text += " (and " + std::to_string(others_) + " skips for other reasons)";
    return text;
  }

 private:
  std::string first_;
  int others_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  auto* reasons = new skip_reasons;  // owned by the listener list from here on
  unit.listeners().Append(reasons);
  const int status = RUN_ALL_TESTS();
  const int selected = unit.test_to_run_count();
  if (status == 0 && selected > 0 && unit.skipped_test_count() == selected) {
    std::printf("all %d selected tests skipped: %s\n", selected, reasons->summary().c_str());
    return 77;
  }
  return status;
}
