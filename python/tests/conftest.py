# SPDX-License-Identifier: Apache-2.0
"""Shared pytest fixtures for the kernelforge Python tests.

CPU tests (test_cpu.py) need only kernelforge and numpy. GPU tests skip cleanly
when there is no GPU, or when torch / CuPy is not installed.
"""

import pytest

import kernelforge as kf


def gpu_count():
    return kf.device_count()


requires_gpu = pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU (kernelforge.device_count() == 0)")


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    if gpu_count() == 0 or not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


@pytest.fixture
def cupy_cuda():
    cupy = pytest.importorskip("cupy")
    if gpu_count() == 0:
        pytest.skip("no CUDA GPU")
    return cupy


@pytest.fixture
def exact_torch():
    """torch's reference ops in full fp32 (no TF32) for the test, whatever the global default is."""
    torch = pytest.importorskip("torch")
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


@pytest.fixture
def conv_stand_in(monkeypatch):
    """_torch_conv's _C.conv2d computed by torch on the CPU (conv_stand_in.py)."""
    pytest.importorskip("torch")
    from conv_stand_in import install
    return install(monkeypatch)
