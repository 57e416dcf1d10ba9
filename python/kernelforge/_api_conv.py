# SPDX-License-Identifier: Apache-2.0
"""The kernelforge Python API for the convolution: conv2d, its two gradients and
conv2d_output_shape (the other entry points: _api.py, whose conventions hold here
too), and the argument helpers the torch layers share (_pair, conv_padding)."""

from . import _C
from ._api import _math_name
from ._arrays import empty, framework, plain, require_array, stream_handle


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
