# SPDX-License-Identifier: Apache-2.0
"""The convolution operator, kernelforge::conv2d (registered at import; kernelforge.torch
imports this module and re-exports conv2d). The registration is not in _torch_conv.py
with the body because kernelforge.conv2d imports that module for torch tensors too:
operators are registered by importing kernelforge.torch only."""

from typing import List, Optional

import torch

from . import _torch_conv as _conv
from ._torch_ops import direct as _direct
from ._torch_ops import register as _register

# The body, fake kernel and autograd formula are in _torch_conv.py, with the layout rule:
# float16 and bfloat16 run channels_last, float32 runs channels_last where torch reads x's
# strides so (else NCHW), and the output comes in that memory format.

_conv_op = _register("conv2d", "(Tensor x, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                     "int[] dilation, bool tf32=False) -> Tensor", _conv.conv_kernel, _conv.conv_fake,
                     _conv.conv_backward, _conv.conv_setup)


def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: List[int],
           padding: List[int], dilation: List[int], tf32: bool = False) -> torch.Tensor:
    """x (N, C, H, W) cross-correlated with weight (K, C, R, S), + bias (K,)
    (torch.nn.functional.conv2d, groups=1): float32, and float16 and bfloat16.

    The layout (kernelforge.conv2d's layout="auto"): float16 and bfloat16 in channels_last
    memory, float32 in channels_last where torch reads x's strides as channels_last (a
    channels_last tensor), else NCHW; the output is channels_last or contiguous to match.
    An x or weight not dense in that memory format is copied into it first (16-bit NCHW
    inputs too: their output is channels_last). tf32=True allows TF32 tensor cores for
    float32. Backward: PyTorch's convolution_backward (gradients in the inputs' dtypes)."""
    if _direct(x, weight, bias):
        return _conv.conv_kernel(x, weight, bias, list(stride), list(padding), list(dilation), bool(tf32))
    return _conv_op(x, weight, bias, stride, padding, dilation, tf32)
