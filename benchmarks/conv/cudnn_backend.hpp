// SPDX-License-Identifier: Apache-2.0
// The cuDNN 9 backend (graph) API in the small pieces bench_conv's graph
// baseline is built from: checked calls, an owning descriptor, attribute get/set,
// the NHWC tensors, the convolution graph (plain, or + bias + ReLU; or one of
// its gradients, backward data or backward filter), engine
// configurations from the heuristics and what they are (engine index, notes,
// knobs), and the variant pack. The search that times the candidates and keeps
// the fastest plan is cudnn_graph.hpp; the graphs it builds are described there.
// Only the C backend API of <cudnn.h> is used (no cudnn_frontend here).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "conv_problem.hpp"
#include "cudnn_baseline.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::conv {
namespace graph {

/// A backend call that failed: the call, cuDNN's status and its last error message.
class graph_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// cuDNN's name of `status`, with the library's last message when it has one.
inline std::string status_text(cudnnStatus_t status) {
  char detail[1024] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string text = cudnnGetErrorString(status);
  if (detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

/// Throws graph_error naming `what` unless status is CUDNN_STATUS_SUCCESS.
inline void ok(cudnnStatus_t status, const std::string& what) {
  if (status != CUDNN_STATUS_SUCCESS) throw graph_error(what + " failed: " + status_text(status));
}

/// An owned backend descriptor (cudnnBackendCreateDescriptor /
/// cudnnBackendDestroyDescriptor); move-only.
class descriptor {
 public:
  descriptor() noexcept = default;
  descriptor(cudnnBackendDescriptorType_t type, const char* type_name) {
    ok(cudnnBackendCreateDescriptor(type, &d_), std::string("cudnnBackendCreateDescriptor(") + type_name + ")");
  }
  ~descriptor() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  descriptor(descriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  descriptor& operator=(descriptor&& other) noexcept {
    if (this != &other) {
      if (d_) cudnnBackendDestroyDescriptor(d_);
      d_ = std::exchange(other.d_, nullptr);
    }
    return *this;
  }
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;

  [[nodiscard]] cudnnBackendDescriptor_t get() const noexcept { return d_; }
  /// The handle's address: the one-element array a CUDNN_TYPE_BACKEND_DESCRIPTOR attribute takes.
  [[nodiscard]] const cudnnBackendDescriptor_t* address() const noexcept { return &d_; }
  [[nodiscard]] explicit operator bool() const noexcept { return d_ != nullptr; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

#define KF_GRAPH_DESCRIPTOR(type) ::kf::bench::conv::graph::descriptor(type, #type)

/// cudnnBackendSetAttribute(d, name, type, count, values), checked; `what` names the attribute.
inline void set_attribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                          cudnnBackendAttributeType_t type, std::int64_t count, const void* values, const char* what) {
  ok(cudnnBackendSetAttribute(d, name, type, count, values), std::string("cudnnBackendSetAttribute(") + what + ")");
}

/// cudnnBackendGetAttribute(d, name, type, requested, &returned, values), checked; returns the count.
inline std::int64_t get_attribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                  cudnnBackendAttributeType_t type, std::int64_t requested, void* values,
                                  const char* what) {
  std::int64_t returned = 0;
  ok(cudnnBackendGetAttribute(d, name, type, requested, &returned, values),
     std::string("cudnnBackendGetAttribute(") + what + ")");
  return returned;
}

#define KF_GRAPH_SET(d, name, type, count, values) \
  ::kf::bench::conv::graph::set_attribute((d).get(), name, type, count, values, #name)
#define KF_GRAPH_GET(d, name, type, requested, values) \
  ::kf::bench::conv::graph::get_attribute(d, name, type, requested, values, #name)

inline void finalize(const descriptor& d, const char* what) {
  ok(cudnnBackendFinalize(d.get()), std::string("cudnnBackendFinalize(") + what + ")");
}

/// The unique ids of the graph's tensors (the variant pack's keys).
enum : std::int64_t { uid_x = 'x', uid_w = 'w', uid_y = 'y', uid_bias = 'b', uid_conv = 'C', uid_biased = 'B' };

using dims4 = std::array<std::int64_t, 4>;

/// Strides of logical dims (n, c, h, w) stored n, h, w, c (channels last):
/// NHWC for x and y, KRSC for w, and for the 1xKx1x1 bias (K, 1, K, K).
inline dims4 channels_last_strides(const dims4& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }

/// A finalized tensor descriptor; is_virtual: an intermediate of the graph, never in memory.
inline descriptor make_tensor(std::int64_t uid, cudnnDataType_t type, const dims4& dims, bool is_virtual) {
  descriptor t = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const dims4 strides = channels_last_strides(dims);
  const std::int64_t alignment = 16;  // cudaMalloc'd buffers: 256-byte aligned
  KF_GRAPH_SET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  KF_GRAPH_SET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  KF_GRAPH_SET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  KF_GRAPH_SET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  KF_GRAPH_SET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (is_virtual) {
    const bool yes = true;
    KF_GRAPH_SET(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  finalize(t, "tensor");
  return t;
}

/// A finalized pointwise operation y = mode(x[, b]) with float math (alpha1 = alpha2 = 1).
inline std::vector<descriptor> make_pointwise(cudnnPointwiseMode_t mode, const descriptor& x, const descriptor* b,
                                              const descriptor& y) {
  descriptor pw = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  KF_GRAPH_SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  KF_GRAPH_SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
  finalize(pw, "pointwise");  // RELU_FWD: lower clip 0, no upper clip, slope 0 (the defaults)
  descriptor op = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  const float one = 1.0f;
  KF_GRAPH_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw.address());
  KF_GRAPH_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x.address());
  if (b) KF_GRAPH_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, b->address());
  KF_GRAPH_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, y.address());
  KF_GRAPH_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
  KF_GRAPH_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
  finalize(op, "pointwise operation");
  std::vector<descriptor> out;
  out.push_back(std::move(pw));
  out.push_back(std::move(op));  // last: the operation
  return out;
}

/// Which convolution a graph computes. The tensors keep their uids whatever
/// the pass: uid_x is x (forward, backward_filter) or dx (backward_data), uid_w
/// the filter or dw (backward_filter), uid_y y or dy (both backward passes).
enum class conv_pass { forward, backward_data, backward_filter };

/// The finalized operation graph of problem p in element type `type` (see the
/// file comment) for `handle` (the device the heuristics ask about; nullptr:
/// none, which only a GPU-less check of the descriptors wants); every
/// descriptor it refers to is appended to `keep`, the graph itself last.
/// pass: the forward convolution (fused or not) or one of its gradients
/// (dx = CONVOLUTION_BACKWARD_DATA, dw = CONVOLUTION_BACKWARD_FILTER; never fused).
inline void make_conv_graph(const kf::conv2d_params& p, std::size_t P, std::size_t Q, cudnnDataType_t type, bool fused,
                            cudnnHandle_t handle, std::vector<descriptor>& keep, conv_pass pass = conv_pass::forward) {
  if (pass != conv_pass::forward && fused) throw graph_error("a gradient graph is never fused");
  const auto i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
  const dims4 x_dims = {i(p.batch), i(p.in_channels), i(p.in_height), i(p.in_width)};
  const dims4 w_dims = {i(p.out_channels), i(p.in_channels), i(p.filter_height), i(p.filter_width)};
  const dims4 y_dims = {i(p.batch), i(p.out_channels), i(P), i(Q)};
  descriptor x = make_tensor(uid_x, type, x_dims, false);
  descriptor w = make_tensor(uid_w, type, w_dims, false);
  descriptor y = make_tensor(uid_y, type, y_dims, false);
  // The convolution's output: y itself, or (fused) a virtual float tensor of y's shape.
  descriptor conv_out = fused ? make_tensor(uid_conv, CUDNN_DATA_FLOAT, y_dims, true) : descriptor();
  const descriptor& conv_y = fused ? conv_out : y;

  descriptor conv = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial_dims = 2;
  const std::int64_t pads[2] = {i(p.pad_h), i(p.pad_w)};
  const std::int64_t strides[2] = {i(p.stride_h), i(p.stride_w)};
  const std::int64_t dilations[2] = {i(p.dilation_h), i(p.dilation_w)};
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims);
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
  KF_GRAPH_SET(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
  finalize(conv, "convolution");

  const float alpha = 1.0f, beta = 0.0f;  // float: the compute type is not double
  descriptor conv_op;
  if (pass == conv_pass::forward) {
    conv_op = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, w.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 conv_y.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 conv.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    finalize(conv_op, "convolution forward operation");
  } else if (pass == conv_pass::backward_data) {
    conv_op = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, w.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, y.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 conv.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    finalize(conv_op, "convolution backward-data operation");
  } else {
    conv_op = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 w.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 y.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 conv.address());
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    KF_GRAPH_SET(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    finalize(conv_op, "convolution backward-filter operation");
  }

  std::vector<cudnnBackendDescriptor_t> ops = {conv_op.get()};
  if (fused) {
    descriptor bias = make_tensor(uid_bias, type, {1, i(p.out_channels), 1, 1}, false);
    descriptor biased = make_tensor(uid_biased, CUDNN_DATA_FLOAT, y_dims, true);
    std::vector<descriptor> add = make_pointwise(CUDNN_POINTWISE_ADD, conv_out, &bias, biased);
    std::vector<descriptor> relu = make_pointwise(CUDNN_POINTWISE_RELU_FWD, biased, nullptr, y);
    ops.push_back(add.back().get());
    ops.push_back(relu.back().get());
    keep.push_back(std::move(bias));
    keep.push_back(std::move(biased));
    for (auto* list : {&add, &relu}) {
      for (descriptor& each : *list) keep.push_back(std::move(each));
    }
  }
  descriptor op_graph = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (handle) KF_GRAPH_SET(op_graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  KF_GRAPH_SET(op_graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               static_cast<std::int64_t>(ops.size()), ops.data());
  finalize(op_graph, "operation graph");
  for (descriptor* each : {&x, &w, &y, &conv_out, &conv, &conv_op}) {
    if (*each) keep.push_back(std::move(*each));
  }
  keep.push_back(std::move(op_graph));
}

/// The name of a knob type in a plan's tag. Keyed by the enum's numeric value
/// (stable across cuDNN 9 releases) rather than its identifiers, because newer
/// knobs (SWAP_AB, WARP_SPEC_CFG, ...) are missing from older cuDNN 9 headers.
inline std::string knob_name(cudnnBackendKnobType_t type) {
  static constexpr std::pair<int, const char*> names[] = {
      {1, "swizzle"},     {2, "tile"},        {4, "edge"},
      {11, "multiply"},   {12, "splitk_buf"}, {13, "tilek"},
      {14, "stages"},     {15, "reduction"},  {17, "splitk_slc"},
      {18, "idx"},        {23, "specfilt"},   {24, "kernel_cfg"},
      {25, "workspace"},  {27, "cga_m"},      {28, "cga_n"},
      {29, "block"},      {30, "occupancy"},  {31, "array_per_thread"},
      {33, "split_cols"}, {34, "tile_rows"},  {35, "tile_cols"},
      {36, "load"},       {37, "ctas"},       {38, "stream_k"},
      {39, "splitp_slc"}, {40, "tile_m"},     {41, "tile_n"},
      {42, "warp_spec"},  {43, "swap_ab"}};
  for (const auto& [value, name] : names) {
    if (value == static_cast<int>(type)) return name;
  }
  return "knob" + std::to_string(static_cast<int>(type));
}

/// What an engine configuration is: its engine's global index, numerical and
/// behavior notes, knob choices, and the tag that names it ("eng12 tile=3 stages=4").
struct engine_info {
  std::int64_t global_index = -1;
  std::vector<cudnnBackendNumericalNote_t> notes;
  std::vector<cudnnBackendBehaviorNote_t> behavior;
  std::vector<std::pair<cudnnBackendKnobType_t, std::int64_t>> knobs;
  std::string tag;

  [[nodiscard]] bool has(cudnnBackendNumericalNote_t note) const {
    return std::find(notes.begin(), notes.end(), note) != notes.end();
  }
  /// The notes that matter for reading a row: "tensor_core", "winograd", ...
  [[nodiscard]] std::string note_text() const {
    std::string text;
    const auto add = [&text](const char* s) { text += (text.empty() ? "" : ",") + std::string(s); };
    for (cudnnBackendNumericalNote_t n : notes) {
      switch (n) {
        case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: add("tensor_core"); break;
        case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: add("down_convert"); break;
        case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: add("reduced_precision_sum"); break;
        case CUDNN_NUMERICAL_NOTE_FFT: add("fft"); break;
        case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: add("nondeterministic"); break;
        case CUDNN_NUMERICAL_NOTE_WINOGRAD:
        case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
        case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
        case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: add("winograd"); break;
        case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP: add("strict_nan"); break;
        default: add(("note" + std::to_string(static_cast<int>(n))).c_str()); break;
      }
    }
    for (cudnnBackendBehaviorNote_t b : behavior) {
      if (b == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) add("runtime_compiled");
    }
    return text;
  }
};

/// The global index and the notes of a finalized engine into `info`.
inline void read_engine(cudnnBackendDescriptor_t engine, engine_info& info) {
  KF_GRAPH_GET(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &info.global_index);
  info.notes.resize(CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  info.notes.resize(
      static_cast<std::size_t>(KF_GRAPH_GET(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                            CUDNN_NUMERICAL_NOTE_TYPE_COUNT, info.notes.data())));
  info.behavior.resize(CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  info.behavior.resize(
      static_cast<std::size_t>(KF_GRAPH_GET(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                            CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, info.behavior.data())));
}

/// The engine configuration `config`'s engine_info (CUDNN_ATTR_ENGINECFG_ENGINE,
/// its global index and notes, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES).
inline engine_info describe(const descriptor& config) {
  engine_info info;
  descriptor engine = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t engine_handle = engine.get();
  KF_GRAPH_GET(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine_handle);
  read_engine(engine.get(), info);
  std::vector<descriptor> knobs;
  std::vector<cudnnBackendDescriptor_t> knob_handles;
  for (int k = 0; k < CUDNN_KNOB_TYPE_COUNTS; ++k) {
    knobs.push_back(KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    knob_handles.push_back(knobs.back().get());
  }
  const std::int64_t knob_count =
      KF_GRAPH_GET(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   CUDNN_KNOB_TYPE_COUNTS, knob_handles.data());
  info.tag = "eng" + std::to_string(info.global_index);
  for (std::int64_t k = 0; k < std::min<std::int64_t>(knob_count, CUDNN_KNOB_TYPE_COUNTS); ++k) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    std::int64_t value = 0;
    KF_GRAPH_GET(knob_handles[static_cast<std::size_t>(k)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                 &type);
    KF_GRAPH_GET(knob_handles[static_cast<std::size_t>(k)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                 &value);
    info.knobs.emplace_back(type, value);
    info.tag += " " + knob_name(type) + "=" + std::to_string(value);
  }
  return info;
}

/// The engine configurations of the heuristics in `mode` for op_graph;
/// empty, with `failure` set, when the query fails.
inline std::vector<descriptor> heuristic_configs(const descriptor& op_graph, cudnnBackendHeurMode_t mode,
                                                 std::string& failure) {
  std::vector<descriptor> configs;
  try {
    descriptor heuristics = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    KF_GRAPH_SET(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 op_graph.address());
    KF_GRAPH_SET(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    finalize(heuristics, "engine heuristics");
    const std::int64_t count =
        KF_GRAPH_GET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr);
    std::vector<cudnnBackendDescriptor_t> handles;
    for (std::int64_t k = 0; k < count; ++k) {
      configs.push_back(KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      handles.push_back(configs.back().get());
    }
    if (count > 0) {
      const std::int64_t returned = KF_GRAPH_GET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, handles.data());
      configs.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(returned, 0, count)));
    }
  } catch (const graph_error& e) {
    failure = e.what();
    configs.clear();
  }
  return configs;
}

inline const char* heur_mode_name(cudnnBackendHeurMode_t mode) {
  switch (mode) {
    case CUDNN_HEUR_MODE_INSTANT: return "INSTANT";
    case CUDNN_HEUR_MODE_A: return "A";
    case CUDNN_HEUR_MODE_B: return "B";
    case CUDNN_HEUR_MODE_FALLBACK: return "FALLBACK";
    default: return "?";
  }
}

/// A finalized variant pack: the data pointers by uid and the workspace.
inline descriptor make_variant_pack(const void* x, const void* w, void* y, const void* bias, void* workspace) {
  std::vector<void*> pointers = {const_cast<void*>(x), const_cast<void*>(w), y};
  std::vector<std::int64_t> uids = {uid_x, uid_w, uid_y};
  if (bias) {
    pointers.push_back(const_cast<void*>(bias));
    uids.push_back(uid_bias);
  }
  descriptor pack = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  KF_GRAPH_SET(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
               static_cast<std::int64_t>(pointers.size()), pointers.data());
  KF_GRAPH_SET(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<std::int64_t>(uids.size()),
               uids.data());
  KF_GRAPH_SET(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  finalize(pack, "variant pack");
  return pack;
}

/// The plan's JSON (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION), or why not.
inline std::string plan_json(const descriptor& plan) {
  try {
    const std::int64_t size =
        KF_GRAPH_GET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, nullptr);
    std::string json(static_cast<std::size_t>(std::max<std::int64_t>(size, 0)), '\0');
    const std::int64_t got =
        KF_GRAPH_GET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, size, json.data());
    json.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(got, 0, size)));
    while (!json.empty() && json.back() == '\0') json.pop_back();
    return json;
  } catch (const graph_error& e) {
    return std::string("(no JSON: ") + e.what() + ")";
  }
}

inline bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("KF_CUDNN_GRAPH_VERBOSE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

}  // namespace graph

}  // namespace kf::bench::conv
