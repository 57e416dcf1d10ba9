# SPDX-License-Identifier: Apache-2.0
"""PyTorch operators over kernelforge, for autograd, torch.compile and CUDA graphs.

Eight operators are registered with torch.library under the namespace "kernelforge":
torch.ops.kernelforge.relu_threshold, relu_threshold_backward, matmul (float32, float64,
float16, bfloat16), scaled_matmul (FP8, see kernelforge.scaled_matmul), conv2d (float32;
float16 and bfloat16 in channels_last memory; channels_last in, channels_last out), its
gradients conv2d_backward_data and conv2d_backward_filter, and filter2d, each with a fake
implementation whose shapes and strides match the real op (torch.compile traces it
without a graph break) and, for relu_threshold, matmul and the three convolution
operators, an autograd formula (relu_threshold_backward; two kernelforge matmuls on
transposed views; conv2d's gradients, in the layout the forward ran, so a training
graph holds no aten convolution backward; the gradients' own, from the same operators).
Modules: ThresholdReLU (drop-in for torch.nn.Threshold(threshold, 0)) and Conv2d
(drop-in for torch.nn.Conv2d).

The functions of this module (relu_threshold, ...) are what to call. Where nothing
needs PyTorch's dispatcher (eager mode, plain CUDA tensors, no gradient to record, no
dispatch mode or functorch transform active) they run the kernel directly; otherwise
(torch.compile, autograd, FakeTensor, vmap, ...) they call the registered operator.
Both run the same code, on torch's current stream of the input's device, with outputs
from torch's caching allocator, so they can be captured in CUDA graphs.

This module is the public face; the code is in one private module per family, each
registering its operators at import: _torch_relu.py, _torch_matmul.py (matmul and
scaled_matmul), _torch_conv_op.py (with _torch_conv.py) and _torch_filter.py, all
through _torch_ops.py (the registration, and why torch.library.Library rather than
torch.library.custom_op). The modules ThresholdReLU and Conv2d are below, so that a
pickled model names them kernelforge.torch.ThresholdReLU and kernelforge.torch.Conv2d.
"""

import torch
from torch import nn

from . import _torch_conv as _conv
from ._api_conv import conv_padding

# Each import registers that family's operators: this order is their order of registration.
from ._torch_relu import relu_threshold, relu_threshold_backward
from ._torch_matmul import matmul, scaled_matmul
from ._torch_conv_op import conv2d, conv2d_backward_data, conv2d_backward_filter
from ._torch_filter import filter2d

__all__ = ["relu_threshold", "relu_threshold_backward", "matmul", "scaled_matmul", "conv2d", "conv2d_backward_data",
           "conv2d_backward_filter", "filter2d", "ThresholdReLU", "Conv2d"]


class ThresholdReLU(nn.Module):
    """y = x if x > threshold else 0: drop-in for torch.nn.Threshold(threshold, 0).

    CUDA tensors run kernelforge (float32, float64, float16, bfloat16); CPU tensors
    fall back to torch.nn.functional.threshold.
    """

    def __init__(self, threshold: float = 0.0):
        super().__init__()
        self.threshold = float(threshold)

    def forward(self, x):
        if not x.is_cuda:
            return torch.nn.functional.threshold(x, self.threshold, 0.0)
        return relu_threshold(x, self.threshold)

    def extra_repr(self):
        return f"threshold={self.threshold}"


class Conv2d(nn.Conv2d):
    """torch.nn.Conv2d whose forward and backward run kernelforge's conv2d and its gradients.

    Same constructor, parameters and state_dict as torch.nn.Conv2d (groups=1 and
    padding_mode="zeros" only), plus tf32=False: allow TF32 tensor cores in the forward
    and the gradients (float32), and math=None: the forward's math mode as
    kernelforge.torch.conv2d's ("exact", "tf32", or "fp32_emulated": fp32 accuracy on the
    TF32 tensor cores, compute capability 9.0, with exact gradients). kernelforge runs CUDA float32 inputs (channels_last ones
    in channels_last, others in NCHW) and CUDA float16 and bfloat16 inputs in
    channels_last memory, and returns the output in the input's memory format; other
    inputs (CPU, float64, 16-bit NCHW) fall back to torch's convolution (and its
    backward). The gradients run in the forward's layout: conv2d_backward_data for x
    (skipped where x needs none, as for a network's first layer), conv2d_backward_filter
    for the weight and bias; no aten convolution backward enters the graph. For
    channels_last inputs convert the module too (.to(memory_format=torch.channels_last)):
    a weight in the other memory format is copied on each call.
    """

    math = None  # modules pickled before math existed read the default

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, tf32=False, math=None):
        if groups != 1:
            raise ValueError("kernelforge.torch.Conv2d supports groups=1 only")
        if padding_mode != "zeros":
            raise ValueError("kernelforge.torch.Conv2d supports padding_mode='zeros' only")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.tf32 = tf32
        self.math = math
        self._kf_padding = list(conv_padding(self.padding, tuple(self.stride), tuple(self.dilation),
                                             tuple(self.kernel_size)))

    def _conv_forward(self, input, weight, bias):
        if not _conv.module_runs(input):
            return super()._conv_forward(input, weight, bias)
        return conv2d(input, weight, bias, list(self.stride), self._kf_padding, list(self.dilation), self.tf32,
                      self.math)
