# SPDX-License-Identifier: Apache-2.0
"""kernelforge: CUDA kernels from naive to fast, from Python.

Arrays come in through DLPack (torch.Tensor, cupy.ndarray, ...): one build serves
every framework. Outputs are allocated by the input's framework on the input's
device; work runs on the framework's current stream (or `stream=`) and the host is
never synchronized. PyTorch operators (torch.library, torch.compile, autograd) are
in `kernelforge.torch`, imported on first use. The FP8 product (scaled_matmul) takes
torch tensors only (float8 dtypes: no DLPack export in older torch, none in CuPy).

    import kernelforge as kf
    y = kf.relu_threshold(x, 0.5)        # x: a CUDA torch.Tensor or cupy.ndarray
"""

from . import _C
from ._api import filter2d, matmul, relu_threshold, relu_threshold_backward, saxpy, scaled_matmul, vector_add
from ._api_conv import conv2d, conv2d_backward_data, conv2d_backward_filter, conv2d_output_shape
from ._errors import (CudaRuntimeError, Error, InvalidArgumentError, NoDeviceError, NoKernelImageError,
                      OutOfMemoryError, UnsupportedError)
from ._errors import ALL as _ALL_ERRORS

_C._set_error_classes({cls.code: cls for cls in _ALL_ERRORS})

__version__ = _C.__version__


def compiled_architectures():
    """Compute capabilities (major*10 + minor) this build holds GPU code for, e.g. [75, 80, ..., 121]."""
    return list(_C.compiled_architectures())


def device_count():
    """CUDA devices visible to kernelforge; 0 without a GPU or driver (never raises)."""
    return _C.device_count()


def device_info(device=None):
    """Identity and datasheet ceilings of a CUDA device (None: the current one), as a dict.

    Raises NoDeviceError without a GPU or driver, InvalidArgumentError for a bad ordinal.
    """
    if device is None:
        device = -1
    elif not isinstance(device, int):  # torch.device('cuda:1'), cupy.cuda.Device(1)
        device = getattr(device, "index", None) if hasattr(device, "index") else getattr(device, "id", device)
        device = -1 if device is None else device
    return _C.device_info(int(device))


def __getattr__(name):
    # `kernelforge.torch` is imported on first use only: importing torch is slow, and optional.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'kernelforge' has no attribute {name!r}")


__all__ = ["__version__", "compiled_architectures", "device_count", "device_info", "saxpy", "vector_add",
           "relu_threshold", "relu_threshold_backward", "matmul", "scaled_matmul", "filter2d", "conv2d",
           "conv2d_backward_data", "conv2d_backward_filter", "conv2d_output_shape",
           "Error", "InvalidArgumentError", "NoDeviceError", "NoKernelImageError", "OutOfMemoryError",
           "UnsupportedError", "CudaRuntimeError"]
