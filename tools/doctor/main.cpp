// SPDX-License-Identifier: Apache-2.0
// kernelforge-doctor: one command that explains the machine -- the CUDA driver,
// the environment, each device and the code kernelforge holds for it, and on
// request copy bandwidth and a self-test of every kernel family -- as OK / WARN
// / FAIL lines with the reason and the fix, or as one JSON document (--json).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda_runtime_api.h>

#include "doctor.hpp"
#include "kernelforge/version.hpp"

namespace kf::doctor {

const char* usage =
    "usage: kernelforge-doctor [--bandwidth] [--self-test] [--all] [--json] [--device N] [--help] [--version]\n"
    "\n"
    "Explains this machine to kernelforge, in order: the CUDA driver (present? recent enough\n"
    "for the CUDA runtime kernelforge was built with?), the environment variables that change\n"
    "what a CUDA program sees, then each GPU: its name, compute capability, SMs, memory, clocks,\n"
    "bus, the peaks kernelforge computes, and whether the library holds machine code for it,\n"
    "only PTX (JIT-compiled at first use) or nothing. Each line is OK, WARN or FAIL, with the\n"
    "reason and the fix.\n"
    "\n"
    "  --bandwidth   also time host<->device copies (pageable and pinned) and device-to-device\n"
    "                copies, like CUDA's bandwidthTest, against the device's peaks\n"
    "  --self-test   also run one small call of every kernel family and variant and compare it\n"
    "                with the CPU reference (PASSED / FAILED each, and the total time)\n"
    "  --all         --bandwidth and --self-test\n"
    "  --json        print one JSON document instead of text (the environment snapshot to attach\n"
    "                to a bug report): facts, every check, the summary and the exit code\n"
    "  --device N    look at device N only (default: every visible device)\n"
    "  --version     print the version and exit\n"
    "  --help        print this help and exit\n"
    "\n"
    "Exit codes:\n"
    "  0   every check is OK (warnings allowed)\n"
    "  1   at least one check FAILED (e.g. no kernel image for a GPU, a self-test mismatch)\n"
    "  2   no usable CUDA device: no driver, a driver too old, or no GPU visible\n"
    "  64  bad command line\n";

const char* to_string(status s) noexcept {
  switch (s) {
    case status::ok: return "OK";
    case status::warn: return "WARN";
    case status::fail: return "FAIL";
  }
  return "?";
}

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string cuda_version_string(int version) { return format("%d.%d", version / 1000, (version % 1000) / 10); }

void report::add(check c) {
  if (streaming_text_) {
    const char* tag = c.level == status::ok ? " OK " : to_string(c.level);
    std::printf("  [%s] %s: %s\n", tag, c.section.c_str(), c.message.c_str());
    for (const auto& line : c.detail) std::printf("         %s\n", line.c_str());
    if (!c.fix.empty()) std::printf("         fix: %s\n", c.fix.c_str());
    std::fflush(stdout);
  }
  checks_.push_back(std::move(c));
}

void report::heading(const std::string& title) const {
  if (streaming_text_) std::printf("\n%s\n", title.c_str());
}

void report::note(const std::string& line) const {
  if (streaming_text_) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
}

int report::count(status s) const {
  int n = 0;
  for (const auto& c : checks_) n += c.level == s;
  return n;
}

namespace {

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      o.json = true;
    else if (a == "--bandwidth")
      o.bandwidth = true;
    else if (a == "--self-test")
      o.self_test = true;
    else if (a == "--all")
      o.bandwidth = o.self_test = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(exit_ok);
    } else if (a == "--version") {
      std::printf("kernelforge-doctor %s\n", KERNELFORGE_VERSION_STRING);
      std::exit(exit_ok);
    } else if (a == "--device" || a.rfind("--device=", 0) == 0) {
      const std::string value = a == "--device" ? (i + 1 < argc ? argv[++i] : "") : a.substr(9);
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 0 || n > 1024) {
        std::fprintf(stderr, "kernelforge-doctor: --device needs a device number (0, 1, ...), got '%s'\n",
                     value.c_str());
        return false;
      }
      o.device = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "kernelforge-doctor: unknown argument '%s'\n", a.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace kf::doctor

int main(int argc, char** argv) {
  using namespace kf::doctor;
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "%s", usage);
    return exit_usage;
  }
  report r(!o.json);
  if (!o.json) {
    std::printf("kernelforge-doctor %s (CUDA runtime %s, compiled for %s)\n", KERNELFORGE_VERSION_STRING,
                cuda_version_string(CUDART_VERSION).c_str(), KF_DOCTOR_CUDA_ARCHITECTURES);
  }
  // 2: nothing can run (no driver, too old, no GPU visible or accessible); 1: a FAIL
  // elsewhere (e.g. a GPU the library has no code for, a self-test mismatch).
  int code = exit_ok;
  std::vector<int> devices;
  if (check_driver_and_environment(r)) {
    int accessible = 0;
    devices = check_devices(r, o, accessible);
    if (accessible == 0) code = exit_no_device;
  } else {
    code = exit_no_device;
  }
  if (!devices.empty() && o.bandwidth) measure_bandwidth(r, devices);
  if (!devices.empty() && o.self_test) run_self_test(r, devices);
  if (code == exit_ok && r.count(status::fail) > 0) code = exit_fail;

  const char* verdict = code == exit_ok ? "OK" : code == exit_fail ? "FAIL" : "NO USABLE DEVICE";
  if (o.json) {
    json checks = json::array();
    for (const auto& c : r.checks()) {
      json detail = json::array();
      for (const auto& d : c.detail) detail.push(d);
      checks.push(json::object()
                      .set("section", c.section)
                      .set("status", to_string(c.level))
                      .set("message", c.message)
                      .set("detail", detail)
                      .set("fix", c.fix.empty() ? json() : json(c.fix)));
    }
    json doc = json::object();
    doc.set("tool", "kernelforge-doctor").set("version", KERNELFORGE_VERSION_STRING);
    doc.set("options", json::object()
                           .set("bandwidth", o.bandwidth)
                           .set("self_test", o.self_test)
                           .set("device", o.device >= 0 ? json(o.device) : json()));
    doc.set("facts", r.facts());
    doc.set("checks", checks);
    doc.set("summary", json::object()
                           .set("ok", r.count(status::ok))
                           .set("warn", r.count(status::warn))
                           .set("fail", r.count(status::fail))
                           .set("verdict", verdict)
                           .set("exit_code", code));
    std::printf("%s\n", doc.dump().c_str());
  } else {
    std::printf("\nSummary: %d OK, %d WARN, %d FAIL: %s (exit %d)\n", r.count(status::ok), r.count(status::warn),
                r.count(status::fail), verdict, code);
    if (code == exit_no_device) std::printf("Nothing can run on a GPU here until the FAIL lines above are fixed.\n");
  }
  return code;
}
