// SPDX-License-Identifier: Apache-2.0
// Probe (not part of the library): can one wgmma A descriptor read a 64-row operand out of a
// 128-byte-swizzled halo box at any row, with any row stride between its 8-row groups?
//
// The question behind it: conv2d step 7 loads one pixel box per tap (one-tap k-steps) or per
// filter column (three taps, tap j one 1024-byte atom further in). A tile of 8 x 16 output
// pixels could instead load its whole (8 + 2) x (16 + 2) halo box once per channel block and
// read all nine taps from it: tap (r, s)'s m64 block is 8 output rows, each 8 consecutive
// box rows starting at (h + r) x 10 + s -- a start address 128 x s bytes off the swizzle atom
// and a stride byte offset of 1280 between the 8-row groups (10 box pixels), where every
// kernel of ours uses atom-aligned starts and 1024. The box is written as TMA writes it: the
// 16-byte chunk c of row x lands at chunk c ^ (x & 7) (absolute address bits 7-9; the region
// is 1024-aligned).
//
// For each (start row, stride in rows, descriptor base-offset field, k offset) the probe runs
// one m64n64k16 f16 and one m64n64k8 TF32 product and compares the result, exactly (small
// integers), with what three models of the hardware would read:
//   absolute  the swizzle phase is the byte address's bits 7-9 (what TMA does)
//   relative  the phase counts rows from the start address, plus the base-offset field
//   group     the phase is the row within its 8-row group, plus the base-offset field (hardware that
//             assumes the groups are whole atoms apart)
//   none      (sanity) the phase is ignored
// If only "group" matches at a 1280-byte stride, a box 16 pixels wide (2048 bytes a row of the box)
// would still serve nine taps.
// Build and run (the device): nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude wip/probes/desc_shift.cu
// -o /tmp/desc_shift && /tmp/desc_shift
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernelforge/kernels/arch/wgmma_sm90.cuh"

namespace {

constexpr int kBoxRows = 256;  // A region: 256 rows of 128 bytes (32 KiB)
constexpr int kBRows = 64;     // B region: 64 rows (n) of 128 bytes
constexpr int kN = 64;

struct probe_case {
  int start_row;  // the descriptor's first row (128 bytes each)
  int sbo_rows;   // rows between 8-row groups
  int base_off;   // the descriptor's base-offset field (bits 49-51)
  int k_bytes;    // byte offset along k inside the row (0 or 32: the second k-slice)
};

// Element values: small integers, exact in f16, TF32 and fp32 sums.
int a_value(int row, int k) { return ((row * 7 + k * 3) % 13) - 6; }
int b_value(int n, int k) { return ((n * 5 + k * 11) % 9) - 4; }

// The byte image of a swizzled region whose element (row, k) of `bytes` bytes holds value(row, k).
template <class T, class F>
std::vector<unsigned char> swizzled_image(int rows, F value) {
  std::vector<unsigned char> img(static_cast<std::size_t>(rows) * 128);
  const int per_row = 128 / static_cast<int>(sizeof(T));
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < per_row; ++k) {
      const int byte = k * static_cast<int>(sizeof(T));
      const int chunk = (byte >> 4) ^ (r & 7);
      T v = static_cast<T>(static_cast<float>(value(r, k)));
      std::memcpy(&img[static_cast<std::size_t>(r) * 128 + chunk * 16 + (byte & 15)], &v, sizeof(T));
    }
  }
  return img;
}

__global__ void wgmma_probe(const unsigned char* a_img, const unsigned char* b_img, float* d_f16, float* d_tf32,
                            probe_case pc) {
#if KF_ARCH_SM90A
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~1023ull);
  unsigned char* a16 = smem;                  // f16 A
  unsigned char* b16 = a16 + kBoxRows * 128;  // f16 B
  unsigned char* a32 = b16 + kBRows * 128;    // TF32 A
  unsigned char* b32 = a32 + kBoxRows * 128;  // TF32 B
  for (int i = threadIdx.x; i < kBoxRows * 128; i += blockDim.x) {
    a16[i] = a_img[i];
    a32[i] = a_img[kBoxRows * 128 + i];
  }
  for (int i = threadIdx.x; i < kBRows * 128; i += blockDim.x) {
    b16[i] = b_img[i];
    b32[i] = b_img[kBRows * 128 + i];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const auto addr = [](const void* p) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(p)); };
  const std::uint64_t base_field = static_cast<std::uint64_t>(pc.base_off & 7) << 49;
  const std::uint32_t a_off = static_cast<std::uint32_t>(pc.start_row * 128 + pc.k_bytes);
  const std::uint32_t sbo = static_cast<std::uint32_t>(pc.sbo_rows * 128);
  float d[kf::detail::wgmma_accumulators<kN>];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const auto store = [&](float* out) {
    for (int i = 0; i < kf::detail::wgmma_accumulators<kN>; ++i) {
      const int row = warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
      const int col = (i / 4) * 8 + (lane % 4) * 2 + (i % 2);
      out[row * kN + col] = d[i];
    }
  };
  for (float& x : d) x = 0.f;
  kf::detail::wgmma_fence();
  kf::detail::wgmma_m64nNk16<__half, kN>(d, kf::detail::smem_descriptor_sw128(addr(a16) + a_off, 16, sbo) | base_field,
                                         kf::detail::smem_descriptor_sw128(addr(b16) + pc.k_bytes));
  kf::detail::wgmma_commit();
  kf::detail::wgmma_wait<0>();
  kf::detail::fence_operands(d);
  store(d_f16);
  for (float& x : d) x = 0.f;
  kf::detail::wgmma_fence();
  kf::detail::wgmma_m64nNk8_tf32<kN>(d, kf::detail::smem_descriptor_sw128(addr(a32) + a_off, 16, sbo) | base_field,
                                     kf::detail::smem_descriptor_sw128(addr(b32) + pc.k_bytes));
  kf::detail::wgmma_commit();
  kf::detail::wgmma_wait<0>();
  kf::detail::fence_operands(d);
  store(d_tf32);
#endif
}

enum class model { absolute, relative, group, none };
const char* name_of(model m) {
  return m == model::absolute ? "absolute" : m == model::relative ? "relative" : m == model::group ? "group" : "none";
}

// What element of the image the hardware would read for logical (matrix row m, byte kb) under a model.
template <class T>
float read_model(const std::vector<unsigned char>& img, const probe_case& pc, model md, int m, int kb) {
  const int rel_row = (m / 8) * pc.sbo_rows + (m % 8);
  const int logical = (pc.start_row + rel_row) * 128 + pc.k_bytes + kb;  // bytes from the 1024-aligned base
  int phase = 0;
  if (md == model::absolute) phase = (logical >> 7) & 7;
  if (md == model::relative) phase = (((rel_row * 128 + pc.k_bytes + kb) >> 7) + pc.base_off) & 7;
  if (md == model::group) phase = ((m % 8) + pc.base_off) & 7;
  const int physical = logical ^ (phase << 4);
  if (physical < 0 || physical + static_cast<int>(sizeof(T)) > static_cast<int>(img.size())) return 1e30f;
  T v;
  std::memcpy(&v, &img[physical], sizeof(T));
  return static_cast<float>(v);
}

template <class T>
std::vector<float> expected(const std::vector<unsigned char>& a_img, const std::vector<unsigned char>& b_img,
                            const probe_case& pc, model md, int k_elems) {
  std::vector<float> d(64 * kN);
  for (int m = 0; m < 64; ++m) {
    for (int n = 0; n < kN; ++n) {
      double s = 0;
      for (int k = 0; k < k_elems; ++k) {
        const int kb = k * static_cast<int>(sizeof(T));
        // B is always read as canonically laid out (atom-aligned, stride 1024): the absolute model.
        const probe_case bpc{0, 8, 0, pc.k_bytes};
        s += static_cast<double>(read_model<T>(a_img, pc, md, m, kb)) *
             read_model<T>(b_img, bpc, model::absolute, n, kb);
      }
      d[m * kN + n] = static_cast<float>(s);
    }
  }
  return d;
}

bool same(const std::vector<float>& x, const std::vector<float>& y) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) return false;
  return true;
}

}  // namespace

int main() {
  const auto a16 = swizzled_image<__half>(kBoxRows, a_value);
  const auto b16 = swizzled_image<__half>(kBRows, b_value);
  const auto a32 = swizzled_image<float>(kBoxRows, a_value);
  const auto b32 = swizzled_image<float>(kBRows, b_value);
  unsigned char *da, *db;
  float *df16, *dtf32;
  cudaMalloc(&da, a16.size() + a32.size());
  cudaMalloc(&db, b16.size() + b32.size());
  cudaMalloc(&df16, 64 * kN * sizeof(float));
  cudaMalloc(&dtf32, 64 * kN * sizeof(float));
  cudaMemcpy(da, a16.data(), a16.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(da + a16.size(), a32.data(), a32.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b16.data(), b16.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db + b16.size(), b32.data(), b32.size(), cudaMemcpyHostToDevice);
  const int smem = 2 * (kBoxRows + kBRows) * 128 + 1024;
  cudaFuncSetAttribute(wgmma_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const probe_case cases[] = {
      {0, 8, 0, 0},  {0, 8, 0, 32},  {8, 8, 0, 0},   {1, 8, 0, 0},   {1, 8, 1, 0},     {0, 10, 0, 0},
      {3, 10, 0, 0}, {3, 10, 3, 0},  {3, 10, 0, 32}, {3, 10, 3, 32}, {11, 10, 0, 0},   {11, 10, 3, 0},
      {2, 18, 0, 0}, {2, 18, 2, 32}, {21, 9, 0, 0},  {21, 9, 5, 32}, {117, 10, 0, 32}, {5, 12, 0, 0},
      {1, 16, 0, 0}, {1, 16, 1, 0},  {2, 16, 2, 32}, {17, 16, 1, 0},
  };
  std::printf("start sbo_rows base_off k_bytes | f16: matches | tf32: matches\n");
  int ok_absolute = 0, total = 0;
  for (const probe_case& pc : cases) {
    std::vector<float> got16(64 * kN, -1.f), got32(64 * kN, -1.f);
    cudaMemset(df16, 0xFF, 64 * kN * sizeof(float));
    cudaMemset(dtf32, 0xFF, 64 * kN * sizeof(float));
    wgmma_probe<<<1, 128, smem>>>(da, db, df16, dtf32, pc);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("%5d %8d %8d %7d | launch error: %s\n", pc.start_row, pc.sbo_rows, pc.base_off, pc.k_bytes,
                  cudaGetErrorString(e));
      return 1;
    }
    cudaMemcpy(got16.data(), df16, got16.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(got32.data(), dtf32, got32.size() * sizeof(float), cudaMemcpyDeviceToHost);
    std::printf("%5d %8d %8d %7d |", pc.start_row, pc.sbo_rows, pc.base_off, pc.k_bytes);
    for (int t = 0; t < 2; ++t) {
      std::printf(" %s:", t == 0 ? "f16" : "tf32");
      bool any = false;
      for (model md : {model::absolute, model::relative, model::group, model::none}) {
        const bool hit = t == 0 ? same(got16, expected<__half>(a16, b16, pc, md, 16))
                                : same(got32, expected<float>(a32, b32, pc, md, 8));
        if (hit) {
          std::printf(" %s", name_of(md));
          any = true;
          if (md == model::absolute) ++ok_absolute;
        }
      }
      if (!any) std::printf(" (none of the models)");
      ++total;
    }
    std::printf("\n");
  }
  std::printf("absolute model matched %d of %d products\n", ok_absolute, total);
  return 0;
}
