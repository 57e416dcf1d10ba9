# SPDX-License-Identifier: Apache-2.0
"""The float64 reference of kernelforge.scaled_matmul on torch tensors, and the error
bound the results are held to (the bound of tests/matmul/scaled_matmul_case.hpp):

    |got - ref| <= (4 sqrt(k) + 8) 2^-23 * scale + 2 u_D |ref|

where scale is the magnitude of the sum (sum of |terms|, |beta out|, |bias|): every
product of two FP8 values is exact in fp32, so the error is the fp32 summation
(random-sign roundings grow like sqrt(k)), a few roundings for the scales, alpha, beta
and the bias (8 x 2^-23), and the one rounding of the result to the output dtype
(u_D = 2^-8 bfloat16, 2^-11 float16, 2^-24 float32), doubled for margin. With relu, a
value within the fp32 bound of the threshold may land on either side: it is not held
to the bound. Used by the GPU tests and by test_torch_cpu.py's CPU stand-in."""

import math

import torch

from kernelforge import _scaled_matmul as sm

UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}

# opcheck's test_schema compares inputs with torch.allclose, which float8 tensors do not
# implement; the one mutation it would check (amax) is checked by bytes instead.
FP8_OPCHECK = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def check_mutates_amax_only(op, args, amax_index=9):
    """Calls op(*args) and asserts it wrote amax (args[amax_index]) and no other input."""
    before = [t.clone() if isinstance(t, torch.Tensor) else t for t in args]
    op(*args)
    for i, (old, new) in enumerate(zip(before, args)):
        if isinstance(old, torch.Tensor) and i != amax_index:
            assert torch.equal(old.reshape(-1).view(torch.uint8), new.reshape(-1).view(torch.uint8)), f"argument {i}"
    assert not torch.equal(before[amax_index], args[amax_index]), "amax was not written"


def element_scales(mode, scale_a, scale_b, m, n, k):
    """The scale of every element of a (m, k) and of b (k, n), float64."""
    sa, sb = scale_a.double(), scale_b.double()
    if mode == "per_tensor":
        return sa.reshape(()).expand(m, k), sb.reshape(()).expand(k, n)
    if mode == "rowwise":
        return sa.reshape(m, 1).expand(m, k), sb.reshape(1, n).expand(k, n)
    block = sm.BLOCK
    return (sa.repeat_interleave(block, dim=1)[:, :k],
            sb.repeat_interleave(block, dim=0)[:k].repeat_interleave(block, dim=1)[:, :n])


class Reference:
    """value: the float64 result (before rounding to the output dtype); scale: the
    magnitude its summation error is relative to; near: where relu's decision may go
    either way; k: the product's depth."""

    def __init__(self, value, scale, near, k):
        self.value, self.scale, self.near, self.k = value, scale, near, k

    def fp32_bound(self):
        # The fp32 summation, plus the tensor cores' partial sums over each 128 of k
        # (Hopper's wgmma step, what "best" runs there: about 14 bits before the
        # promotion into fp32), as the C++ tests bound them (scaled_matmul_case.hpp).
        return ((4.0 * math.sqrt(max(self.k, 1)) + 8.0) * 2.0**-23 + 2.0**-11) * self.scale

    def bound(self, dtype):
        return self.fp32_bound() + 2.0 * UNIT_ROUNDOFF[dtype] * self.value.abs()

    def check(self, got):
        """AssertionError naming the worst element unless got is within the bound."""
        assert got.shape == self.value.shape, f"shape {tuple(got.shape)}, expected {tuple(self.value.shape)}"
        if got.numel() == 0:
            return
        v = self.value.to(got.device)
        err = (got.double() - v).abs()
        bound = self.bound(got.dtype).to(got.device)
        bad = (err > bound) & ~self.near.to(got.device)
        if bool(bad.any()):
            i = int(torch.argmax(torch.where(bad, err / bound, torch.zeros_like(err))))
            r, c = divmod(i, got.shape[1])
            raise AssertionError(f"{int(bad.sum())} of {bad.numel()} elements outside the bound; worst at ({r}, {c}): "
                                 f"got {float(got[r, c])}, reference {float(v[r, c])}, bound {float(bound[r, c])}")


def reference(a, b, scale_a, scale_b, *, scaling=None, bias=None, relu=False, relu_threshold=0.0, alpha=1.0,
              beta=0.0, out=None):
    """kernelforge.scaled_matmul's result in float64 (a Reference)."""
    m, k = a.shape
    n = b.shape[1]
    mode = sm.infer_scaling(scaling, m, n, k, scale_a.shape, scale_b.shape)
    ea, eb = element_scales(mode, scale_a, scale_b, m, n, k)
    da, db = a.double() * ea, b.double() * eb
    value = alpha * (da @ db)
    scale = abs(alpha) * (da.abs() @ db.abs())
    if beta != 0:
        c = out.double()
        value = value + beta * c
        scale = scale + abs(beta) * c.abs()
    if bias is not None:
        value = value + bias.double()
        scale = scale + bias.double().abs()
    near = torch.zeros_like(value, dtype=torch.bool)
    if relu:
        ref = Reference(value, scale, near, k)
        near = (value - relu_threshold).abs() <= ref.fp32_bound()
        value = torch.where(value <= relu_threshold, torch.zeros_like(value), value)
    return Reference(value, scale, near, k)


def random_fp8(rows, cols, dtype, layout="row", device="cuda"):
    """A rows x cols FP8 tensor of values with magnitudes in [0.25, 8] and random signs
    (exact in both FP8 formats after the cast); layout "row" (row-major) or "col" (the
    .t() of a row-major (cols, rows) tensor)."""
    shape = (rows, cols) if layout == "row" else (cols, rows)
    magnitude = torch.empty(shape, device=device).uniform_(0.25, 8.0)
    sign = torch.randint(0, 2, shape, device=device).float() * 2 - 1
    t = (magnitude * sign).to(dtype)
    return t if layout == "row" else t.t()


def random_scales(mode, m, n, k, device="cuda"):
    """(scale_a, scale_b) in [1/16, 4] in the shapes torch._scaled_mm takes for `mode`
    (per_tensor: 0-D); row-major."""
    shape_a, shape_b = sm.scale_shapes(mode, m, n, k)
    shape_a, shape_b = shape_a or (), shape_b or ()
    return (torch.empty(shape_a, device=device).uniform_(1 / 16, 4.0),
            torch.empty(shape_b, device=device).uniform_(1 / 16, 4.0))
