# SPDX-License-Identifier: Apache-2.0
"""The CPU stand-in for _C's conv2d entries that test_torch_conv_cpu.py and
test_torch_conv_grad_cpu.py run kernelforge.torch's conv code against (torch's F.conv2d and
torch.nn.grad in float64, held to the binding's contract), installed by conftest.py's
conv_stand_in fixture, and what those tests share. Imports torch: only imported where torch
is installed."""

import torch
import torch.nn.functional as F

import kernelforge as kf
from conftest import gpu_count
from kernelforge import _torch_conv, _torch_ops, _torch_relu

CL = torch.channels_last
NOT_ON_GPU = (kf.NoDeviceError, "no usable CUDA device") if gpu_count() == 0 else (kf.InvalidArgumentError,
                                                                                     "not in GPU memory")


def channels_last(*shape, dtype=torch.float32, requires_grad=False):
    t = torch.randn(*shape).to(dtype).to(memory_format=CL)
    return t.requires_grad_() if requires_grad else t


class _ConvStandIn:
    """_C's conv2d entries computed by torch (F.conv2d and torch.nn.grad in float64) on
    CPU tensors, DLPack capsules in like _C, holding them to the binding's contract: shapes
    in the layout's memory order ((N, H, W, C), (K, R, S, C), (N, P, Q, K) for "nhwc") and
    dense in it, or, for "channels_last" (the torch code's "nhwc"), in torch's order and
    dense in channels_last memory; 16-bit in "nhwc" only (float64, which _C refuses, is let
    through for gradcheck); relu_y given exactly when relu is set; math a mode's name.
    Records the layout ("channels_last" as "nhwc") and the math of each forward call in
    `layouts` and `maths`, (entry, layout) of each gradient call in `gradients` and its tf32
    flag in `gradient_tf32`."""

    layouts = []
    maths = []
    gradients = []
    gradient_tf32 = []

    @staticmethod
    def conv2d_output_shape(*args):
        return kf._C.conv2d_output_shape(*args)

    @staticmethod
    def _tensors(layout, arrays):
        """(the layout, (N, C, H, W)-shaped views of the arrays): "channels_last" (what
        kernelforge's torch code passes for "nhwc": torch's order, channels_last memory) is
        "nhwc" with its arrays in that order already."""
        tensors = [None if a is None else torch.utils.dlpack.from_dlpack(a) for a in arrays]
        torch_order = layout == "channels_last"
        for t in tensors:
            if t is None:
                continue
            dense = t.is_contiguous(memory_format=CL) if torch_order and t.dim() == 4 else t.is_contiguous()
            assert dense, f"an array {tuple(t.shape)} is not dense in {layout} order: {t.stride()}"
            assert layout != "nchw" or t.dtype in (torch.float32, torch.float64), "16-bit NCHW reached _C"
        if layout == "nhwc":  # (N, K, P, Q)-shaped views of the memory-order arrays
            tensors = [t if t is None or t.dim() != 4 else t.permute(0, 3, 1, 2) for t in tensors]
        return ("nhwc" if torch_order else layout), tensors

    @classmethod
    def conv2d(cls, x, weight, bias, out, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, layout, math,
               relu, relu_threshold, variant, stream):
        assert math in ("exact", "tf32", "fp32_emulated"), f"math {math!r} reached _C"
        layout, (x, weight, bias, out) = cls._tensors(layout, (x, weight, bias, out))
        y = F.conv2d(x.double(), weight.double(), None if bias is None else bias.double(), (stride_h, stride_w),
                     (pad_h, pad_w), (dilation_h, dilation_w))
        if relu:
            y = torch.where(y <= relu_threshold, torch.zeros_like(y), y)
        out.copy_(y)
        cls.layouts.append(layout)
        cls.maths.append(math)

    @staticmethod
    def _masked(dy, relu_y, relu, relu_threshold):
        assert relu == (relu_y is not None), "relu and relu_y disagree"
        dy = dy.double()
        return dy if relu_y is None else torch.where(relu_y <= relu_threshold, torch.zeros_like(dy), dy)

    @classmethod
    def conv2d_backward_data(cls, dy, weight, relu_y, dx, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                             layout, tf32, relu, relu_threshold, variant, stream):
        layout, (dy, weight, relu_y, dx) = cls._tensors(layout, (dy, weight, relu_y, dx))
        g = cls._masked(dy, relu_y, relu, relu_threshold)
        dx.copy_(torch.nn.grad.conv2d_input(dx.shape, weight.double(), g, (stride_h, stride_w), (pad_h, pad_w),
                                            (dilation_h, dilation_w)))
        cls.gradients.append(("data", layout))
        cls.gradient_tf32.append(tf32)

    @classmethod
    def conv2d_backward_filter(cls, x, dy, relu_y, dweight, dbias, stride_h, stride_w, pad_h, pad_w, dilation_h,
                               dilation_w, layout, tf32, relu, relu_threshold, variant, stream):
        layout, (x, dy, relu_y, dweight, dbias) = cls._tensors(layout, (x, dy, relu_y, dweight, dbias))
        g = cls._masked(dy, relu_y, relu, relu_threshold)
        dweight.copy_(torch.nn.grad.conv2d_weight(x.double(), dweight.shape, g, (stride_h, stride_w),
                                                  (pad_h, pad_w), (dilation_h, dilation_w)))
        if dbias is not None:
            dbias.copy_(g.sum((0, 2, 3)))
        cls.gradients.append(("filter", layout))
        cls.gradient_tf32.append(tf32)


class _ReluStandIn:
    """_C's relu_threshold_backward (the DLPack entry CPU tensors take) computed by torch:
    the ReLU mask of the gradients' double backward."""

    @staticmethod
    def relu_threshold_backward(grad, x, out, threshold, variant, stream):
        grad, x, out = (torch.utils.dlpack.from_dlpack(a) for a in (grad, x, out))
        out.copy_(torch.ops.aten.threshold_backward(grad, x, threshold))


def install(monkeypatch):
    """_torch_conv's _C.conv2d computed by torch; CPU tensors count as the kernel's device
    for kernelforge.torch's direct path and Conv2d."""
    import operator
    _ConvStandIn.layouts = []
    _ConvStandIn.maths = []
    _ConvStandIn.gradients = []
    _ConvStandIn.gradient_tf32 = []
    monkeypatch.setattr(_torch_conv, "_C", _ConvStandIn)
    monkeypatch.setattr(_torch_relu, "_C", _ReluStandIn)
    monkeypatch.setattr(_torch_ops, "_on_device", operator.attrgetter("is_cpu"))
    monkeypatch.setattr(_torch_conv, "module_runs", lambda x: x.dtype in (torch.float32,) + _torch_conv.HALF_DTYPES
                        and (x.dtype == torch.float32 or x.is_contiguous(memory_format=CL)))
    return _ConvStandIn




def reference(x, weight, bias, relu=False, **geometry):
    """F.conv2d in float64, rounded once to x's dtype (the stand-in's arithmetic)."""
    y = F.conv2d(x.double(), weight.double(), None if bias is None else bias.double(), **geometry)
    return (torch.where(y <= 0, torch.zeros_like(y), y) if relu else y).to(x.dtype)


DTYPES = [torch.float32, torch.float16, torch.bfloat16]
