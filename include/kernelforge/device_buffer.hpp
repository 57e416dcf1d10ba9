// SPDX-License-Identifier: Apache-2.0
// device_buffer<T>: an owning, move-only array in device memory, and the two
// copies that tests, examples and benchmarks need (host -> device -> host).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

namespace kf {
namespace detail {
// Out of line so that every failure becomes a kf::error with the numbers.
// count elements of element_bytes each: errc::out_of_memory (also when the byte
// count does not fit in size_t), errc::no_device.
void* device_allocate(std::size_t count, std::size_t element_bytes);
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t s);
void copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t s);  // synchronizes s
}  // namespace detail

/// `size` elements of T in device memory (uninitialized). Move-only.
template <class T>
class device_buffer {
 public:
  device_buffer() noexcept = default;
  explicit device_buffer(std::size_t size)
      : data_(size ? static_cast<T*>(detail::device_allocate(size, sizeof(T))) : nullptr), size_(size) {}
  ~device_buffer() { detail::device_free(data_); }

  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      detail::device_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Allocates a device copy of `host`, enqueued on `stream`. The host vector may be
/// destroyed as soon as this returns (pageable copies are staged before return).
template <class T>
[[nodiscard]] device_buffer<T> to_device(const std::vector<T>& host, cudaStream_t stream = nullptr) {
  device_buffer<T> dev(host.size());
  detail::copy_to_device(dev.data(), host.data(), dev.size_bytes(), stream);
  return dev;
}

/// Copies `dev` back to the host; waits for `stream`, so earlier kernel faults
/// surface here as errc::cuda_runtime.
template <class T>
[[nodiscard]] std::vector<T> to_host(const device_buffer<T>& dev, cudaStream_t stream = nullptr) {
  std::vector<T> host(dev.size());
  detail::copy_to_host(host.data(), dev.data(), dev.size_bytes(), stream);
  return host;
}

}  // namespace kf
