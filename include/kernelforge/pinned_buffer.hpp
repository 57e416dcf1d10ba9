// SPDX-License-Identifier: Apache-2.0
// pinned_buffer<T>: page-locked (pinned) host memory, and copy_async between it
// and device memory on a stream. Pinned memory is what lets a copy run
// asynchronously on a copy engine, overlapping kernels and other copies; a copy
// from ordinary (pageable) memory is staged by the driver and blocks the host.
// Host-only C++17: compiles with g++ or clang, no nvcc.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include "kernelforge/device_buffer.hpp"

namespace kf {
namespace detail {
// count elements of element_bytes each, page-locked with cudaMallocHost:
// errc::out_of_memory (with the bytes asked for and the fix), errc::no_device.
void* pinned_allocate(std::size_t count, std::size_t element_bytes);
void pinned_free(void* p) noexcept;
// cudaMemcpyAsync(cudaMemcpyDefault) on s; never synchronizes. `what` names the caller.
void copy_async_bytes(void* dst, const void* src, std::size_t bytes, cudaStream_t s, const char* what);
// errc::invalid_argument unless dst_count == src_count.
void require_same_size(const char* what, std::size_t dst_count, std::size_t src_count);
}  // namespace detail

/// `size` elements of T in page-locked host memory (uninitialized). Move-only;
/// frees with cudaFreeHost. Pinned memory is a scarce OS resource (it cannot be
/// swapped out): allocate it once and reuse it, do not pin gigabytes casually.
template <class T>
class pinned_buffer {
 public:
  pinned_buffer() noexcept = default;
  explicit pinned_buffer(std::size_t size)
      : data_(size ? static_cast<T*>(detail::pinned_allocate(size, sizeof(T))) : nullptr), size_(size) {}
  ~pinned_buffer() { detail::pinned_free(data_); }

  pinned_buffer(pinned_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& other) noexcept {
    if (this != &other) {
      detail::pinned_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Enqueues a copy of `count` elements from `src` to `dst` on `stream` and
/// returns at once (no synchronization). Either side may be host or device
/// memory (the direction comes from unified addressing). It overlaps other work
/// only when the host side is pinned (a pinned_buffer, or cudaHostRegister'ed);
/// from pageable memory the driver stages the copy and the call may block.
/// The buffers must stay alive until the stream has finished the copy.
template <class T>
void copy_async(T* dst, const T* src, std::size_t count, cudaStream_t stream = nullptr) {
  detail::copy_async_bytes(dst, src, count * sizeof(T), stream, "kf::copy_async");
}

/// Host (pinned) -> device, the whole buffer; sizes must match (errc::invalid_argument).
template <class T>
void copy_async(device_buffer<T>& dst, const pinned_buffer<T>& src, cudaStream_t stream = nullptr) {
  detail::require_same_size("kf::copy_async", dst.size(), src.size());
  detail::copy_async_bytes(dst.data(), src.data(), src.size_bytes(), stream, "kf::copy_async");
}

/// Device -> host (pinned), the whole buffer; sizes must match (errc::invalid_argument).
template <class T>
void copy_async(pinned_buffer<T>& dst, const device_buffer<T>& src, cudaStream_t stream = nullptr) {
  detail::require_same_size("kf::copy_async", dst.size(), src.size());
  detail::copy_async_bytes(dst.data(), src.data(), src.size_bytes(), stream, "kf::copy_async");
}

}  // namespace kf
