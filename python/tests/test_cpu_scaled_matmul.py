# SPDX-License-Identifier: Apache-2.0
"""kernelforge.scaled_matmul's tests that need no GPU (they run in CI): its plain-Python
helpers (the GEMM layout rule, scaling inference, scale shapes, FP8 dtype names) and its
raw entry's argument errors. NumPy arrays stand in for CUDA arrays, as in test_cpu.py."""

import numpy as np
import pytest

import kernelforge as kf
from conftest import gpu_count

f32 = np.float32


# ---- FP8: kernelforge.scaled_matmul's plain-Python helpers and its raw entry -------------
# (the torch tensors' checks are in test_torch_cpu.py and test_torch_fp8.py)

from kernelforge import _scaled_matmul as sm  # noqa: E402


@pytest.mark.parametrize("shape,strides,expected", [
    ((3, 4), (4, 1), (False, 4)),        # row-major
    ((3, 4), (6, 1), (False, 6)),        # a column slice of a wider row-major tensor
    ((4, 3), (1, 4), (True, 4)),         # the .t() of a row-major (3, 4): torch._scaled_mm's b
    ((256, 64), (1, 300), (True, 300)),  # the .t() of a padded row-major (64, 256)
    ((1, 5), (1, 1), (False, 5)),        # size-1 dimensions: any stride
    ((5, 1), (1, 1), (False, 1)),
    ((5, 1), (1, 7), (False, 1)),
    ((1, 1), (9, 9), (False, 1)),
    ((0, 4), (4, 1), (False, 4)),
])
def test_gemm_layout(shape, strides, expected):
    assert sm.gemm_layout("b", shape, strides) == expected


@pytest.mark.parametrize("shape,strides", [((4, 3), (6, 2)), ((4, 5), (0, 1)), ((3, 4), (3, 1)), ((4, 3), (1, 3)),
                                           ((3, 4), (8, 2))])
def test_gemm_layout_rejects_other_strides(shape, strides):
    with pytest.raises(kf.InvalidArgumentError, match=r"kernelforge.scaled_matmul: 'b' of shape .* has strides "
                                                      r".*neither row-major .* nor column-major"):
        sm.gemm_layout("b", shape, strides)


def _numpy_views():
    base = np.ones((6, 8), f32)
    return [base, base[:, :5], base.T, base[:, ::2], base[::2, :], base.T[:, ::2], base[:1, :], base[:, :1],
            base[::2, ::2], base[:, 1:4], np.ones((1, 1), f32)]


@pytest.mark.parametrize("view", range(len(_numpy_views())))
def test_gemm_layout_is_the_dlpack_matmul_rule(view):
    # The FP8 path maps strides in Python; the DLPack matmul maps them in C++ (matmul.cpp's
    # layout()): the same arrays must be accepted and refused.
    a = _numpy_views()[view]
    strides = tuple(s // a.itemsize for s in a.strides)
    try:
        sm.gemm_layout("a", a.shape, strides)
        python_accepts = True
    except kf.InvalidArgumentError:
        python_accepts = False
    with pytest.raises((kf.InvalidArgumentError, kf.NoDeviceError)) as info:
        kf.matmul(a, np.ones((a.shape[1], 2), f32))  # the layout is checked before the device
    assert ("neither row-major nor a transposed view" not in str(info.value)) == python_accepts, str(info.value)


@pytest.mark.parametrize("m,n,k,shape_a,shape_b,mode", [
    (64, 32, 256, (), (), "per_tensor"),
    (64, 32, 256, (1,), (1, 1), "per_tensor"),
    (64, 32, 256, (64, 1), (1, 32), "rowwise"),
    (64, 300, 257, (64, 3), (3, 3), "blockwise"),
    (130, 257, 300, (130, 3), (3, 3), "blockwise"),
    (64, 200, 300, (64, 3), (3, 2), "blockwise"),  # (ceil(k/128), ceil(n/128)): b's (k, n) orientation
    (1, 1, 64, (1, 1), (1, 1), "per_tensor"),      # m = n = 1: the modes coincide
    (8, 1, 100, (8, 1), (1, 1), "rowwise"),        # k <= 128, n = 1: rowwise = blockwise
    (4, 6, 0, (4, 0), (0, 1), "blockwise"),        # k = 0: no blocks
])
def test_infer_scaling(m, n, k, shape_a, shape_b, mode):
    assert sm.infer_scaling(None, m, n, k, shape_a, shape_b) == mode
    assert sm.infer_scaling(mode, m, n, k, shape_a, shape_b) == mode


def test_scaling_errors():
    with pytest.raises(kf.InvalidArgumentError, match=r"scale_a of shape \(64, 1\) and scale_b of shape \(32, 1\) "
                                                      r"fit no scaling mode for a \(64, 256\) @ b \(256, 32\); "
                                                      r"per_tensor: .*; rowwise: scale_a \(64, 1\) and scale_b "
                                                      r"\(1, 32\); blockwise: scale_a \(64, 2\) and scale_b \(2, 1\)"):
        sm.infer_scaling(None, 64, 32, 256, (64, 1), (32, 1))
    # DeepSeek-V3's weight_scale_inv is (ceil(n/128), ceil(k/128)): torch._scaled_mm (and kernelforge) take its .t().
    with pytest.raises(kf.InvalidArgumentError, match=r"fit no scaling mode.*weight_scale_inv \(2, 3\): pass "
                                                      r"its .t\(\)"):
        sm.infer_scaling(None, 64, 200, 300, (64, 3), (2, 3))
    with pytest.raises(kf.InvalidArgumentError, match=r"scaling 'blockwise' needs scale_a \(64, 3\) and scale_b "
                                                      r"\(3, 1\).*got scale_a \(64, 1\) and scale_b \(1, 32\)"):
        sm.infer_scaling("blockwise", 64, 32, 300, (64, 1), (1, 32))
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'rowwise' needs scale_a"):
        sm.infer_scaling("rowwise", 64, 32, 300, (), ())
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'per_row' is not one of: per_tensor, rowwise, "
                                                      "blockwise"):
        sm.infer_scaling("per_row", 64, 32, 300, (64, 1), (1, 32))


@pytest.mark.parametrize("mode,which,shape,strides,in_place", [
    ("per_tensor", "a", (), (), True),
    ("rowwise", "a", (64, 1), (1, 1), True),
    ("rowwise", "a", (64, 1), (1, 64), True),
    ("rowwise", "a", (64, 1), (3, 1), False),    # a strided column: copied
    ("rowwise", "b", (1, 32), (32, 1), True),
    ("rowwise", "b", (1, 32), (64, 2), False),
    ("blockwise", "a", (64, 3), (3, 1), True),   # row-major (m, kb)
    ("blockwise", "a", (64, 3), (1, 64), False),  # torch._scaled_mm's outer-dim-major: copied
    ("blockwise", "b", (3, 2), (1, 3), True),    # weight_scale_inv.t()
    ("blockwise", "b", (3, 2), (2, 1), False),   # a row-major (kb, nb): copied
    ("blockwise", "b", (1, 2), (2, 1), True),    # kb = 1
])
def test_scale_read_in_place(mode, which, shape, strides, in_place):
    assert sm.scale_read_in_place(mode, which, shape, strides) == in_place


def test_scale_shapes():
    assert sm.scale_shapes("per_tensor", 5, 6, 7) == (None, None)
    assert sm.scale_shapes("rowwise", 5, 6, 7) == ((5, 1), (1, 6))
    assert sm.scale_shapes("blockwise", 5, 129, 256) == ((5, 2), (2, 2))
    assert sm.scale_shapes("blockwise", 5, 128, 257) == ((5, 3), (3, 1))


def test_fp8_dtype_names_and_output_dtype():
    class FakeDtype:  # str() of a torch.dtype
        def __str__(self):
            return "torch.float8_e5m2"

    assert sm.dtype_name(FakeDtype()) == "float8_e5m2" and sm.dtype_name("torch.bfloat16") == "bfloat16"
    assert sm.dtype_name("float16") == "float16"
    for pair in sm.OPERAND_PAIRS:
        sm.check_operand_dtypes(*pair)
    with pytest.raises(TypeError, match="'a' has dtype float32; supported dtypes: float8_e4m3fn, float8_e5m2"):
        sm.check_operand_dtypes("float32", "float8_e4m3fn")
    with pytest.raises(TypeError, match="'b' has dtype float8_e4m3fnuz"):
        sm.check_operand_dtypes("float8_e4m3fn", "float8_e4m3fnuz")
    with pytest.raises(TypeError, match="both float8_e5m2, which is not supported"):
        sm.check_operand_dtypes("float8_e5m2", "float8_e5m2")
    assert sm.resolve_out_dtype(None) == "bfloat16"
    assert sm.resolve_out_dtype(None, "float32") == "float32"
    assert sm.resolve_out_dtype("torch.float16") == "float16"
    assert sm.resolve_out_dtype("float32", "float32") == "float32"
    with pytest.raises(TypeError, match="out_dtype has dtype float8_e4m3fn; supported dtypes: bfloat16, float16, "
                                        "float32"):
        sm.resolve_out_dtype("float8_e4m3fn")
    with pytest.raises(TypeError, match="'out' has dtype float64; supported dtypes"):
        sm.resolve_out_dtype(None, "float64")
    with pytest.raises(TypeError, match="'out' has dtype float32 but out_dtype is float16"):
        sm.resolve_out_dtype("float16", "float32")


def test_scaled_matmul_takes_torch_tensors_only():
    x = np.ones((4, 4), f32)
    with pytest.raises(TypeError, match="scaled_matmul: FP8 operands come from PyTorch only .* numpy.ndarray"):
        kf.scaled_matmul(x, x, x, x)
    with pytest.raises(TypeError, match="DLPack"):
        kf.scaled_matmul([1.0], x, x, x)


def _raw(**changes):
    # Pointers that are never dereferenced: every case fails in a check before anything runs.
    args = dict(a=4096, a_dtype="float8_e4m3fn", trans_a=False, lda=32, b=8192, b_dtype="float8_e4m3fn",
                trans_b=True, ldb=32, m=4, n=4, k=32, scaling="per_tensor", scale_a=12288, scale_b=12292, alpha=1.0,
                beta=0.0, out=16384, out_dtype="bfloat16", ldd=4, bias=0, relu=False, relu_threshold=0.0, amax=0,
                variant="best", device=0, stream=0)
    args.update(changes)
    return kf._C.scaled_matmul_raw(**args)


def test_scaled_matmul_raw_argument_errors():
    what = "kernelforge.scaled_matmul_raw: "
    with pytest.raises(kf.InvalidArgumentError, match=what + "a_dtype 'float16' is not one of: float8_e4m3fn, "
                                                             "float8_e5m2"):
        _raw(a_dtype="float16")
    with pytest.raises(kf.InvalidArgumentError, match="b_dtype 'e4m3' is not one of"):
        _raw(b_dtype="e4m3")
    with pytest.raises(kf.InvalidArgumentError, match="float8_e5m2 with b_dtype float8_e5m2 is not shipped"):
        _raw(a_dtype="float8_e5m2", b_dtype="float8_e5m2")
    with pytest.raises(kf.InvalidArgumentError, match="out_dtype 'float64' is not one of: bfloat16, float16, float32"):
        _raw(out_dtype="float64")
    with pytest.raises(kf.InvalidArgumentError, match="scaling 'tensorwise' is not one of: per_tensor, rowwise, "
                                                      "blockwise"):
        _raw(scaling="tensorwise")
    with pytest.raises(kf.InvalidArgumentError, match="variant 'fast' is not one of: best, naive"):
        _raw(variant="fast")


@pytest.mark.skipif(gpu_count() > 0, reason="a GPU is present")
def test_scaled_matmul_raw_without_a_device():
    with pytest.raises(kf.NoDeviceError, match="kernelforge.scaled_matmul_raw: .*no usable CUDA device"):
        _raw()
    with pytest.raises(kf.NoDeviceError, match="kernelforge.scaled_matmul: .*no usable CUDA device"):
        kf._C.require_cuda_device("kernelforge.scaled_matmul", "a", 0)


@pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU: without one every device index is NoDeviceError")
def test_scaled_matmul_raw_pointer_errors():
    # kf::scaled_matmul's own checks, before the FP8 device check and before anything is enqueued.
    with pytest.raises(kf.InvalidArgumentError, match=r"'a' is not in GPU memory \(device index -1\)"):
        _raw(device=-1)
    with pytest.raises(kf.InvalidArgumentError, match="scales.a is null; scaling mode per_tensor reads 1 value"):
        _raw(scale_a=0)
    with pytest.raises(kf.InvalidArgumentError, match="scales.b is null; scaling mode rowwise reads n values"):
        _raw(scaling="rowwise", scale_b=0)
    with pytest.raises(kf.InvalidArgumentError, match="argument 'options.amax' is not aligned to 4 bytes"):
        _raw(amax=20001)
    kf._C.require_cuda_device("kernelforge.scaled_matmul", "a", 0)  # a valid index: no error
