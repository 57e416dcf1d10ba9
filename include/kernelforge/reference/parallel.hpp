// SPDX-License-Identifier: Apache-2.0
// The CPU references' one threading helper: large reference computations
// split their rows over the machine's hardware threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace kf::reference {

/// Runs body(begin, end) over the rows [0, rows), split across hardware threads
/// when `work` (a rough count of multiply-adds) makes it worth it.
template <class F>
void parallel_rows(std::size_t rows, double work, F body) {
  constexpr double serial_work = 1 << 22;  // below ~4M multiply-adds a thread costs more than it saves
  const std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
  if (work < serial_work || workers == 1 || rows < 2) {
    body(std::size_t{0}, rows);
    return;
  }
  const std::size_t parts = std::min(rows, workers);
  const std::size_t step = (rows + parts - 1) / parts;
  std::vector<std::thread> pool;
  for (std::size_t begin = 0; begin < rows; begin += step) pool.emplace_back(body, begin, std::min(rows, begin + step));
  for (auto& t : pool) t.join();
}

}  // namespace kf::reference
