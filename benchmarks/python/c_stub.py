# SPDX-License-Identifier: Apache-2.0
"""A stand-in for kernelforge._C with every entry a no-op, for the CPU-only host-time
probes (profile_torch_op_cpu.py, profile_conv_host_cpu.py): enough for kernelforge and
kernelforge.torch to import and run their Python paths on a machine with no GPU."""

import types

ENTRIES = ("relu_threshold", "relu_threshold_raw", "relu_threshold_backward", "relu_threshold_backward_raw",
           "vector_add", "saxpy", "matmul", "conv2d", "conv2d_backward_data", "conv2d_backward_filter", "filter2d",
           "compiled_architectures", "device_info")


def stub_module(output_pq=(1, 1)):
    """The stub module; conv2d_output_shape returns output_pq (the layer's (P, Q))."""
    stub = types.ModuleType("kernelforge._C")
    stub.__version__ = "0.0.0"
    stub.dtype_codes = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3}
    stub._set_error_classes = lambda classes: None
    stub.device_count = lambda: 0

    def noop(*args):
        return None

    for name in ENTRIES:
        setattr(stub, name, noop)
    stub.conv2d_output_shape = lambda *a: output_pq
    return stub
