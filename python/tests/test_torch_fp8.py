# SPDX-License-Identifier: Apache-2.0
"""GPU tests of the FP8 product (kernelforge.scaled_matmul, torch.ops.kernelforge.scaled_matmul):
every scaling mode, both layouts of a and of b, every operand pair and output dtype,
the epilogue (bias, relu, amax, alpha, beta, out=), empty shapes, torch._scaled_mm
where this torch runs the same case, opcheck, FakeTensor, torch.compile, streams and
CUDA graphs. Results are held to the bound of fp8_reference.py (a float64 reference of
the dequantized operands). Skipped without torch or a GPU; the FP8 runs need compute
capability 8.9+ (below it, UnsupportedError is what is tested)."""

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")
if kf.device_count() == 0 or not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import kernelforge.torch as kft  # noqa: E402
from fp8_reference import FP8_OPCHECK, check_mutates_amax_only, random_fp8, random_scales, reference  # noqa: E402

DEV = "cuda"
E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
PAIRS = [(E4, E4), (E4, E5), (E5, E4)]
OUT_DTYPES = [torch.bfloat16, torch.float16, torch.float32]
MODES = ["per_tensor", "rowwise", "blockwise"]
# (m, n, k): one element; odd sizes with a partial 128-block of k; partial 128-blocks of n and k; whole blocks.
SHAPES = [(1, 1, 1), (17, 33, 65), (130, 257, 300), (64, 128, 256)]
HAS_FP8 = torch.cuda.get_device_capability() >= (8, 9)
needs_fp8 = pytest.mark.skipif(not HAS_FP8, reason="FP8 needs compute capability 8.9+")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def operands(m, n, k, a_dtype=E4, b_dtype=E4, a_layout="row", b_layout="col"):
    return random_fp8(m, k, a_dtype, a_layout), random_fp8(k, n, b_dtype, b_layout)


@needs_fp8
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("a_layout,b_layout", [("row", "col"), ("row", "row"), ("col", "col"), ("col", "row")])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_every_mode_and_layout(m, n, k, mode, a_layout, b_layout, out_dtype):
    a, b = operands(m, n, k, a_layout=a_layout, b_layout=b_layout)
    sa, sb = random_scales(mode, m, n, k)
    out = kf.scaled_matmul(a, b, sa, sb, out_dtype=out_dtype)  # the mode inferred from the scales' shapes
    assert out.dtype == out_dtype and out.shape == (m, n) and out.is_contiguous() and out.device == a.device
    reference(a, b, sa, sb).check(out)
    named = kf.scaled_matmul(a, b, sa, sb, out_dtype=out_dtype, scaling=mode)
    torch.testing.assert_close(named, out, rtol=0, atol=0)


@needs_fp8
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}x{p[1]}".replace("torch.", ""))
@pytest.mark.parametrize("mode", MODES)
def test_operand_pairs(pair, mode):
    m, n, k = 130, 257, 300
    a, b = operands(m, n, k, *pair)
    sa, sb = random_scales(mode, m, n, k)
    for out_dtype in OUT_DTYPES:
        reference(a, b, sa, sb).check(kf.scaled_matmul(a, b, sa, sb, out_dtype=out_dtype, scaling=mode))


@needs_fp8
def test_scale_layouts_are_read_by_index():
    # torch._scaled_mm's blockwise layouts: scale_a outer-dim-major, scale_b the .t() of a
    # row-major (nb, kb) weight_scale_inv (read in place); and the copies of other strides.
    m, n, k = 130, 257, 300
    a, b = operands(m, n, k)
    sa, sb = random_scales("blockwise", m, n, k)
    expected = kf.scaled_matmul(a, b, sa, sb)
    reference(a, b, sa, sb).check(expected)
    for sa2, sb2 in ((sa.t().contiguous().t(), sb), (sa, sb.t().contiguous().t()),
                     (sa.t().contiguous().t(), sb.t().contiguous().t())):
        torch.testing.assert_close(kf.scaled_matmul(a, b, sa2, sb2), expected, rtol=0, atol=0)
    sa, sb = random_scales("rowwise", m, n, k)
    wide_a, wide_b = torch.rand(m, 3, device=DEV), torch.rand(2, n, device=DEV)
    wide_a[:, 1:2], wide_b[1:2, :] = sa, sb  # strided (m, 1) and (1, n) views
    torch.testing.assert_close(kf.scaled_matmul(a, b, wide_a[:, 1:2], wide_b[1:2, :]),
                               kf.scaled_matmul(a, b, sa, sb), rtol=0, atol=0)
    one = torch.full((1, 1), 0.5, device=DEV)
    torch.testing.assert_close(kf.scaled_matmul(a, b, one, one.reshape(())),
                               kf.scaled_matmul(a, b, one.reshape(1), one.reshape(1)), rtol=0, atol=0)


@needs_fp8
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_epilogue_bias_relu_amax_alpha_beta(mode, out_dtype):
    m, n, k = 67, 200, 260
    a, b = operands(m, n, k)
    sa, sb = random_scales(mode, m, n, k)
    bias = torch.randn(n, device=DEV).to(out_dtype) * 50
    amax = torch.full((1,), float("nan"), device=DEV)
    got = kf.scaled_matmul(a, b, sa, sb, out_dtype=out_dtype, bias=bias, relu=True, relu_threshold=0.25, amax=amax)
    reference(a, b, sa, sb, bias=bias, relu=True, relu_threshold=0.25).check(got)
    assert float(amax) == float(got.float().abs().max())
    assert bool((got == 0).any()) and bool((got > 0.25).any())  # the threshold did cut
    # out= with a row stride past n (a slice of a wider tensor), alpha and beta reading it.
    wide = torch.randn(m, n + 7, device=DEV).to(out_dtype)
    wide_before = wide.clone()
    out = wide[:, 3:3 + n]
    result = kf.scaled_matmul(a, b, sa, sb, out=out, alpha=0.5, beta=2.0, bias=bias, amax=amax)
    assert result is out
    reference(a, b, sa, sb, alpha=0.5, beta=2.0, out=wide_before[:, 3:3 + n], bias=bias).check(out)
    assert float(amax) == float(out.float().abs().max())
    torch.testing.assert_close(wide[:, :3], wide_before[:, :3], rtol=0, atol=0)  # the columns around out
    torch.testing.assert_close(wide[:, 3 + n:], wide_before[:, 3 + n:], rtol=0, atol=0)


@needs_fp8
def test_empty_shapes():
    amax = torch.full((1,), 7.0, device=DEV)
    a, b = operands(0, 5, 16)
    sa, sb = random_scales("rowwise", 0, 5, 16)
    out = kf.scaled_matmul(a, b, sa, sb, amax=amax)
    assert out.shape == (0, 5) and float(amax) == 0.0
    a, b = operands(4, 6, 0)  # k = 0: out = bias (the scales are not read)
    bias = torch.randn(6, device=DEV).to(torch.bfloat16)
    sa, sb = random_scales("blockwise", 4, 6, 0)
    out = kf.scaled_matmul(a, b, sa, sb, bias=bias)
    torch.testing.assert_close(out, bias.expand(4, 6), rtol=0, atol=0)


def _torch_scaled_mm(a, b, sa, sb, out_dtype):
    try:
        result = torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype)
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        pytest.skip(f"torch._scaled_mm does not run this case here (torch {torch.__version__}): {e}")
    return result[0] if isinstance(result, tuple) else result  # torch < 2.4 returned (out, amax)


@needs_fp8
@pytest.mark.parametrize("mode", MODES)
def test_matches_torch_scaled_mm(mode):
    # torch's layouts: a row-major, b the .t() of a row-major (n, k) weight; sizes multiples of 128.
    m, n, k = 128, 256, 512
    a, b = operands(m, n, k)
    sa, sb = random_scales(mode, m, n, k)
    ours = kf.scaled_matmul(a, b, sa, sb, out_dtype=torch.bfloat16)
    if mode == "blockwise":  # torch wants scale_a outer-dim-major and scale_b as weight_scale_inv.t()
        theirs = _torch_scaled_mm(a, b, sa.t().contiguous().t(), sb.t().contiguous().t(), torch.bfloat16)
    elif mode == "per_tensor":
        theirs = _torch_scaled_mm(a, b, sa.reshape(()), sb.reshape(()), torch.bfloat16)
    else:
        theirs = _torch_scaled_mm(a, b, sa, sb, torch.bfloat16)
    ref = reference(a, b, sa, sb)
    ref.check(ours)
    bound = 2 * ref.bound(torch.bfloat16)  # both within the bound of the exact result
    assert bool(((ours.double() - theirs.double()).abs() <= bound).all())


@needs_fp8
def test_opcheck():
    # Without test_schema, which compares inputs with torch.allclose (not implemented for
    # float8); check_mutates_amax_only checks the declared mutation by bytes instead.
    op = torch.ops.kernelforge.scaled_matmul.default
    a, b = operands(33, 40, 150)
    for mode in MODES:
        sa, sb = random_scales(mode, 33, 40, 150)
        torch.library.opcheck(op, (a, b, sa, sb), test_utils=FP8_OPCHECK)
        torch.library.opcheck(op, (a, b, sa, sb), {"out_dtype": torch.float32, "scaling": mode},
                              test_utils=FP8_OPCHECK)
    sa, sb = random_scales("rowwise", 33, 40, 150)
    bias = torch.randn(40, device=DEV).to(torch.float16)
    args = (a, b, sa, sb, bias, torch.float16, None, True, 0.1, torch.zeros(1, device=DEV))  # mutates amax
    torch.library.opcheck(op, args, test_utils=FP8_OPCHECK)
    check_mutates_amax_only(op, args)
    a_col, b_row = operands(33, 40, 150, E5, E4, "col", "row")
    torch.library.opcheck(op, (a_col, b_row, sa, sb), test_utils=FP8_OPCHECK)


@needs_fp8
def test_direct_path_operator_and_fake_agree():
    from torch._subclasses.fake_tensor import FakeTensorMode

    a, b = operands(50, 70, 200)
    sa, sb = random_scales("blockwise", 50, 70, 200)
    amax1, amax2 = torch.zeros(1, device=DEV), torch.zeros(1, device=DEV)
    direct = kft.scaled_matmul(a, b, sa, sb, out_dtype=torch.float16, amax=amax1)
    through_op = torch.ops.kernelforge.scaled_matmul(a, b, sa, sb, None, torch.float16, None, False, 0.0, amax2)
    torch.testing.assert_close(direct, through_op, rtol=0, atol=0)
    torch.testing.assert_close(direct, kf.scaled_matmul(a, b, sa, sb, out_dtype=torch.float16), rtol=0, atol=0)
    assert float(amax1) == float(amax2) == float(direct.float().abs().max())
    with FakeTensorMode() as mode:
        fake = kft.scaled_matmul(mode.from_tensor(a), mode.from_tensor(b), mode.from_tensor(sa),
                                 mode.from_tensor(sb), out_dtype=torch.float32)
        assert fake.shape == (50, 70) and fake.dtype == torch.float32


@needs_fp8
def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    a, b = operands(64, 96, 256)
    sa, sb = random_scales("rowwise", 64, 96, 256)
    bias = torch.randn(96, device=DEV).to(torch.bfloat16)

    def layer(x, w, sx, sw, amax):
        y = kft.scaled_matmul(x, w, sx, sw, bias=bias, relu=True, amax=amax)
        return y.float() * 2.0

    amax_eager, amax_compiled = torch.zeros(1, device=DEV), torch.zeros(1, device=DEV)
    eager = layer(a, b, sa, sb, amax_eager)
    compiled = torch.compile(layer, fullgraph=True)(a, b, sa, sb, amax_compiled)
    torch.testing.assert_close(compiled, eager, rtol=0, atol=0)
    assert float(amax_compiled) == float(amax_eager)


@needs_fp8
def test_current_stream_and_cuda_graph():
    a, b = operands(64, 64, 128)
    sa, sb = random_scales("per_tensor", 64, 64, 128)
    expected = kf.scaled_matmul(a, b, sa, sb)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    scale = torch.zeros((), device=DEV)
    with torch.cuda.stream(s):  # on another stream the kernel would read scale before the slow fill
        torch.cuda._sleep(100_000_000)
        scale.copy_(sa)
        got = kf.scaled_matmul(a, b, scale, sb)
        got_op = kft.scaled_matmul(a, b, scale, sb)
    s.synchronize()
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    torch.testing.assert_close(got_op, expected, rtol=0, atol=0)
    amax = torch.zeros(1, device=DEV)
    with torch.cuda.stream(s):  # warm-up outside capture (first calls cache device queries)
        kft.scaled_matmul(a, b, sa, sb, amax=amax)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = kft.scaled_matmul(a, b, sa, sb, amax=amax)
    sa.mul_(2.0)
    graph.replay()
    torch.cuda.synchronize()
    reference(a, b, sa, sb).check(y)
    assert float(amax) == float(y.float().abs().max())


def test_argument_errors_on_gpu():
    a, b = operands(8, 16, 32)
    sa, sb = random_scales("rowwise", 8, 16, 32)
    with pytest.raises(kf.InvalidArgumentError, match="'scale_a' is not in GPU memory"):
        kf.scaled_matmul(a, b, sa.cpu(), sb)
    with pytest.raises(kf.InvalidArgumentError, match="'a' is not in GPU memory"):
        kft.scaled_matmul(a.cpu(), b, sa, sb)
    with pytest.raises(kf.InvalidArgumentError, match="'out' must be row-major"):
        kf.scaled_matmul(a, b, sa, sb, out=torch.empty(16, 8, device=DEV, dtype=torch.bfloat16).t())
    with pytest.raises(kf.InvalidArgumentError, match=r"'a' of shape \(8, 32\) has strides \(64, 2\)"):
        kf.scaled_matmul(random_fp8(8, 64, E4)[:, ::2], random_fp8(32, 16, E4), sa, sb)
    with pytest.raises(TypeError, match="'bias' has dtype float32 but the output is bfloat16"):
        kf.scaled_matmul(a, b, sa, sb, bias=torch.zeros(16, device=DEV))
    with pytest.raises(kf.InvalidArgumentError, match="options.amax points into D"):
        out = torch.empty(8, 16, device=DEV)
        kf.scaled_matmul(a, b, sa, sb, out=out, amax=out[0, :1])


@pytest.mark.skipif(HAS_FP8, reason="this GPU has FP8 tensor cores")
def test_below_compute_capability_8_9_is_unsupported():
    a, b = operands(8, 16, 32)
    sa, sb = random_scales("per_tensor", 8, 16, 32)
    with pytest.raises(kf.UnsupportedError, match="8.9"):
        kf.scaled_matmul(a, b, sa, sb)
