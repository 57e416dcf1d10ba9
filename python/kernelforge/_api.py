# SPDX-License-Identifier: Apache-2.0
"""The kernelforge Python API: one function per C++ entry point.

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
    tensor-core products per pair: compute capability 9.0, variant "best"). float16 and bfloat16 multiply on tensor cores (compute
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


def _pair(name, value):
    if isinstance(value, int):
        return value, value
    pair = tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise TypeError(f"kernelforge.conv2d: {name} must be an int or a pair of ints; got {value!r}")
    return pair


def conv_padding(padding, stride, dilation, kernel_size):
    """(pad_h, pad_w) from an int, a pair, "valid" or "same" (torch.nn.Conv2d's spellings)."""
    if padding == "valid":
        return 0, 0
    if padding == "same":
        from ._errors import InvalidArgumentError
        if stride != (1, 1):
            raise InvalidArgumentError("kernelforge.conv2d: padding='same' needs stride 1")
        pads = []
        for d, k in zip(dilation, kernel_size):
            total = d * (k - 1)
            if total % 2:
                raise InvalidArgumentError("kernelforge.conv2d: padding='same' with an even effective filter "
                                           "size pads unevenly, which kernelforge does not support")
            pads.append(total // 2)
        return tuple(pads)
    return _pair("padding", padding)


_CONV_LAYOUTS = ("nchw", "nhwc")
_torch_conv_module = None


def _torch_conv():
    """kernelforge._torch_conv (the torch tensors' conv code), imported on the first torch
    tensor, then kept: an import statement in each call cost ~0.5 us of host time."""
    global _torch_conv_module
    if _torch_conv_module is None:
        from . import _torch_conv as module
        _torch_conv_module = module
    return _torch_conv_module


def _require_4d(what, a_name, a, b_name, b):
    if len(a.shape) != 4 or len(b.shape) != 4:
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"kernelforge.{what}: {a_name} and {b_name} must be 4-D; got shapes "
                                   f"{tuple(a.shape)} and {tuple(b.shape)}")


def _require_layout(layout, allowed, what="conv2d"):
    if layout not in allowed:
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"kernelforge.{what}: layout {layout!r} is not one of: {', '.join(allowed)}")


def conv2d_output_shape(x_shape, weight_shape, stride=1, padding=0, dilation=1, *, layout="nchw"):
    """The output shape of conv2d; InvalidArgumentError for impossible geometry (no GPU needed).

    layout names the order of the shapes: "nchw" (default; also torch tensors in any memory
    format): x (N, C, H, W), weight (K, C, R, S) -> (N, K, P, Q); "nhwc": x (N, H, W, C),
    weight (K, R, S, C) -> (N, P, Q, K), the shapes of channels_last arrays of frameworks
    without memory formats (CuPy).
    """
    _require_layout(layout, _CONV_LAYOUTS)
    stride, dilation = _pair("stride", stride), _pair("dilation", dilation)
    if layout == "nhwc":
        n, h, w, c = x_shape
        k, r, s, _ = weight_shape
    else:
        n, c, h, w = x_shape
        k, _, r, s = weight_shape
    pad = conv_padding(padding, stride, dilation, (r, s))
    p, q = _C.conv2d_output_shape(n, c, h, w, k, r, s, *stride, *pad, *dilation)
    return (n, p, q, k) if layout == "nhwc" else (n, k, p, q)


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, tf32=False, math=None, relu=False,
           relu_threshold=0.0, layout="auto", out=None, variant="best", stream=None):
    """out = act(conv2d(x, weight) + bias): cross-correlation like torch.nn.functional.conv2d
    (groups=1), float32 in NCHW or channels_last (NHWC) memory, float16 and bfloat16 in
    channels_last memory, with fp32 sums (the 16-bit types round once, at the end).

    torch tensors take torch's shapes whatever their memory format: x (N, C, H, W), weight
    (K, C, R, S), out (N, K, P, Q). layout="auto" (default) picks from x: "nhwc" for float16
    and bfloat16, and for float32 when torch reads x's strides as channels_last (as
    Tensor.suggest_memory_format() does; so does F.conv2d to pick its output's format: a
    dense channels_last x with C > 1 and H * W > 1 always is; where C == 1 or H == W == 1,
    .to(memory_format=torch.channels_last) makes one); else "nchw". Or name it: "nchw" or
    "nhwc". In "nhwc" x must be dense in channels_last memory
    (x.contiguous(memory_format=torch.channels_last)) and is read in place, never copied;
    a weight in the other memory format is copied into the layout's on each call (a filter
    is small: convert it once, e.g. module.to(memory_format=torch.channels_last)); the
    output is allocated channels_last (out= must be channels_last too). In "nchw" x,
    weight and out are contiguous, as before.

    Arrays of other frameworks (CuPy) have no memory format: their shapes are their memory
    order. layout="auto" is "nchw": x (N, C, H, W), weight (K, C, R, S), out (N, K, P, Q);
    layout="nhwc": x (N, H, W, C), weight (K, R, S, C), out (N, P, Q, K). All row-major.

    bias (K,): x's dtype. relu=True: then v <= relu_threshold ? 0 : v, fused into the store.
    math (float32), as kernelforge.matmul's: "exact" (fp32 sums, the default), "tf32" (TF32
    tensor cores, inputs rounded to TF32, ~1e-3 relative error; tf32=True is the same) or
    "fp32_emulated" (fp32 accuracy from three TF32 tensor-core products per pair: compute
    capability 9.0, variant "best", float32 only; layers with C < 32, a stride above 8 or
    C*R*S < 128 run the exact kernels). The 16-bit types multiply on tensor cores under
    "exact" and "tf32" alike. variant: a step of the progression (kf::conv2d_variant names;
    channels_last runs best, naive and implicit_gemm_wgmma).
    """
    require_array("x", x)
    require_array("weight", weight)
    if bias is not None:
        require_array("bias", bias)
    fw = framework(x)
    _require_4d("conv2d", "x", x, "weight", weight)
    _require_layout(layout, ("auto",) + _CONV_LAYOUTS)
    math = _math_name("conv2d", tf32, math)
    stride, dilation = _pair("stride", stride), _pair("dilation", dilation)
    handle = stream_handle(stream, x, fw)
    if fw == "torch":
        return _torch_conv().run(x, weight, bias, stride, padding, dilation, layout, math, relu, relu_threshold, out,
                                 variant, handle, stream is not None)
    if layout == "auto":
        layout = "nchw"
    kernel_size = tuple(weight.shape[1:3]) if layout == "nhwc" else tuple(weight.shape[2:])
    pad = conv_padding(padding, stride, dilation, kernel_size)
    if out is None:
        out = empty(x, fw, conv2d_output_shape(tuple(x.shape), tuple(weight.shape), stride, pad, dilation,
                                               layout=layout))
    _C.conv2d(plain(x, fw), plain(weight, fw), None if bias is None else plain(bias, fw), plain(out, fw),
              *stride, *pad, *dilation, layout, math, bool(relu), float(relu_threshold), variant, handle)
    return out


def _conv_geometry(stride, padding, dilation, kernel_size):
    stride, dilation = _pair("stride", stride), _pair("dilation", dilation)
    return stride, conv_padding(padding, stride, dilation, kernel_size), dilation


def _require_relu_y(what, relu, relu_y):
    """relu_y (the forward's output, the ReLU mask's source) is given exactly when relu is set."""
    if relu_y is not None:
        require_array("relu_y", relu_y)
    if bool(relu) != (relu_y is not None):
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"kernelforge.{what}: relu=True needs relu_y (the forward's output) and relu_y "
                                   f"needs relu=True; got relu={relu!r} and relu_y "
                                   f"{'None' if relu_y is None else 'given'}")


def _shape_for(what, name, shape, out, out_name):
    """The output's shape: `shape`, or out's where shape is None; the two must agree."""
    if shape is None:
        if out is None:
            from ._errors import InvalidArgumentError
            raise InvalidArgumentError(f"kernelforge.{what}: pass {name} (the shape of the gradient) or {out_name}=")
        return tuple(out.shape)
    shape = tuple(map(int, shape))
    if len(shape) != 4:
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"kernelforge.{what}: {name} must have 4 extents; got {shape}")
    if out is not None and tuple(out.shape) != shape:
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(f"kernelforge.{what}: {out_name} has shape {tuple(out.shape)} but {name} is "
                                   f"{shape}")
    return shape


def conv2d_backward_data(dy, weight, x_shape=None, *, stride=1, padding=0, dilation=1, tf32=False, relu=False,
                         relu_threshold=0.0, relu_y=None, layout="auto", out=None, variant="best", stream=None):
    """dx = dL/dx of conv2d (kf::conv2d_backward_data), from dy = dL/dy and the forward's weight.

    Same geometry arguments as kernelforge.conv2d's forward (stride, padding, dilation;
    padding "valid" / "same" too). x_shape is the forward input's shape, which stride > 1
    does not determine from dy: (N, C, H, W) for torch tensors, the memory order for other
    frameworks ((N, H, W, C) with layout="nhwc"); it may be left out when out= is given.

    Layouts as kernelforge.conv2d's, with dy in x's role: layout="auto" picks "nhwc" for
    float16 and bfloat16 and for float32 dy that torch reads as channels_last, else "nchw"
    (CuPy: "nchw"). dy (and relu_y) must be dense in the layout's memory order and are
    never copied; a torch weight in the other memory format is copied (as in the forward);
    dx is allocated in the layout's memory format (channels_last for "nhwc").

    relu=True: the forward fused the threshold ReLU (kernelforge.conv2d(relu=True,
    relu_threshold=t)); pass its output as relu_y and the same t (>= 0): dy is read as 0
    where relu_y <= t. tf32=True allows TF32 tensor cores for float32. variant: "best",
    "naive", "implicit_gemm" or "implicit_gemm_wgmma" (kf::conv2d_backward_variant; the last
    differs from implicit_gemm in dweight only). Returns dx.
    """
    require_array("dy", dy)
    require_array("weight", weight)
    fw = framework(dy)
    _require_4d("conv2d_backward_data", "dy", dy, "weight", weight)
    _require_layout(layout, ("auto",) + _CONV_LAYOUTS, "conv2d_backward_data")
    _require_relu_y("conv2d_backward_data", relu, relu_y)
    handle = stream_handle(stream, dy, fw)
    x_shape = _shape_for("conv2d_backward_data", "x_shape", x_shape, out, "out")
    if fw == "torch":
        return _torch_conv().run_backward_data(dy, weight, x_shape, stride, padding, dilation, layout, tf32, relu,
                                               relu_threshold, relu_y, out, variant, handle, stream is not None)
    if layout == "auto":
        layout = "nchw"
    kernel_size = tuple(weight.shape[1:3]) if layout == "nhwc" else tuple(weight.shape[2:])
    stride, pad, dilation = _conv_geometry(stride, padding, dilation, kernel_size)
    if out is None:
        out = empty(dy, fw, x_shape)
    _C.conv2d_backward_data(plain(dy, fw), plain(weight, fw), None if relu_y is None else plain(relu_y, fw),
                            plain(out, fw), *stride, *pad, *dilation, layout, bool(tf32), bool(relu),
                            float(relu_threshold), variant, handle)
    return out


def conv2d_backward_filter(x, dy, weight_shape=None, *, stride=1, padding=0, dilation=1, bias=False, tf32=False,
                           relu=False, relu_threshold=0.0, relu_y=None, layout="auto", out=None, out_bias=None,
                           variant="best", stream=None):
    """(dweight, dbias) = (dL/dw, dL/dbias) of conv2d (kf::conv2d_backward_filter), from the
    forward's input x and dy = dL/dy.

    Same geometry arguments as kernelforge.conv2d's forward. weight_shape is the forward
    weight's shape (it gives R and S): (K, C, R, S) for torch tensors, the memory order for
    other frameworks ((K, R, S, C) with layout="nhwc"); it may be left out when out= is
    given. bias=True (or out_bias=, a (K,) array) also computes dbias = the sum of dy over
    N, P and Q; dbias is None otherwise.

    Layouts as kernelforge.conv2d's: layout="auto" picks from x; x, dy (and relu_y) must be
    dense in the layout's memory order and are never copied; dweight is allocated in the
    layout's memory format (channels_last for "nhwc"). relu, relu_threshold, relu_y, tf32
    and variant as in conv2d_backward_data. Returns (dweight, dbias).
    """
    require_array("x", x)
    require_array("dy", dy)
    fw = framework(x)
    _require_4d("conv2d_backward_filter", "x", x, "dy", dy)
    _require_layout(layout, ("auto",) + _CONV_LAYOUTS, "conv2d_backward_filter")
    if out_bias is not None:
        require_array("out_bias", out_bias)
    _require_relu_y("conv2d_backward_filter", relu, relu_y)
    handle = stream_handle(stream, x, fw)
    weight_shape = _shape_for("conv2d_backward_filter", "weight_shape", weight_shape, out, "out")
    bias = bool(bias) or out_bias is not None
    if fw == "torch":
        return _torch_conv().run_backward_filter(x, dy, weight_shape, stride, padding, dilation, bias, layout, tf32,
                                                 relu, relu_threshold, relu_y, out, out_bias, variant, handle,
                                                 stream is not None)
    if layout == "auto":
        layout = "nchw"
    kernel_size = weight_shape[1:3] if layout == "nhwc" else weight_shape[2:]
    stride, pad, dilation = _conv_geometry(stride, padding, dilation, kernel_size)
    if out is None:
        out = empty(x, fw, weight_shape)
    if bias and out_bias is None:
        out_bias = empty(x, fw, (weight_shape[0],))
    _C.conv2d_backward_filter(plain(x, fw), plain(dy, fw), None if relu_y is None else plain(relu_y, fw),
                              plain(out, fw), None if out_bias is None else plain(out_bias, fw), *stride, *pad,
                              *dilation, layout, bool(tf32), bool(relu), float(relu_threshold), variant, handle)
    return out, out_bias
