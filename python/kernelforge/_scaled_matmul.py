# SPDX-License-Identifier: Apache-2.0
"""kernelforge.scaled_matmul: the FP8 matrix product (kf::scaled_matmul) from PyTorch.

FP8 reaches kernelforge from torch only: CuPy and NumPy have no float8 dtype, and
torch exports float8 tensors through DLPack only in recent versions (older ones raise
"float8 types are not supported by dlpack"). So the tensors are checked here and _C's
raw entry (scaled_matmul_raw) gets their data pointers, op flags and leading
dimensions; kf::scaled_matmul then checks the pointers (alignment, overlaps) itself.

The first half of this file is plain Python on shapes, strides and dtype names (no
torch: python/tests/test_cpu.py tests it on any machine); the second half, run(),
applies it to torch tensors (torch is imported by then: the caller's tensors are
torch's).
"""

import sys

from . import _C
from ._errors import InvalidArgumentError

WHAT = "kernelforge.scaled_matmul"
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
# kf::is_fp8_operand_pair_v: e5m2 x e5m2 is left out, as torch._scaled_mm and cuBLASLt leave it out.
OPERAND_PAIRS = (("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "float8_e5m2"),
                 ("float8_e5m2", "float8_e4m3fn"))
OUT_DTYPES = ("bfloat16", "float16", "float32")
SCALINGS = ("per_tensor", "rowwise", "blockwise")
BLOCK = 128  # the k extent of a scale block (1 x 128 of a, 128 x 128 of b)


# ---- shapes, strides and dtype names (no torch) ------------------------------------------

def dtype_name(dtype):
    """'float8_e4m3fn' for torch.float8_e4m3fn (or the string 'torch.float8_e4m3fn')."""
    return (dtype if isinstance(dtype, str) else str(dtype)).rpartition(".")[2]


def ceil_div(a, b):
    return -(-a // b)


def gemm_layout(name, shape, strides, what=WHAT):
    """(transposed, ld): how kf reads a rows x cols operand with these element strides.

    Row-major, strides (ld, 1) with ld >= cols: (False, ld), read as stored.
    Column-major, strides (1, ld) with ld >= rows (the .t() of a row-major tensor, as
    torch._scaled_mm takes b): (True, ld), read through kf::op::transpose.
    Dimensions of size <= 1 may have any stride (the rule of _C's DLPack matmul).
    Anything else is an InvalidArgumentError naming the operand.
    """
    rows, cols = (int(v) for v in shape)
    s0, s1 = (int(v) for v in strides)
    if (cols <= 1 or s1 == 1) and (rows <= 1 or s0 >= cols):
        return False, max(cols if rows <= 1 else s0, cols, 1)
    if (rows <= 1 or s0 == 1) and (cols <= 1 or s1 >= rows):
        return True, max(rows if cols <= 1 else s1, rows, 1)
    raise InvalidArgumentError(
        f"{what}: '{name}' of shape ({rows}, {cols}) has strides ({s0}, {s1}): neither row-major (strides "
        f"(ld, 1), ld >= {cols}) nor column-major (strides (1, ld), ld >= {rows}: the .t() of a row-major "
        f"tensor); call .contiguous() on it first")


def check_operand_dtypes(a_dtype, b_dtype, what=WHAT):
    """TypeError unless (a_dtype, b_dtype), dtype names, is a shipped FP8 pair."""
    for name, d in (("a", a_dtype), ("b", b_dtype)):
        if d not in FP8_DTYPES:
            raise TypeError(f"{what}: '{name}' has dtype {d}; supported dtypes: float8_e4m3fn, float8_e5m2")
    if (a_dtype, b_dtype) not in OPERAND_PAIRS:
        raise TypeError(f"{what}: 'a' and 'b' are both float8_e5m2, which is not supported (nor is it by "
                        f"torch._scaled_mm); the pairs are float8_e4m3fn x float8_e4m3fn, float8_e4m3fn x "
                        f"float8_e5m2 and float8_e5m2 x float8_e4m3fn")


def resolve_out_dtype(out_dtype, out_has=None, what=WHAT):
    """The output's dtype name: out_dtype (a torch.dtype or its name), else out's dtype
    name `out_has` when out is given, else 'bfloat16'. TypeError for any other dtype,
    or when out_dtype and out's dtype differ."""
    if out_dtype is None:
        name = "bfloat16" if out_has is None else out_has
        source = "out_dtype" if out_has is None else "'out'"
    else:
        name, source = dtype_name(out_dtype), "out_dtype"
    if name not in OUT_DTYPES:
        raise TypeError(f"{what}: {source} has dtype {name}; supported dtypes: bfloat16, float16, float32")
    if out_has is not None and out_has != name:
        raise TypeError(f"{what}: 'out' has dtype {out_has} but out_dtype is {name}")
    return name


def scale_shapes(mode, m, n, k):
    """(scale_a's shape, scale_b's shape) for a rowwise or blockwise mode, as
    torch._scaled_mm takes them: rowwise (m, 1) and (1, n); blockwise (m, ceil(k/128))
    (1 x 128 blocks of a) and (ceil(k/128), ceil(n/128)) (128 x 128 blocks of b, in b's
    (k, n) orientation). per_tensor: (None, None): any shape of one element."""
    if mode == "rowwise":
        return (m, 1), (1, n)
    if mode == "blockwise":
        kb = ceil_div(k, BLOCK)
        return (m, kb), (kb, ceil_div(n, BLOCK))
    return None, None


def _numel(shape):
    count = 1
    for v in shape:
        count *= int(v)
    return count


def _expected(mode, m, n, k):
    if mode == "per_tensor":
        return "scale_a and scale_b of one element each (shape (), (1,) or (1, 1))"
    (am, ak), (bk, bn) = scale_shapes(mode, m, n, k)
    if mode == "rowwise":
        return f"scale_a ({am}, {ak}) and scale_b ({bk}, {bn})"
    return (f"scale_a ({am}, {ak}) and scale_b ({bk}, {bn}): ceil(k / 128) blocks along k, 1 x 128 blocks of a "
            f"and 128 x 128 blocks of b in b's (k, n) orientation (a weight_scale_inv ({bn}, {bk}): pass its .t())")


def infer_scaling(scaling, m, n, k, shape_a, shape_b, what=WHAT):
    """The scaling mode of a (m, k) @ b (k, n) with scales of these shapes.

    scaling None: inferred from the shapes as torch._scaled_mm does: one element each ->
    per_tensor; (m, 1) and (1, n) -> rowwise; (m, ceil(k/128)) and (ceil(k/128),
    ceil(n/128)) -> blockwise. Where two modes fit (m = n = 1, or k <= 128 and n = 1)
    they compute the same product. A named mode must fit its shapes.
    """
    shape_a = tuple(int(v) for v in shape_a)
    shape_b = tuple(int(v) for v in shape_b)

    def fits(mode):
        if mode == "per_tensor":
            return _numel(shape_a) == 1 and _numel(shape_b) == 1
        want_a, want_b = scale_shapes(mode, m, n, k)
        return shape_a == want_a and shape_b == want_b

    if scaling is None:
        for mode in SCALINGS:
            if fits(mode):
                return mode
        wants = "; ".join(f"{mode}: {_expected(mode, m, n, k)}" for mode in SCALINGS)
        raise InvalidArgumentError(f"{what}: scale_a of shape {shape_a} and scale_b of shape {shape_b} fit no "
                                   f"scaling mode for a ({m}, {k}) @ b ({k}, {n}); {wants}")
    if scaling not in SCALINGS:
        raise InvalidArgumentError(f"{what}: scaling '{scaling}' is not one of: per_tensor, rowwise, blockwise")
    if not fits(scaling):
        raise InvalidArgumentError(f"{what}: scaling '{scaling}' needs {_expected(scaling, m, n, k)}; got scale_a "
                                   f"{shape_a} and scale_b {shape_b}")
    return scaling


def scale_read_in_place(mode, which, shape, strides):
    """True when kf::fp8_scales can read scale `which` ('a' or 'b') where it lies:
    per_tensor at its one element; rowwise as a dense vector; blockwise scale_a
    row-major (m, kb); blockwise scale_b (kb, nb) as the .t() of a row-major (nb, kb)
    tensor (how DeepSeek-V3 stores weight_scale_inv, and how torch._scaled_mm takes it).
    Dimensions of size <= 1 may have any stride. Otherwise run() copies the scale
    (a few floats per 128 x 128 block) into that layout."""
    if mode == "per_tensor":
        return True
    rows, cols = (int(v) for v in shape)
    want = (1, rows) if (mode == "blockwise" and which == "b") else (cols, 1)
    return all(size <= 1 or int(stride) == w for size, stride, w in zip((rows, cols), strides, want))


# ---- the call on torch tensors -----------------------------------------------------------

def _invalid(message):
    raise InvalidArgumentError(f"{WHAT}: {message}")


def run(a, b, scale_a, scale_b, *, out_dtype=None, scaling=None, bias=None, relu=False, relu_threshold=0.0,
        amax=None, out=None, alpha=1.0, beta=0.0, variant="best", stream=None):
    """kernelforge.scaled_matmul's body (its docstring says what it computes); stream:
    an int handle, or None for torch's current stream on a's device. Every check runs
    before anything is allocated or enqueued."""
    torch = sys.modules["torch"]
    tensors = (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias), ("amax", amax),
               ("out", out))
    for name, t in tensors:
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"{WHAT}: '{name}' must be a torch.Tensor (FP8 comes from PyTorch only); got "
                            f"{type(t).__name__}")
    a_dtype, b_dtype = dtype_name(a.dtype), dtype_name(b.dtype)
    check_operand_dtypes(a_dtype, b_dtype)
    if a.dim() != 2 or b.dim() != 2:
        _invalid(f"a and b must be 2-D; got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    m, k = (int(v) for v in a.shape)
    k_b, n = (int(v) for v in b.shape)
    if k_b != k:
        _invalid(f"shapes do not compose: a {tuple(a.shape)} @ b {tuple(b.shape)}; need a (m, k), b (k, n)")
    trans_a, lda = gemm_layout("a", a.shape, a.stride())
    trans_b, ldb = gemm_layout("b", b.shape, b.stride())
    out_name = resolve_out_dtype(out_dtype, None if out is None else dtype_name(out.dtype))
    if out is not None:
        if tuple(out.shape) != (m, n):
            _invalid(f"'out' has shape {tuple(out.shape)}; a ({m}, {k}) @ b ({k}, {n}) gives ({m}, {n})")
        trans_d, ldd = gemm_layout("out", out.shape, out.stride())
        if trans_d:
            _invalid(f"'out' must be row-major (unit stride along its rows); got strides {tuple(out.stride())}")
    elif beta != 0:
        _invalid(f"beta = {beta} reads out, but out is None; pass out=")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s.dtype != torch.float32:
            raise TypeError(f"{WHAT}: '{name}' has dtype {dtype_name(s.dtype)}; supported dtypes: float32")
    mode = infer_scaling(scaling, m, n, k, scale_a.shape, scale_b.shape)
    if bias is not None:
        if dtype_name(bias.dtype) != out_name:
            raise TypeError(f"{WHAT}: 'bias' has dtype {dtype_name(bias.dtype)} but the output is {out_name}; "
                            f"pass a bias of the output's dtype")
        if tuple(bias.shape) != (n,):
            _invalid(f"'bias' must have shape ({n},), one value per column of the output; got {tuple(bias.shape)}")
    if amax is not None:
        if amax.dtype != torch.float32:
            raise TypeError(f"{WHAT}: 'amax' has dtype {dtype_name(amax.dtype)}; supported dtypes: float32")
        if amax.numel() != 1:
            _invalid(f"'amax' must have one element (it receives max |out|); got shape {tuple(amax.shape)}")
    device = a.get_device()
    _C.require_cuda_device(WHAT, "a", device)  # NoDeviceError without a GPU, else host memory / bad index
    for name, t in tensors[1:]:
        if t is not None and t.get_device() != device:
            other = t.get_device()
            if other < 0:
                _invalid(f"'{name}' is not in GPU memory; kernelforge runs on CUDA devices: move it to "
                         f"cuda:{device} first (e.g. x.cuda())")
            _invalid(f"'{name}' is on cuda:{other} but 'a' is on cuda:{device}; pass tensors of one device")

    # The scales' and the bias' values by index; a copy where kf cannot read them in place.
    if not scale_read_in_place(mode, "a", scale_a.shape, scale_a.stride()):
        scale_a = scale_a.contiguous()
    if not scale_read_in_place(mode, "b", scale_b.shape, scale_b.stride()):
        scale_b = scale_b.t().contiguous().t() if mode == "blockwise" else scale_b.contiguous()
    if bias is not None and n > 1 and bias.stride(0) != 1:
        bias = bias.contiguous()
    if out is None:
        out = torch.empty((m, n), dtype=getattr(torch, out_name), device=a.device)
        ldd = max(n, 1)
    if stream is None:
        from ._torch_support import device_stream
        stream = device_stream(device)
    _C.scaled_matmul_raw(a.data_ptr(), a_dtype, trans_a, lda, b.data_ptr(), b_dtype, trans_b, ldb, m, n, k, mode,
                         scale_a.data_ptr(), scale_b.data_ptr(), float(alpha), float(beta), out.data_ptr(), out_name,
                         ldd, 0 if bias is None else bias.data_ptr(), bool(relu), float(relu_threshold),
                         0 if amax is None else amax.data_ptr(), variant, device, int(stream))
    return out
