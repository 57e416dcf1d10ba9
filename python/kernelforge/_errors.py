# SPDX-License-Identifier: Apache-2.0
"""kernelforge's Python exceptions, one per kf::errc of the C++ library.

The C++ module (_C) raises these with the library's message: kf::error's code()
picks the class. All derive from kernelforge.Error (a RuntimeError); two also
derive from the builtin a caller would catch for them (ValueError, MemoryError).
"""


class Error(RuntimeError):
    """Any error the kernelforge library reports (C++ kf::error)."""

    code = None


class InvalidArgumentError(Error, ValueError):
    """An argument is wrong: shape, layout, device, option (kf::errc::invalid_argument)."""

    code = "invalid_argument"


class NoDeviceError(Error):
    """No usable CUDA device or driver (kf::errc::no_device)."""

    code = "no_device"


class NoKernelImageError(Error):
    """The library holds no code this GPU can run: rebuild for its architecture (kf::errc::no_kernel_image)."""

    code = "no_kernel_image"


class OutOfMemoryError(Error, MemoryError):
    """A device allocation failed (kf::errc::out_of_memory)."""

    code = "out_of_memory"


class UnsupportedError(Error):
    """Valid arguments this variant cannot run on this device (kf::errc::unsupported)."""

    code = "unsupported"


class CudaRuntimeError(Error):
    """Any other CUDA error, e.g. a kernel fault reported late (kf::errc::cuda_runtime)."""

    code = "cuda_runtime"


ALL = (InvalidArgumentError, NoDeviceError, NoKernelImageError, OutOfMemoryError, UnsupportedError,
       CudaRuntimeError)
