# SPDX-License-Identifier: Apache-2.0
"""The convolution operators, kernelforge::conv2d and its gradients
kernelforge::conv2d_backward_data and kernelforge::conv2d_backward_filter (registered at
import; kernelforge.torch imports this module and re-exports the functions), with their
autograd formulas. The registration is not in _torch_conv.py with the bodies because
kernelforge.conv2d imports that module for torch tensors too: operators are registered
by importing kernelforge.torch only.

conv2d's backward runs the two gradient operators, in the layout the forward ran (the
layout rule on the forward's x), so no aten convolution backward enters a training
graph: dx = conv2d_backward_data(grad, weight) only where x needs a gradient (not for a
network's first layer), dweight and dbias = conv2d_backward_filter(grad, x) where the
weight needs one (dbias alone, with a frozen weight: grad summed over N, P and Q). Each
gradient operator is linear in grad and in its other tensor, and its own backward
(double backward: gradient penalties, Hessian-vector products) is made of the same
three operators, the ReLU mask by kernelforge::relu_threshold_backward on relu_y.
"""

from typing import List, Optional, Tuple

import torch

from . import _torch_conv as _conv
from ._torch_ops import direct as _direct
from ._torch_ops import eager_function as _eager_function
from ._torch_ops import eager_grad as _eager_grad
from ._torch_ops import register as _register
from ._torch_relu import relu_threshold_backward as _relu_backward

# The bodies and fake kernels are in _torch_conv.py, with the layout rule: float16 and
# bfloat16 run channels_last, float32 runs channels_last where torch reads x's strides so
# (else NCHW), and the output (and the gradients dx and dweight) come in that memory format.


# ---- autograd formulas --------------------------------------------------------------------

def _conv_setup(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, tf32, math = inputs
    needs_x, needs_weight = ctx.needs_input_grad[:2]
    # dx needs the weight, dweight needs x: save only what a gradient to come reads.
    ctx.save_for_backward(x if needs_weight else None, weight if needs_x else None)
    ctx.x_size, ctx.weight_size = list(x.shape), list(weight.shape)
    ctx.has_bias = bias is not None
    ctx.geometry = (list(stride), list(padding), list(dilation))
    # The gradients in the forward's mode: TF32, or exact (for "exact", and for "fp32_emulated",
    # which the gradient kernels do not run: exact is as accurate).
    ctx.tf32 = tf32 or math == "tf32"
    ctx.layout = _conv.layout_of(x)  # the forward's layout: the gradients run in it too


def _conv_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    stride, padding, dilation = ctx.geometry
    needs_x, needs_weight, needs_bias = ctx.needs_input_grad[:3]
    needs_bias = needs_bias and ctx.has_bias
    grad_x = grad_weight = grad_bias = None
    if needs_x:
        grad_x = conv2d_backward_data(grad, weight, ctx.x_size, stride, padding, dilation, ctx.tf32,
                                      layout=ctx.layout)
    if needs_weight:
        grad_weight, dbias = conv2d_backward_filter(grad, x, ctx.weight_size, stride, padding, dilation, needs_bias,
                                                    ctx.tf32, layout=ctx.layout)
        grad_bias = dbias if needs_bias else None
    elif needs_bias:  # a frozen weight: no x saved, no dweight to compute
        grad_bias = grad.sum((0, 2, 3), dtype=torch.float32).to(grad.dtype)
    return grad_x, grad_weight, grad_bias, None, None, None, None, None


def _mask(t, relu_y, relu_threshold):
    """t where the forward's fused ReLU let the value through (relu_y > threshold), else 0."""
    return t if relu_y is None else _relu_backward(t, relu_y, relu_threshold)


def _data_setup(ctx, inputs, output):
    grad, weight, x_size, stride, padding, dilation, tf32, relu_y, relu_threshold, layout = inputs
    ctx.save_for_backward(grad, weight, relu_y)
    ctx.weight_size = list(weight.shape)
    ctx.args = (list(stride), list(padding), list(dilation), tf32)
    ctx.relu_threshold = relu_threshold
    ctx.layout = _conv.resolve_layout(layout, grad)


def _data_backward(ctx, grad_dx):
    # dx = D(m * grad, w), linear in grad and in w (m: the ReLU mask), the adjoint of the
    # forward in x: <g, D(dy, w)> = <conv(g, w), dy> = <dW(g, dy), w>.
    grad, weight, relu_y = ctx.saved_tensors
    stride, padding, dilation, tf32 = ctx.args
    needs_grad, needs_weight = ctx.needs_input_grad[:2]
    grad_grad = grad_weight = None
    if needs_grad:
        grad_grad = _mask(conv2d(grad_dx, weight, None, stride, padding, dilation, tf32), relu_y, ctx.relu_threshold)
    if needs_weight:
        grad_weight, _ = conv2d_backward_filter(grad, grad_dx, ctx.weight_size, stride, padding, dilation, False, tf32,
                                                relu_y, ctx.relu_threshold, ctx.layout)
    return grad_grad, grad_weight, None, None, None, None, None, None, None, None


def _filter_setup(ctx, inputs, output):
    grad, x, weight_size, stride, padding, dilation, bias, tf32, relu_y, relu_threshold, layout = inputs
    ctx.save_for_backward(grad, x, relu_y)
    ctx.x_size = list(x.shape)
    ctx.bias = bias
    ctx.args = (list(stride), list(padding), list(dilation), tf32)
    ctx.relu_threshold = relu_threshold
    ctx.layout = _conv.resolve_layout(layout, x)


def _filter_backward(ctx, grad_dweight, grad_dbias):
    # (dw, db) = (dW(x, m * grad), sum of m * grad): grad's gradient is m * (conv(x, g_w) + g_b),
    # x's is D(m * grad, g_w).
    grad, x, relu_y = ctx.saved_tensors
    stride, padding, dilation, tf32 = ctx.args
    needs_grad, needs_x = ctx.needs_input_grad[:2]
    grad_grad = grad_x = None
    if needs_grad:
        bias = grad_dbias if ctx.bias else None
        grad_grad = _mask(conv2d(x, grad_dweight, bias, stride, padding, dilation, tf32), relu_y, ctx.relu_threshold)
    if needs_x:
        grad_x = conv2d_backward_data(grad, grad_dweight, ctx.x_size, stride, padding, dilation, tf32, relu_y,
                                      ctx.relu_threshold, ctx.layout)
    return grad_grad, grad_x, None, None, None, None, None, None, None, None, None


_conv_op = _register("conv2d", "(Tensor x, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                     "int[] dilation, bool tf32=False, str? math=None) -> Tensor", _conv.conv_kernel,
                     _conv.conv_fake, _conv_backward, _conv_setup)
_data_op = _register("conv2d_backward_data", "(Tensor grad, Tensor weight, SymInt[] x_size, int[] stride, "
                     "int[] padding, int[] dilation, bool tf32=False, Tensor? relu_y=None, "
                     "float relu_threshold=0.0, str layout=\"auto\") -> Tensor", _conv.backward_data_kernel,
                     _conv.backward_data_fake, _data_backward, _data_setup)
_filter_op = _register("conv2d_backward_filter", "(Tensor grad, Tensor x, SymInt[] weight_size, int[] stride, "
                       "int[] padding, int[] dilation, bool bias=False, bool tf32=False, Tensor? relu_y=None, "
                       "float relu_threshold=0.0, str layout=\"auto\") -> (Tensor, Tensor)",
                       _conv.backward_filter_kernel, _conv.backward_filter_fake, _filter_backward, _filter_setup)
# Their autograd.Functions, for eager calls with a gradient to record (a training step's
# forward): no dispatcher round trip, as the direct path (_torch_ops.eager_grad).
_conv_eager = _eager_function("kernelforge::conv2d")
_data_eager = _eager_function("kernelforge::conv2d_backward_data")
_filter_eager = _eager_function("kernelforge::conv2d_backward_filter")


def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: List[int],
           padding: List[int], dilation: List[int], tf32: bool = False, math: Optional[str] = None) -> torch.Tensor:
    """x (N, C, H, W) cross-correlated with weight (K, C, R, S), + bias (K,)
    (torch.nn.functional.conv2d, groups=1): float32, and float16 and bfloat16.

    The layout (kernelforge.conv2d's layout="auto"): float16 and bfloat16 in channels_last
    memory, float32 in channels_last where torch reads x's strides as channels_last (a
    channels_last tensor), else NCHW; the output is channels_last or contiguous to match.
    An x or weight not dense in that memory format is copied into it first (16-bit NCHW
    inputs too: their output is channels_last). math (float32), as kernelforge.conv2d's:
    "exact" (the default), "tf32" (TF32 tensor cores; tf32=True says the same) or
    "fp32_emulated" (fp32 accuracy on the TF32 tensor cores, compute capability 9.0).
    Backward: kernelforge's conv2d_backward_data and conv2d_backward_filter, in the
    forward's layout (gradients in the inputs' dtypes) and mode: TF32 after a TF32
    forward, else exact (the gradients have no fp32_emulated mode; exact is as accurate)."""
    if _direct(x, weight, bias):
        return _conv.conv_kernel(x, weight, bias, list(stride), list(padding), list(dilation), bool(tf32), math)
    if _eager_grad(x, weight, bias):
        return _conv_eager(x, weight, bias, list(stride), list(padding), list(dilation), bool(tf32), math)
    return _conv_op(x, weight, bias, stride, padding, dilation, tf32, math)


def conv2d_backward_data(grad: torch.Tensor, weight: torch.Tensor, x_size: List[int], stride: List[int],
                         padding: List[int], dilation: List[int], tf32: bool = False,
                         relu_y: Optional[torch.Tensor] = None, relu_threshold: float = 0.0,
                         layout: str = "auto") -> torch.Tensor:
    """dx (x_size = (N, C, H, W)) = dL/dx of conv2d(x, weight) from grad = dL/dy (N, K, P, Q):
    what torch.nn.grad.conv2d_input computes (groups=1), on kernelforge's kernels.

    layout: "auto" (the rule of conv2d, applied to grad; float16 and bfloat16 always
    channels_last), "nchw" or "nhwc": what the forward ran in. grad, weight and relu_y are
    copied into its memory format where they are not dense in it; dx comes in it.
    relu_y: the output of a forward that fused the threshold ReLU (relu_threshold >= 0):
    grad counts only where relu_y > relu_threshold. tf32=True allows TF32 tensor cores."""
    if _direct(grad, weight, relu_y):
        return _conv.backward_data_kernel(grad, weight, list(x_size), list(stride), list(padding), list(dilation),
                                          bool(tf32), relu_y, float(relu_threshold), layout)
    if _eager_grad(grad, weight, relu_y):
        return _data_eager(grad, weight, list(x_size), list(stride), list(padding), list(dilation), bool(tf32), relu_y,
                           float(relu_threshold), layout)
    return _data_op(grad, weight, x_size, stride, padding, dilation, tf32, relu_y, relu_threshold, layout)


def conv2d_backward_filter(grad: torch.Tensor, x: torch.Tensor, weight_size: List[int], stride: List[int],
                           padding: List[int], dilation: List[int], bias: bool = False, tf32: bool = False,
                           relu_y: Optional[torch.Tensor] = None, relu_threshold: float = 0.0,
                           layout: str = "auto") -> Tuple[torch.Tensor, torch.Tensor]:
    """(dweight (weight_size = (K, C, R, S)), dbias) = dL/dweight and dL/dbias of
    conv2d(x, weight) + bias from the forward's x and grad = dL/dy: what
    torch.nn.grad.conv2d_weight computes (groups=1), plus the bias's gradient.

    dbias is (K,) with bias=True, else an empty (0,) tensor (operators return tensors).
    layout: "auto" (the rule of conv2d on x), "nchw" or "nhwc"; grad, x and relu_y are
    copied into its memory format where they are not dense in it; dweight comes in it.
    relu_y, relu_threshold and tf32 as in conv2d_backward_data."""
    if _direct(grad, x, relu_y):
        return _conv.backward_filter_kernel(grad, x, list(weight_size), list(stride), list(padding), list(dilation),
                                            bool(bias), bool(tf32), relu_y, float(relu_threshold), layout)
    if _eager_grad(grad, x, relu_y):
        return _filter_eager(grad, x, list(weight_size), list(stride), list(padding), list(dilation), bool(bias),
                             bool(tf32), relu_y, float(relu_threshold), layout)
    return _filter_op(grad, x, weight_size, stride, padding, dilation, bias, tf32, relu_y, relu_threshold, layout)
