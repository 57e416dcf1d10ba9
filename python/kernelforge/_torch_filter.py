# SPDX-License-Identifier: Apache-2.0
"""The image filter operator, kernelforge::filter2d (registered at import;
kernelforge.torch imports this module and re-exports filter2d). No autograd formula."""

import torch

from . import _C
from ._torch_ops import direct as _direct
from ._torch_ops import register as _register
from ._torch_ops import same_shape_fake as _same_shape_fake
from ._torch_support import current_stream as _stream
from ._torch_support import to_dlpack as _dl


def _filter2d_kernel(image, kernel, border="zero"):
    image, kernel = image.contiguous(), kernel.contiguous()
    out = torch.empty_like(image)
    _C.filter2d(_dl(image), _dl(kernel), _dl(out), border, "best", _stream(image))
    return out


_filter2d_op = _register("filter2d", '(Tensor image, Tensor kernel, str border="zero") -> Tensor', _filter2d_kernel,
                         _same_shape_fake)


def filter2d(image: torch.Tensor, kernel: torch.Tensor, border: str = "zero") -> torch.Tensor:
    """image (H, W) or (C, H, W) cross-correlated with kernel (R, S); border zero|clamp|reflect.
    No autograd formula: inputs that require grad are an error at backward time."""
    if _direct(image, kernel):
        return _filter2d_kernel(image, kernel, border)
    return _filter2d_op(image, kernel, border)
