"""
kernelforge C++ bindings (use the kernelforge package, not this module)
"""

from typing import Annotated

from numpy.typing import NDArray


def compiled_architectures() -> list[int]:
    """
    Compute capabilities (major*10+minor) the library's fatbin holds code for.
    """

def device_info(device: int = -1) -> dict:
    """
    A dict: name, device, compute_capability (major, minor), sm_count, global_memory_bytes, peak_bandwidth_gbs, peak_fp32_tflops, of CUDA device `device` (-1: the current one). NoDeviceError without a GPU or driver, InvalidArgumentError for a bad ordinal.
    """

def device_count() -> int:
    """CUDA devices visible (0 without a GPU or driver)."""

def require_cuda_device(what: str, name: str, device: int) -> None:
    """
    Raises what the raw entries raise for a device index (torch's Tensor.get_device()): NoDeviceError without a GPU, InvalidArgumentError for host memory (-1) or an index past the devices visible.
    """

dtype_codes: dict = ...

def saxpy(a: float, x: Annotated[NDArray, dict(writable=False)], y: NDArray, variant: str, stream: int) -> None:
    """
    y = a * x + y, in place. x, y: arrays of one shape and dtype (float32, float64, float16, bfloat16), C-contiguous, on one CUDA device. variant: 'best', 'naive' or 'vectorized'; stream: a cudaStream_t as an int (0: the default stream). TypeError for a dtype, InvalidArgumentError for shapes, layout, device or variant.
    """

def vector_add(a: Annotated[NDArray, dict(writable=False)], b: Annotated[NDArray, dict(writable=False)], out: NDArray, variant: str, stream: int) -> None:
    """
    out = a + b. Arrays of one shape and dtype (float32, float64, float16, bfloat16), C-contiguous, on one CUDA device; variant and stream as saxpy's, errors too.
    """

def relu_threshold(x: Annotated[NDArray, dict(writable=False)], out: NDArray, threshold: float, variant: str, stream: int) -> None:
    """
    out = 0 where x <= threshold, else x (NaN propagates). x, out: one shape and dtype (float32, float64, float16, bfloat16), C-contiguous, on one CUDA device (out may be x); variant and stream as saxpy's, errors too.
    """

def relu_threshold_backward(grad: Annotated[NDArray, dict(writable=False)], x: Annotated[NDArray, dict(writable=False)], out: NDArray, threshold: float, variant: str, stream: int) -> None:
    """
    out = 0 where x <= threshold, else grad (x: the forward's input). Arrays of one shape and dtype, C-contiguous, on one CUDA device (out may be grad); variant and stream as saxpy's, errors too.
    """

def relu_threshold_raw(x: int, out: int, n: int, dtype: int, device: int, threshold: float, stream: int) -> None:
    """
    relu_threshold on device addresses (ints): n contiguous elements of dtype code `dtype` (dtype_codes) on CUDA device `device`; no DLPack, for kernelforge.torch's operators. InvalidArgumentError for a dtype code, a negative n or a device index; NoDeviceError without a GPU.
    """

def relu_threshold_backward_raw(grad: int, x: int, out: int, n: int, dtype: int, device: int, threshold: float, stream: int) -> None:
    """
    relu_threshold_backward on device addresses (ints), as relu_threshold_raw.
    """

def matmul(a: Annotated[NDArray, dict(writable=False)], b: Annotated[NDArray, dict(writable=False)], out: NDArray, alpha: float, beta: float, math: str, variant: str, stream: int) -> None:
    """
    out = alpha * (a @ b) + beta * out. a (m, k), b (k, n), out (m, n): 2-D, one dtype (float32, float64, float16, bfloat16), on one CUDA device; a and b row-major or transposed views of row-major arrays, out row-major. math: 'exact', 'tf32' or 'fp32_emulated'; variant: 'best' or a step's name (e.g. 'naive', 'warp_tiled', 'wgmma_f16'); stream: a cudaStream_t as an int. TypeError for a dtype; InvalidArgumentError for shapes, strides, device or names; UnsupportedError for a variant or math mode this dtype or GPU lacks.
    """

def scaled_matmul_raw(a: int, a_dtype: str, trans_a: bool, lda: int, b: int, b_dtype: str, trans_b: bool, ldb: int, m: int, n: int, k: int, scaling: str, scale_a: int, scale_b: int, alpha: float, beta: float, out: int, out_dtype: str, ldd: int, bias: int, relu: bool, relu_threshold: float, amax: int, variant: str, device: int, stream: int) -> None:
    """
    out (m, n, row-major, ldd) = act(alpha * scaled(op(a) @ op(b)) + beta * out + bias), FP8 operands, on device addresses (ints; 0: no bias, no amax): kernelforge.scaled_matmul's entry. a_dtype, b_dtype: 'float8_e4m3fn' or 'float8_e5m2' (not both e5m2); out_dtype: 'bfloat16', 'float16' or 'float32'; scaling: 'per_tensor', 'rowwise' or 'blockwise'. InvalidArgumentError for names, pointers, alignment or leading dimensions; NoDeviceError without a GPU; UnsupportedError where the GPU lacks the variant.
    """

def filter2d(image: Annotated[NDArray, dict(writable=False)], filter: Annotated[NDArray, dict(writable=False)], out: NDArray, border: str, variant: str, stream: int) -> None:
    """
    out = image cross-correlated with filter (same size as image). image, out: (H, W) or (C, H, W); filter: (R, S), applied to each channel; one dtype (float32, float16), C-contiguous, on one CUDA device. border: 'zero', 'clamp' or 'reflect'; variant: 'best' or a step's name; stream: a cudaStream_t as an int. TypeError for a dtype, InvalidArgumentError for shapes, layout, device or names.
    """

def conv2d_output_shape(n: int, c: int, h: int, w: int, k: int, r: int, s: int, stride_h: int, stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int) -> tuple[int, int]:
    """
    (P, Q), the output height and width of this convolution geometry; InvalidArgumentError where there is none (a zero size, stride or dilation, a dilated filter larger than the padded input).
    """

def conv2d(x: Annotated[NDArray, dict(writable=False)], weight: Annotated[NDArray, dict(writable=False)], bias: Annotated[NDArray, dict(writable=False)] | None, out: NDArray, stride_h: int, stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int, layout: str, math: str, relu: bool, relu_threshold: float, variant: str, stream: int) -> None:
    """
    out = conv2d(x, weight) + bias, then the ReLU (threshold relu_threshold) if relu. layout 'nchw': x (N, C, H, W), weight (K, C, R, S), out (N, K, P, Q); 'nhwc': (N, H, W, C), (K, R, S, C), (N, P, Q, K); 'channels_last': torch's NCHW-shaped channels_last tensors. bias: (K,) or None. One dtype (float32; float16 and bfloat16 in NHWC only), dense, on one CUDA device. math: 'exact', 'tf32' or 'fp32_emulated'; variant: 'best' or a step's name. TypeError for a dtype, InvalidArgumentError for shapes, layout or names, UnsupportedError for a 16-bit NCHW call or a variant this GPU or geometry lacks.
    """

def conv2d_backward_data(dy: Annotated[NDArray, dict(writable=False)], weight: Annotated[NDArray, dict(writable=False)], relu_y: Annotated[NDArray, dict(writable=False)] | None, dx: NDArray, stride_h: int, stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int, layout: str, tf32: bool, relu: bool, relu_threshold: float, variant: str, stream: int) -> None:
    """
    dx = the gradient of conv2d with respect to x, from dy (the output's gradient) and weight; shapes, layouts and dtypes as conv2d's (dy like its out, dx like its x). relu: dy is first masked where relu_y (the forward's output, given exactly when relu is set) was clipped; needs relu_threshold >= 0. tf32: TF32 products. Errors as conv2d's.
    """

def conv2d_backward_filter(x: Annotated[NDArray, dict(writable=False)], dy: Annotated[NDArray, dict(writable=False)], relu_y: Annotated[NDArray, dict(writable=False)] | None, dweight: NDArray, dbias: NDArray | None, stride_h: int, stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int, layout: str, tf32: bool, relu: bool, relu_threshold: float, variant: str, stream: int) -> None:
    """
    dweight (and dbias, (K,), unless None) = the gradients of conv2d with respect to weight and bias, from x and dy; shapes, layouts and dtypes as conv2d's. relu, relu_y, relu_threshold and tf32 as conv2d_backward_data's; errors as conv2d's.
    """
