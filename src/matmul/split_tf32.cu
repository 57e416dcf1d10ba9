// SPDX-License-Identifier: Apache-2.0
// The fp32-emulation pre-pass (split_tf32.cuh), built for every architecture
// of the library: its one instantiation, which matmul steps 15 (sm_90a
// object) and 16 and conv2d's step 9 (sm_90a object) enqueue through the
// launcher below.
#include "kernelforge/kernels/matmul/split_tf32.cuh"

namespace kf::detail {

void launch_split_tf32_pack_batched(const float* src, std::size_t batch, std::size_t src_batch, std::size_t row_stride,
                                    std::size_t k_stride, std::size_t rows, std::size_t k, float* dst,
                                    std::size_t dst_batch, unsigned* nonfinite, cudaStream_t stream, const char* what) {
  const dim3 block(split_block_k, 8);
  const std::size_t ld = split_tf32_ld(k);
  const std::size_t k_blocks = ceil_div(k, std::size_t{split_block_k});
  const std::size_t row_blocks = ceil_div(rows, std::size_t{split_block_k});
  // gridDim.y and gridDim.z are at most 65535: walk the rows and the batch in slabs.
  constexpr std::size_t max_yz = 65535;
  for (std::size_t z0 = 0; z0 < batch; z0 += max_yz) {
    const std::size_t zs = batch - z0 < max_yz ? batch - z0 : max_yz;
    for (std::size_t y0 = 0; y0 < row_blocks; y0 += max_yz) {
      const std::size_t ys = row_blocks - y0 < max_yz ? row_blocks - y0 : max_yz;
      const std::size_t r = y0 * split_block_k;
      split_tf32_pack_kernel<float>
          <<<dim3(static_cast<unsigned>(k_blocks), static_cast<unsigned>(ys), static_cast<unsigned>(zs)), block, 0,
             stream>>>(src + z0 * src_batch + r * row_stride, src_batch, row_stride, k_stride, rows - r, k,
                       dst + z0 * dst_batch + r * ld, dst_batch, ld, nonfinite);
      check_launch(what);
    }
  }
}

void launch_split_tf32_pack_pair(const split_tf32_operand& first, const split_tf32_operand& second, unsigned* nonfinite,
                                 cudaStream_t stream, const char* what) {
  const auto tiles_of = [](const split_tf32_operand& o) {
    split_tf32_tiles t;
    t.o = o;
    t.ld = split_tf32_ld(o.k);
    t.k_blocks = ceil_div(o.k, std::size_t{split_block_k});
    t.row_blocks = ceil_div(o.rows, std::size_t{split_block_k});
    t.blocks = t.k_blocks * t.row_blocks * o.batch;
    return t;
  };
  const split_tf32_tiles a = tiles_of(first), b = tiles_of(second);
  constexpr std::size_t max_x = 2147483647;  // gridDim.x (a.blocks + b.blocks cannot wrap a 64-bit size_t)
  // A set without a destination is not split; one set, or too many blocks for one grid: a launch a set.
  const bool both = first.dst != nullptr && second.dst != nullptr;
  if (!both || a.blocks == 0 || b.blocks == 0 || a.blocks + b.blocks > max_x) {
    for (const split_tf32_operand* o : {&first, &second}) {
      if (o->dst == nullptr) continue;
      launch_split_tf32_pack_batched(o->src, o->batch, o->src_batch, o->row_stride, o->k_stride, o->rows, o->k, o->dst,
                                     o->dst_batch, nonfinite, stream, what);
    }
    return;
  }
  split_tf32_pack_pair_kernel<float>
      <<<static_cast<unsigned>(a.blocks + b.blocks), dim3(split_block_k, 8), 0, stream>>>(a, b, nonfinite);
  check_launch(what);
}

}  // namespace kf::detail
