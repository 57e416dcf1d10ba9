# SPDX-License-Identifier: Apache-2.0
"""What the conv2d GPU tests against PyTorch share (test_torch_conv.py: the forward,
test_torch_conv_grad.py: the gradients): random inputs in a memory format (rand, which
test_torch_library.py uses too), the float64 reference and its error bound, and the
dtype / layout modes. Imported after the tests have skipped without torch or a GPU."""

import math

import torch
import torch.nn.functional as F

DEV = "cuda"
CL = torch.channels_last


def rand(*shape, dtype=torch.float32, memory_format=torch.contiguous_format, requires_grad=False):
    # .to(memory_format=): channels_last strides also where C == 1 or H == W == 1 (.contiguous() keeps NCHW's there).
    t = torch.randn(*shape, device=DEV).to(dtype).to(memory_format=memory_format)
    return t.requires_grad_() if requires_grad else t


# ---- the error bound -----------------------------------------------------------------------
#
# For one output, with L = C*R*S products and scale = conv2d(|x|, |w|) + |bias| in float64:
#  - products: exact in fp32 for float16 and bfloat16 inputs and for exact float32; TF32
#    reads each float32 input with a relative error below 2^-10 (10 of 23 mantissa bits
#    kept), so a product errs by less than 2^-9 (+ 2^-20) of its magnitude, all possibly
#    of one sign: 1.001 * 2^-9 * scale;
#  - fp32 sums: random-sign roundings grow like sqrt(L): (4 sqrt(L) + 8) 2^-23 * scale, the
#    bound of the 16-bit matmul tests (test_torch.py). Where `best` may run Winograd
#    F(2x2,3x3) (float32 NCHW, exact math, 3x3 stride 1, C and K >= 64) the terms summed
#    are the transformed ones, about 7x the direct terms' magnitude for random data
#    (tests/conv2d/winograd_bound.hpp states its exact bound): the sum term is taken 8x;
#  - one rounding to the output type, u = 2^-11 (float16), 2^-8 (bfloat16), 2^-24 (float32),
#    doubled for margin: 2 u |value|.
# ReLU is 1-Lipschitz, so the bound holds after it.
UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def conv_reference(x, weight, bias, relu, geometry):
    """(value, scale) in float64 (value with the ReLU applied when relu)."""
    b = None if bias is None else bias.double()
    value = F.conv2d(x.double(), weight.double(), b, **geometry)
    scale = F.conv2d(x.double().abs(), weight.double().abs(), None if b is None else b.abs(), **geometry)
    return (F.relu(value) if relu else value), scale


def error_bound(x, weight, value, scale, tf32, winograd=False):
    c, r, s = weight.shape[1:]
    length = c * r * s
    summation = (4 * math.sqrt(length) + 8) * 2.0**-23 * (8 if winograd else 1)
    products = 1.001 * 2.0**-9 if tf32 and x.dtype == torch.float32 else 0.0
    return (summation + products) * scale + 2 * UNIT_ROUNDOFF[x.dtype] * value.abs()


def assert_within(name, got, want, bound):
    err = (got.double() - want).abs()
    ok = err <= bound
    assert bool(ok.all()), (f"{name}: {int((~ok).sum())} of {ok.numel()} outside the bound; max error / bound "
                            f"{float((err / bound).nan_to_num(float('inf')).max()):.3g}")


MODES = [  # (dtype, memory format, tf32)
    (torch.float32, torch.contiguous_format, False),
    (torch.float32, torch.contiguous_format, True),
    (torch.float32, CL, False),
    (torch.float32, CL, True),
    (torch.float16, CL, False),
    (torch.bfloat16, CL, False),
]
MODE_IDS = ["f32-nchw", "tf32-nchw", "f32-cl", "tf32-cl", "f16-cl", "bf16-cl"]
