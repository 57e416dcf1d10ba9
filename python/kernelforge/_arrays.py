# SPDX-License-Identifier: Apache-2.0
"""How the kernelforge wrappers meet array frameworks.

Which framework an array comes from, the CUDA stream a call runs on, and output
allocation by that framework (a torch input gives a torch output, CuPy gives
CuPy), without importing torch or CuPy unless the caller's arrays come from them.
The C++ module (_C) reads every array through DLPack and checks dtype, shape,
layout and device itself; this file only prepares what DLPack cannot carry.
"""

import sys


def framework(x):
    """'torch', 'cupy', 'numpy', ... : the top-level module of x's type."""
    return type(x).__module__.partition(".")[0]


def require_array(name, x):
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"kernelforge: '{name}' must be a CUDA array with DLPack support "
                        f"(torch.Tensor, cupy.ndarray); got {type(x).__name__}")


_torch = None


def _torch_support():
    """kernelforge._torch_support (torch's stream and DLPack helpers), imported on the
    first torch array: torch is loaded by then, and kernelforge alone never imports it."""
    global _torch
    if _torch is None:
        from . import _torch_support as module
        _torch = module
    return _torch


def plain(x, fw):
    """What _C receives for x: a DLPack capsule for torch tensors (detached: torch
    refuses to export tensors that require grad), the array itself otherwise."""
    if fw != "torch":
        return x
    return (_torch or _torch_support()).plain(x)


def _cupy_current_stream(x):
    cupy = sys.modules["cupy"]
    device = getattr(x, "device", None)
    if device is None or not hasattr(device, "id"):
        return cupy.cuda.get_current_stream().ptr
    with cupy.cuda.Device(device.id):  # CuPy's current stream is per device
        return cupy.cuda.get_current_stream().ptr


def stream_handle(stream, x, fw):
    """The cudaStream_t (as an int) to run on.

    None: the current stream of x's framework (torch.cuda.current_stream(x.device),
    cupy.cuda.get_current_stream()), else the legacy default stream. An int is a raw
    handle; objects with __cuda_stream__ (the CUDA stream protocol), torch.cuda.Stream
    (.cuda_stream) and cupy.cuda.Stream (.ptr) are accepted.
    """
    if stream is None:
        if fw == "torch":
            return (_torch or _torch_support()).current_stream(x)
        if fw == "cupy":
            return _cupy_current_stream(x)
        return 0
    if isinstance(stream, int):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    raise TypeError(f"kernelforge: stream must be None, an int handle, or a stream object "
                    f"(__cuda_stream__, torch.cuda.Stream, cupy.cuda.Stream); got {type(stream).__name__}")


def empty(x, fw, shape):
    """An uninitialized contiguous array of x's dtype on x's device, made by x's framework."""
    if fw == "torch":
        return sys.modules["torch"].empty(shape, dtype=x.dtype, device=x.device)
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(x.device.id):
            return cupy.empty(shape, dtype=x.dtype)
    if fw == "numpy":  # host memory: _C raises the clear error (or NoDeviceError)
        return sys.modules["numpy"].empty(shape, dtype=x.dtype)
    raise TypeError(f"kernelforge: cannot allocate an output for a {fw} array; pass out= "
                    f"(outputs are allocated with torch or CuPy)")


def empty_like(x, fw):
    if fw == "torch" and x.is_contiguous():
        return sys.modules["torch"].empty_like(x)
    return empty(x, fw, tuple(x.shape))
