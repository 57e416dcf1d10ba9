// SPDX-License-Identifier: Apache-2.0
// Host cost of one call: kf::saxpy against a bare <<<>>> launch of an
// equivalent kernel (launch_overhead.cu).
#pragma once

namespace kf::bench::elementwise {

/// Registers launch_overhead/bare_launch, then launch_overhead/kf_saxpy.
void register_launch_overhead_benchmarks();

}  // namespace kf::bench::elementwise
