# SPDX-License-Identifier: Apache-2.0
"""The kernelforge Python API: one function per C++ entry point (the convolution's
in _api_conv.py).

Each function takes CUDA arrays from any DLPack framework, allocates missing outputs
with the input's framework on the input's device, resolves the stream (default: the
framework's current stream) and calls the C++ module, which checks the arguments,
makes the arrays' device current, releases the GIL and enqueues the work. Nothing
here synchronizes the host.
"""

from . import _C
from ._arrays import empty, empty_like, framework, plain, require_array, stream_handle


def saxpy(a, x, y, *, variant="best", stream=None):
    """y = a*x + y, in place; returns y. float32, float64, float16, bfloat16."""
    require_array("x", x)
    require_array("y", y)
    fw = framework(x)
    _C.saxpy(float(a), plain(x, fw), plain(y, fw), variant, stream_handle(stream, x, fw))
    return y


def vector_add(a, b, out=None, *, variant="best", stream=None):
    """out = a + b (same shape and dtype); returns out."""
    require_array("a", a)
    require_array("b", b)
    fw = framework(a)
    if out is None:
        out = empty_like(a, fw)
    _C.vector_add(plain(a, fw), plain(b, fw), plain(out, fw), variant, stream_handle(stream, a, fw))
    return out


def relu_threshold(x, threshold=0.0, out=None, *, variant="best", stream=None):
    """out = x if x > threshold else 0 (torch.nn.Threshold(threshold, 0)); out may be x."""
    require_array("x", x)
    fw = framework(x)
    if out is None:
        out = empty_like(x, fw)
    _C.relu_threshold(plain(x, fw), plain(out, fw), float(threshold), variant, stream_handle(stream, x, fw))
    return out


def relu_threshold_backward(grad, x, threshold=0.0, out=None, *, variant="best", stream=None):
    """out = grad if x > threshold else 0: the gradient of relu_threshold; out may be grad."""
    require_array("grad", grad)
    require_array("x", x)
    fw = framework(x)
    if out is None:
        out = empty_like(x, fw)
    _C.relu_threshold_backward(plain(grad, fw), plain(x, fw), plain(out, fw), float(threshold), variant,
                               stream_handle(stream, x, fw))
    return out


def _math_name(what, tf32, math):
    """The math mode's name for _C: math as given, else "tf32" or "exact" from the tf32 flag;
    tf32=True with another math is an InvalidArgumentError. The name itself is checked by _C."""
    if math is None:
        return "tf32" if tf32 else "exact"
    if tf32 and math != "tf32":
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"kernelforge.{what}: tf32=True contradicts math={math!r}; pass one of them")
    return str(math)


def matmul(a, b, out=None, *, alpha=1.0, beta=0.0, tf32=False, math=None, variant="best", stream=None):
    """out (m, n) = alpha * a (m, k) @ b (k, n) + beta * out. float32, float64, float16, bfloat16.

    a, b and out share one dtype. a and b may be row-major or transposed views (a.T of a
    row-major array): no copy. beta != 0 reads out, so it needs out=. math (float32):
    "exact" (CUDA-core fp32, the default), "tf32" (TF32 tensor cores, ~1e-3 relative
    error; tf32=True is the same) or "fp32_emulated" (fp32 accuracy from three TF32
    tensor-core products per pair: compute capability 8.0+, variant "best"). float16 and bfloat16 multiply on tensor cores (compute
    capability 8.0+; variant "naive" runs anywhere) with fp32 accumulation, and
    alpha * acc + beta * out is computed in fp32 and rounded once; variants for them:
    best, naive, tensor_core_f16, wgmma_f16. bfloat16 needs a framework that exports it
    through DLPack (torch, JAX); CuPy has no bfloat16 dtype (float16 works).
    """
    require_array("a", a)
    require_array("b", b)
    math = _math_name("matmul", tf32, math)
    fw = framework(a)
    if out is None:
        if beta != 0:
            from ._errors import InvalidArgumentError
            raise InvalidArgumentError(f"kernelforge.matmul: beta = {beta} reads out, but out is None; pass out=")
        if len(a.shape) != 2 or len(b.shape) != 2:
            from ._errors import InvalidArgumentError
            raise InvalidArgumentError(f"kernelforge.matmul: a and b must be 2-D; got shapes "
                                       f"{tuple(a.shape)} and {tuple(b.shape)}")
        out = empty(a, fw, (a.shape[0], b.shape[1]))
    _C.matmul(plain(a, fw), plain(b, fw), plain(out, fw), float(alpha), float(beta), math, variant,
              stream_handle(stream, a, fw))
    return out


def scaled_matmul(a, b, scale_a, scale_b, *, out_dtype=None, scaling=None, bias=None, relu=False,
                  relu_threshold=0.0, amax=None, out=None, alpha=1.0, beta=0.0, variant="best", stream=None):
    """The FP8 product with dequantization scales (kf::scaled_matmul), torch tensors only:

        out (m, n) = act(alpha * sum_p sa(i, p) a(i, p) * sb(p, j) b(p, j) + beta * out + bias[j])

    a (m, k) and b (k, n): torch.float8_e4m3fn or torch.float8_e5m2 (e4m3fn x e4m3fn,
    e4m3fn x e5m2, e5m2 x e4m3fn; e5m2 x e5m2 is refused, as by torch._scaled_mm). Each may
    be row-major or column-major: b is typically the .t() of a row-major (n, k) weight,
    as torch._scaled_mm takes it; both layouts are read in place through kf's transpose
    flags and leading dimensions, other strides are an InvalidArgumentError naming the
    operand. Products are exact in fp32 and accumulated in fp32, promoted every 128 of k.

    scale_a, scale_b: float32 tensors on a's device, shaped as torch._scaled_mm takes them
    (scaling=None infers the mode from the shapes; or name it):
      "per_tensor": one element each (shape (), (1,) or (1, 1));
      "rowwise":    scale_a (m, 1), scale_b (1, n);
      "blockwise":  scale_a (m, ceil(k/128)) (1 x 128 blocks of a, DeepSeek-V3's activation
                    scales), scale_b (ceil(k/128), ceil(n/128)) (128 x 128 blocks of b; for
                    a weight_scale_inv of shape (ceil(n/128), ceil(k/128)) pass its .t()).
    Scales are taken by index whatever their strides (a small copy where kf cannot read
    them in place: see _scaled_matmul.scale_read_in_place).

    out_dtype: torch.bfloat16 (default, or out's dtype when out is given), torch.float16
    or torch.float32. bias: (n,) of the output's dtype, added per column. relu: then
    v <= relu_threshold ? 0 : v. amax: a 1-element float32 tensor that receives max |out|
    over the values stored (NaN if any is NaN), for the next FP8 scale. out: a row-major
    (m, n) tensor to write (beta != 0 reads it). alpha, beta: as kernelforge.matmul's.
    variant: "best" or "naive". Returns out.

    Unlike torch._scaled_mm: no FP8 output, no scale_result or use_fast_accum, no
    alignment demands on m, n, k or the leading dimensions. Needs compute capability 8.9+
    (UnsupportedError below). FP8 comes from PyTorch only: CuPy has no float8 dtype, and
    torch exports float8 through DLPack only in recent versions, so kernelforge passes
    the tensors' data pointers. The torch operator is torch.ops.kernelforge.scaled_matmul
    (kernelforge.torch.scaled_matmul: torch.compile, FakeTensor; no autograd formula).
    """
    require_array("a", a)
    require_array("b", b)
    fw = framework(a)
    if fw != "torch":
        raise TypeError(f"kernelforge.scaled_matmul: FP8 operands come from PyTorch only (CuPy and NumPy have no "
                        f"float8 dtype); 'a' is a {type(a).__module__}.{type(a).__name__}")
    from . import _scaled_matmul
    return _scaled_matmul.run(a, b, scale_a, scale_b, out_dtype=out_dtype, scaling=scaling, bias=bias, relu=relu,
                              relu_threshold=relu_threshold, amax=amax, out=out, alpha=alpha, beta=beta,
                              variant=variant, stream=None if stream is None else stream_handle(stream, a, fw))


def filter2d(image, filter, out=None, *, border="zero", variant="best", stream=None):
    """out = image cross-correlated with filter (R, S); image (H, W) or (C, H, W).

    border: "zero", "clamp" or "reflect". float32, float16.
    """
    require_array("image", image)
    require_array("filter", filter)
    fw = framework(image)
    if out is None:
        out = empty_like(image, fw)
    _C.filter2d(plain(image, fw), plain(filter, fw), plain(out, fw), border, variant,
                stream_handle(stream, image, fw))
    return out
