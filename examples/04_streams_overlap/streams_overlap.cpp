// SPDX-License-Identifier: Apache-2.0
// Example 04 -- overlapping copies and kernels with streams and pinned memory.
//
// A large SAXPY (y = 2x + y, 2^26 floats: 256 MiB per array) whose data starts
// and ends on the host, done two ways:
//   serial     pageable std::vector memory, one stream: copy x and y in, run
//              kf::saxpy, copy y out -- each step waits for the one before;
//   pipelined  pinned memory (kf::pinned_buffer), the arrays cut into chunks,
//              chunk i on stream i % N: copy-in, kf::saxpy, copy-out with
//              kf::copy_async. While one chunk computes, the next is copied in
//              and the previous copied out: the copy engines (one per direction)
//              and the SMs work at once.
// Both results are checked (the inputs make every result exact). The program
// prints the times, the speedup, and the copy-engine bound the pipeline
// approaches (the time to move the bytes of the busier direction at the pinned
// copy rate measured here), and writes the timeline of the two runs -- when
// each copy and kernel ran on each stream, from CUDA events -- as
// timeline.png and timeline.csv.
// Usage: example_04_streams_overlap [--streams N] [--chunks C] [--out DIR]
// Exit codes: 0 both results correct, 1 a mismatch or an error, 77 no GPU (skipped).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <kernelforge/device.hpp>
#include <kernelforge/device_buffer.hpp>
#include <kernelforge/elementwise.hpp>
#include <kernelforge/error.hpp>
#include <kernelforge/pinned_buffer.hpp>

#include "timeline_png.hpp"

namespace {

constexpr int skip_exit_code = 77;
constexpr std::size_t n = std::size_t{1} << 26;
constexpr float a = 2.0f;

#define CHECK_CUDA(call) check_cuda((call), #call)
void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw kf::error(kf::errc::cuda_runtime, std::string(call) + ": " + cudaGetErrorString(status));
}

/// x[i] = i mod 1024, y[i] = 1: 2x + y is exact in float, so results compare with ==.
float x_at(std::size_t i) { return static_cast<float>(i % 1024); }
bool verify(const char* what, const float* y) {
  for (std::size_t i = 0; i < n; ++i) {
    if (y[i] != a * x_at(i) + 1.0f) {
      std::printf("%s: y[%zu] = %g, expected %g: FAILED\n", what, i, y[i], a * x_at(i) + 1.0f);
      return false;
    }
  }
  return true;
}

/// One box of the timeline: which stream, what, from and to (ms since the run's start).
struct span {
  int stream;
  int chunk;
  const char* op;  // "h2d", "kernel", "d2h"
  float start_ms, end_ms;
};

cudaEvent_t new_event() {
  cudaEvent_t e;
  CHECK_CUDA(cudaEventCreate(&e));
  return e;
}
float ms_between(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

/// Serial: pageable memory, the legacy default stream, one step after the other.
float run_serial(std::vector<float>& x, std::vector<float>& y, std::vector<span>& spans) {
  kf::device_buffer<float> dx(n), dy(n);
  cudaEvent_t e[4] = {new_event(), new_event(), new_event(), new_event()};
  CHECK_CUDA(cudaEventRecord(e[0]));
  CHECK_CUDA(cudaMemcpy(dx.data(), x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dy.data(), y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaEventRecord(e[1]));
  kf::saxpy(n, a, dx.data(), dy.data());
  CHECK_CUDA(cudaEventRecord(e[2]));
  CHECK_CUDA(cudaMemcpy(y.data(), dy.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaEventRecord(e[3]));
  CHECK_CUDA(cudaEventSynchronize(e[3]));
  spans = {{0, 0, "h2d", 0, ms_between(e[0], e[1])},
           {0, 0, "kernel", ms_between(e[0], e[1]), ms_between(e[0], e[2])},
           {0, 0, "d2h", ms_between(e[0], e[2]), ms_between(e[0], e[3])}};
  for (auto ev : e) cudaEventDestroy(ev);
  return spans.back().end_ms;
}

/// Pipelined: pinned memory, `chunks` chunks round-robin over `streams` streams.
float run_pipelined(const kf::pinned_buffer<float>& x, kf::pinned_buffer<float>& y, kf::device_buffer<float>& dx,
                    kf::device_buffer<float>& dy, int streams, int chunks, std::vector<span>* spans) {
  std::vector<cudaStream_t> s(streams);
  for (auto& st : s) CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t start = new_event(), done = new_event();
  std::vector<cudaEvent_t> marks(static_cast<std::size_t>(chunks) * 4);
  for (auto& m : marks) m = new_event();
  // Every stream waits for `start`, so no chunk begins before the clock does.
  CHECK_CUDA(cudaEventRecord(start, s[0]));
  for (auto st : s) CHECK_CUDA(cudaStreamWaitEvent(st, start, 0));
  const std::size_t chunk = (n + chunks - 1) / chunks;
  for (int c = 0; c < chunks; ++c) {
    const std::size_t begin = c * chunk, count = std::min(chunk, n - begin);
    cudaStream_t st = s[c % streams];
    cudaEvent_t* m = &marks[static_cast<std::size_t>(c) * 4];
    CHECK_CUDA(cudaEventRecord(m[0], st));
    kf::copy_async(dx.data() + begin, x.data() + begin, count, st);  // returns at once
    kf::copy_async(dy.data() + begin, y.data() + begin, count, st);
    CHECK_CUDA(cudaEventRecord(m[1], st));
    kf::elementwise_options on_stream;
    on_stream.stream = st;
    kf::saxpy(count, a, dx.data() + begin, dy.data() + begin, on_stream);
    CHECK_CUDA(cudaEventRecord(m[2], st));
    kf::copy_async(y.data() + begin, dy.data() + begin, count, st);
    CHECK_CUDA(cudaEventRecord(m[3], st));
  }
  for (auto st : s) CHECK_CUDA(cudaStreamSynchronize(st));
  CHECK_CUDA(cudaEventRecord(done, s[0]));  // after every stream finished (synchronized above)
  CHECK_CUDA(cudaEventSynchronize(done));
  float total = 0;
  for (int c = 0; c < chunks; ++c) {
    cudaEvent_t* m = &marks[static_cast<std::size_t>(c) * 4];
    total = std::max(total, ms_between(start, m[3]));
    if (spans) {
      const char* ops[] = {"h2d", "kernel", "d2h"};
      for (int k = 0; k < 3; ++k)
        spans->push_back({c % streams, c, ops[k], ms_between(start, m[k]), ms_between(start, m[k + 1])});
    }
  }
  for (auto m : marks) cudaEventDestroy(m);
  cudaEventDestroy(start);
  cudaEventDestroy(done);
  for (auto st : s) cudaStreamDestroy(st);
  return total;
}

/// GB/s of one pinned copy of `bytes` (the copy engine's rate in that direction).
double pinned_rate_gbs(void* dst, const void* src, std::size_t bytes) {
  cudaEvent_t e0 = new_event(), e1 = new_event();
  CHECK_CUDA(cudaEventRecord(e0));
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault));
  CHECK_CUDA(cudaEventRecord(e1));
  CHECK_CUDA(cudaEventSynchronize(e1));
  const double gbs = bytes / (ms_between(e0, e1) * 1e-3) / 1e9;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return gbs;
}

void write_csv(const std::string& path, const std::vector<span>& serial, const std::vector<span>& pipelined) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "run,stream,chunk,op,start_ms,end_ms\n");
  for (const span& s : serial)
    std::fprintf(f, "serial,%d,%d,%s,%.4f,%.4f\n", s.stream, s.chunk, s.op, s.start_ms, s.end_ms);
  for (const span& s : pipelined)
    std::fprintf(f, "pipelined,%d,%d,%s,%.4f,%.4f\n", s.stream, s.chunk, s.op, s.start_ms, s.end_ms);
  std::fclose(f);
  std::printf("wrote %s\n", path.c_str());
}

void write_png(const std::string& path, const std::vector<span>& serial, const std::vector<span>& pipelined,
               int streams, float bound_ms, const std::string& title) {
  using timeline::rgb;
  const rgb white{255, 255, 255}, ink{40, 40, 40}, grid{225, 225, 225}, bound_color{220, 30, 30};
  const rgb h2d{66, 133, 244}, kernel{52, 168, 83}, d2h{251, 140, 0};
  const int left = 170, right = 30, row_h = 34, width = 1400;
  const int serial_top = 80, pipe_top = serial_top + row_h + 70, axis_y = pipe_top + streams * row_h + 14;
  timeline::canvas img(width, axis_y + 90, white);
  float total = bound_ms;
  for (const span& s : serial) total = std::max(total, s.end_ms);
  for (const span& s : pipelined) total = std::max(total, s.end_ms);
  const double px_per_ms = (width - left - right) / total;
  auto x_of = [&](float ms) { return left + static_cast<int>(ms * px_per_ms + 0.5); };
  // Grid lines and the time axis: a tick every 1, 2, 5, 10, ... ms, about 10 of them.
  double tick = 1;
  while (total / tick > 12) tick *= (std::to_string(static_cast<long>(tick))[0] == '2') ? 2.5 : 2;
  for (double t = 0; t <= total; t += tick) {
    img.fill(x_of(float(t)), serial_top - 6, x_of(float(t)) + 1, axis_y, grid);
    char label[32];
    std::snprintf(label, sizeof label, "%g", t);
    img.text(x_of(float(t)) - timeline::canvas::text_width(label) / 2, axis_y + 6, label, ink);
  }
  img.text(left, axis_y + 30, "TIME SINCE THE FIRST COPY, MS (FROM CUDA EVENTS)", ink);
  img.text(10, 10, title, ink);
  auto boxes = [&](const std::vector<span>& spans, int top) {
    for (const span& s : spans) {
      const rgb c = s.op[0] == 'h' ? h2d : s.op[0] == 'k' ? kernel : d2h;
      const int y = top + s.stream * row_h;
      img.fill(x_of(s.start_ms), y + 4, std::max(x_of(s.start_ms) + 1, x_of(s.end_ms) - 1), y + row_h - 4, c);
    }
  };
  img.text(10, serial_top - 30, "SERIAL: PAGEABLE MEMORY, 1 STREAM", ink);
  img.text(10, serial_top + 10, "DEFAULT", ink);
  boxes(serial, serial_top);
  img.text(10, pipe_top - 30, "PIPELINED: PINNED MEMORY, " + std::to_string(streams) + " STREAMS", ink);
  for (int s = 0; s < streams; ++s) img.text(10, pipe_top + s * row_h + 10, "STREAM " + std::to_string(s), ink);
  boxes(pipelined, pipe_top);
  img.fill(x_of(bound_ms), pipe_top - 8, x_of(bound_ms) + 2, axis_y, bound_color);
  img.text(x_of(bound_ms) + 4, pipe_top - 12, "COPY-ENGINE BOUND", bound_color, 1);
  // Legend.
  int lx = left;
  const int ly = axis_y + 56;
  for (auto [name, c] : {std::pair<const char*, rgb>{"HOST TO DEVICE COPY", h2d},
                         {"KF::SAXPY KERNEL", kernel},
                         {"DEVICE TO HOST COPY", d2h}}) {
    img.fill(lx, ly, lx + 24, ly + 14, c);
    img.text(lx + 32, ly, name, ink);
    lx += 32 + timeline::canvas::text_width(name) + 40;
  }
  if (img.write_png(path))
    std::printf("wrote %s\n", path.c_str());
  else
    std::printf("could not write %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int streams = 4, chunks = 16;
  std::string out_dir = ".";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--streams" || arg == "--chunks" || arg == "--out") && i + 1 < argc) {
      const char* v = argv[++i];
      if (arg == "--out")
        out_dir = v;
      else
        (arg == "--streams" ? streams : chunks) = std::atoi(v);
    } else {
      std::printf("usage: %s [--streams N] [--chunks C] [--out DIR]\n", argv[0]);
      return 1;
    }
  }
  if (streams < 1 || chunks < streams || chunks > 4096) {
    std::printf("need 1 <= streams <= chunks <= 4096 (got %d streams, %d chunks)\n", streams, chunks);
    return 1;
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf(
        "SKIPPED: this example needs a CUDA GPU and found none (%s); kernelforge-doctor says why and how to fix it.\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return skip_exit_code;
  }
  try {
    const kf::device_info info = kf::get_device_info();
    const double mib = n * sizeof(float) / double(1 << 20);
    std::printf("SAXPY y = 2x + y over %zu floats (%.0f MiB per array) on %s; host -> device -> host\n", n, mib,
                info.name.c_str());

    // Serial, pageable. A first untimed run pays module loading and first-touch costs.
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = x_at(i);
    std::vector<span> serial_spans, pipe_spans;
    std::fill(y.begin(), y.end(), 1.0f);
    run_serial(x, y, serial_spans);
    std::fill(y.begin(), y.end(), 1.0f);
    const float serial_ms = run_serial(x, y, serial_spans);
    bool ok = verify("serial", y.data());

    // Pipelined, pinned.
    kf::pinned_buffer<float> px(n), py(n);
    std::memcpy(px.data(), x.data(), n * sizeof(float));
    kf::device_buffer<float> dx(n), dy(n);
    const double h2d_gbs = pinned_rate_gbs(dx.data(), px.data(), n * sizeof(float));
    const double d2h_gbs = pinned_rate_gbs(py.data(), dy.data(), n * sizeof(float));
    std::fill(py.begin(), py.end(), 1.0f);
    run_pipelined(px, py, dx, dy, streams, chunks, nullptr);  // warm-up
    std::fill(py.begin(), py.end(), 1.0f);
    const float pipe_ms = run_pipelined(px, py, dx, dy, streams, chunks, &pipe_spans);
    ok = verify("pipelined", py.data()) && ok;

    // The copy engines bound the pipeline: 2 arrays in (x and y), 1 out, each direction at its pinned rate.
    const double in_ms = 2.0 * n * sizeof(float) / (h2d_gbs * 1e9) * 1e3;
    const double out_ms = 1.0 * n * sizeof(float) / (d2h_gbs * 1e9) * 1e3;
    const double bound_ms = std::max(in_ms, out_ms);
    std::printf("\n%-44s %9.2f ms\n", "serial (pageable, 1 stream)", serial_ms);
    for (const span& s : serial_spans) std::printf("    %-40s %9.2f ms\n", s.op, s.end_ms - s.start_ms);
    std::printf(
        "%-44s %9.2f ms\n",
        ("pipelined (pinned, " + std::to_string(streams) + " streams, " + std::to_string(chunks) + " chunks)").c_str(),
        pipe_ms);
    std::printf("%-44s %9.2f x\n", "speedup", serial_ms / pipe_ms);
    std::printf("\npinned copy rates measured here: %.1f GB/s host-to-device, %.1f GB/s device-to-host\n", h2d_gbs,
                d2h_gbs);
    std::printf("copy-engine bound: %.2f ms (copy-in %.2f ms, copy-out %.2f ms, in parallel on separate engines)\n",
                bound_ms, in_ms, out_ms);
    std::printf("the pipeline runs at %.0f%% of that bound\n\n", 100.0 * bound_ms / pipe_ms);

    write_csv(out_dir + "/timeline.csv", serial_spans, pipe_spans);
    char title[256];
    std::snprintf(title, sizeof title, "%s: SAXPY OF %.0f MIB ARRAYS, %.1f MS SERIAL VS %.1f MS PIPELINED (%.1fX)",
                  info.name.c_str(), mib, serial_ms, pipe_ms, serial_ms / pipe_ms);
    write_png(out_dir + "/timeline.png", serial_spans, pipe_spans, streams, static_cast<float>(bound_ms), title);
    std::printf("\n%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
  } catch (const kf::error& e) {
    std::printf("kernelforge error (%s): %s\n", kf::to_string(e.code()), e.what());
    return e.code() == kf::errc::no_device ? skip_exit_code : 1;
  }
}
