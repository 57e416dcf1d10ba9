// SPDX-License-Identifier: Apache-2.0
// kernelforge-doctor: the shared model. Each section (driver, devices,
// bandwidth, self-test) adds checks -- one OK / WARN / FAIL line with the
// reason and the fix -- and facts (JSON) to one report; main.cpp prints it as
// text while it runs, or as one JSON document at the end (--json).
#pragma once

#include <string>
#include <vector>

#include "json.hpp"

namespace kf::doctor {

enum class status { ok, warn, fail };
const char* to_string(status s) noexcept;

struct check {
  std::string section;  ///< "driver", "environment", "device 0", "bandwidth", "self-test"
  status level = status::ok;
  std::string message;              ///< what was found, with the numbers
  std::vector<std::string> detail;  ///< further lines of facts (text output only; JSON has the facts)
  std::string fix;                  ///< what to do (empty when nothing)
};

struct options {
  bool json = false;
  bool bandwidth = false;
  bool self_test = false;
  int device = -1;  ///< -1: every device
};

class report {
 public:
  explicit report(bool streaming_text) : streaming_text_(streaming_text) {}
  /// Records a check; in text mode prints it at once (the user sees progress).
  void add(check c);
  /// Prints a section heading in text mode.
  void heading(const std::string& title) const;
  /// A progress note in text mode (nothing in JSON mode).
  void note(const std::string& line) const;
  json& facts() { return facts_; }
  const std::vector<check>& checks() const { return checks_; }
  int count(status s) const;

 private:
  bool streaming_text_;
  std::vector<check> checks_;
  json facts_ = json::object();
};

/// Exit codes (documented in --help).
constexpr int exit_ok = 0;
constexpr int exit_fail = 1;
constexpr int exit_no_device = 2;
constexpr int exit_usage = 64;

/// Sections, in the order they run. Returns false when nothing can run on a
/// GPU (no driver, too old, no device): the later sections are then skipped.
bool check_driver_and_environment(report& r);
/// Returns the ordinals of the devices that can run kernelforge's kernels;
/// `accessible` counts those the process could open (a context), with or without code.
std::vector<int> check_devices(report& r, const options& o, int& accessible);
void measure_bandwidth(report& r, const std::vector<int>& devices);
void run_self_test(report& r, const std::vector<int>& devices);

/// The GPU's PCIe link peak per direction in GB/s (Linux sysfs); 0 when unknown.
double pcie_link_peak_gbs(int device);

/// Small text helpers.
std::string format(const char* fmt, ...);
std::string cuda_version_string(int version);  ///< 13000 -> "13.0"

}  // namespace kf::doctor
