# SPDX-License-Identifier: Apache-2.0
"""The matrix product operators, kernelforge::matmul and kernelforge::scaled_matmul (FP8)
(registered at import; kernelforge.torch imports this module and re-exports the
functions): their bodies, fake kernels and matmul's autograd formula."""

from typing import Optional

import torch

from . import _C
from . import _scaled_matmul as _scaled
from ._api import _math_name
from ._torch_ops import direct as _direct
from ._torch_ops import register as _register
from ._torch_support import current_stream as _stream
from ._torch_support import to_dlpack as _dl


# ---- matrix product ------------------------------------------------------------------

def _gemm_operand(t):
    """t itself when kernelforge reads it directly (row-major or a transposed view), else a copy."""
    rows, cols = t.shape
    s0, s1 = t.stride()
    if (cols <= 1 or s1 == 1) and (rows <= 1 or s0 >= cols):
        return t
    if (rows <= 1 or s0 == 1) and (cols <= 1 or s1 >= rows):
        return t
    return t.contiguous()


def _matmul_kernel(a, b, tf32=False, math=None):
    name = _math_name("matmul", tf32, math)
    a, b = _gemm_operand(a), _gemm_operand(b)
    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _C.matmul(_dl(a), _dl(b), _dl(out), 1.0, 0.0, name, "best", _stream(a))
    return out


def _matmul_fake(a, b, tf32=False, math=None):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "kernelforge::matmul takes 2-D tensors")
    torch._check(a.shape[1] == b.shape[0], lambda: f"kernelforge::matmul: {a.shape} @ {b.shape}")
    torch._check(a.dtype == b.dtype, lambda: f"kernelforge::matmul: a is {a.dtype} but b is {b.dtype}")
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_setup(ctx, inputs, output):
    a, b, tf32, math = inputs
    ctx.save_for_backward(a, b)
    ctx.math = _math_name("matmul", tf32, math)


def _matmul_backward(ctx, grad):
    # The gradients are products too, in the forward's math mode.
    a, b = ctx.saved_tensors
    grad_a = matmul(grad, b.t(), math=ctx.math) if ctx.needs_input_grad[0] else None  # (m,n) @ (n,k)
    grad_b = matmul(a.t(), grad, math=ctx.math) if ctx.needs_input_grad[1] else None  # (k,m) @ (m,n)
    return grad_a, grad_b, None, None


_matmul_op = _register("matmul", "(Tensor a, Tensor b, bool tf32=False, str? math=None) -> Tensor", _matmul_kernel,
                       _matmul_fake, _matmul_backward, _matmul_setup)


def matmul(a: torch.Tensor, b: torch.Tensor, tf32: bool = False, math: Optional[str] = None) -> torch.Tensor:
    """a (m, k) @ b (k, n), float32/float64/float16/bfloat16 (the result in a's dtype; the
    16-bit types accumulate in fp32). math (float32): "exact" (default), "tf32" (TF32
    tensor cores; tf32=True says the same) or "fp32_emulated" (fp32 accuracy on the TF32
    tensor cores, compute capability 8.0+). The gradients run in the same math mode."""
    if _direct(a, b):
        return _matmul_kernel(a, b, bool(tf32), math)
    return _matmul_op(a, b, tf32, math)


# ---- FP8 matrix product ----------------------------------------------------------------

# The body is kernelforge.scaled_matmul's (_scaled_matmul.run: checks, stride -> op
# mapping, the raw entry); the operator takes no out= and no alpha/beta (functional, like
# torch._scaled_mm) and mutates amax when given one. No autograd formula.

def _scaled_matmul_kernel(a, b, scale_a, scale_b, bias=None, out_dtype=None, scaling=None, relu=False,
                          relu_threshold=0.0, amax=None):
    return _scaled.run(a, b, scale_a, scale_b, out_dtype=out_dtype, scaling=scaling, bias=bias, relu=relu,
                       relu_threshold=relu_threshold, amax=amax)


_FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


def _scaled_matmul_fake(a, b, scale_a, scale_b, bias=None, out_dtype=None, scaling=None, relu=False,
                        relu_threshold=0.0, amax=None):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "kernelforge::scaled_matmul takes 2-D a and b")
    torch._check(a.shape[1] == b.shape[0], lambda: f"kernelforge::scaled_matmul: {a.shape} @ {b.shape}")
    torch._check(a.dtype in _FP8_DTYPES and b.dtype in _FP8_DTYPES,
                 lambda: f"kernelforge::scaled_matmul: a and b must be float8_e4m3fn or float8_e5m2; got "
                         f"{a.dtype} and {b.dtype}")
    dtype = torch.bfloat16 if out_dtype is None else out_dtype
    torch._check(dtype in (torch.bfloat16, torch.float16, torch.float32),
                 lambda: f"kernelforge::scaled_matmul: out_dtype {dtype} is not bfloat16, float16 or float32")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=dtype)


_scaled_matmul_op = _register(
    "scaled_matmul", "(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
    "ScalarType? out_dtype=None, str? scaling=None, bool relu=False, float relu_threshold=0.0, "
    "Tensor(a!)? amax=None) -> Tensor", _scaled_matmul_kernel, _scaled_matmul_fake)


def scaled_matmul(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
                  bias: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None,
                  scaling: Optional[str] = None, relu: bool = False, relu_threshold: float = 0.0,
                  amax: Optional[torch.Tensor] = None) -> torch.Tensor:
    """FP8 a (m, k) @ b (k, n) with dequantization scales, torch._scaled_mm's conventions:
    see kernelforge.scaled_matmul (this is it without out=, alpha, beta, variant, stream).
    out_dtype: bfloat16 (default), float16 or float32. amax, when given, is written in place."""
    if _direct(a, b, scale_a, scale_b, bias, amax):
        return _scaled_matmul_kernel(a, b, scale_a, scale_b, bias, out_dtype, scaling, bool(relu),
                                     float(relu_threshold), amax)
    return _scaled_matmul_op(a, b, scale_a, scale_b, bias, out_dtype, scaling, relu, relu_threshold, amax)
