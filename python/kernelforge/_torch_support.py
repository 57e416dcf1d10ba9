# SPDX-License-Identifier: Apache-2.0
"""What kernelforge takes from torch, looked up once: the current CUDA stream of a
device, DLPack export of a tensor, and the dtype codes of _C's raw entries.

The one home of these helpers for both callers: kernelforge.torch's operator modules
(_torch_relu.py, ..., imported with kernelforge.torch) and _arrays.py (imports it on
the first torch array, when torch is already loaded). Importing kernelforge alone never imports torch.
"""

import torch
import torch.utils.dlpack

from . import _C

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream_by_object(index):
    return torch.cuda.current_stream(index).cuda_stream


# The cudaStream_t (an int) torch has current on CUDA device `index` (>= 0).
device_stream = _raw_stream or _stream_by_object


def current_stream(t):
    """The handle of torch's current stream on t's device; 0 for a CPU tensor (_C then
    reports the tensor's device before anything runs)."""
    index = t.get_device()
    if index < 0:
        return 0
    return device_stream(index)


# torch.utils.dlpack.to_dlpack makes the capsule in C++, several microseconds per call
# cheaper than the Python-level Tensor.__dlpack__; _C's DLPack entries take either.
to_dlpack = getattr(torch.utils.dlpack, "to_dlpack", None) or (lambda t: t)


def plain(t):
    """What a DLPack entry of _C receives for t: a capsule of t, detached if it requires
    grad (Tensor.__dlpack__, the fallback exporter, refuses those)."""
    if t.requires_grad:
        t = t.detach()
    return to_dlpack(t)


# torch.dtype -> the dtype code of _C's raw entries (relu_threshold_raw, ...); a dtype
# missing here goes through the DLPack entry, whose TypeError names the supported ones.
DTYPE_CODES = {getattr(torch, name): code for name, code in _C.dtype_codes.items()}
