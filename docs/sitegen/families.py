# SPDX-License-Identifier: Apache-2.0
"""The learning path: one page per progression, in reading order. Each names the folders
whose numbered step files it shows (one section per folder), the hand-written introduction
(docs/pages/learn/<slug>.md) and the problem size its overview table and plot use."""
from dataclasses import dataclass

K = "include/kernelforge/kernels/"


@dataclass
class Family:
    slug: str          # the page: learn/<slug>.md
    title: str
    folders: tuple     # ((repository folder, section title), ...)
    headline: str      # the benchmark size of the overview table and plot


FAMILIES = (
    Family("elementwise", "Elementwise: SAXPY, vector add, threshold ReLU",
           ((K + "elementwise", "Steps"),), "268435456"),
    Family("matmul", "Matrix product: fp32, TF32, 16-bit, wgmma, fp32 emulation",
           ((K + "matmul", "Steps"),), "4096x4096x4096"),
    Family("fp8", "FP8 scaled matrix product",
           ((K + "matmul/scaled", "Steps"),), "4096x4096x4096"),
    Family("conv2d", "2D convolution and its gradients",
           ((K + "conv2d", "Forward steps"), (K + "conv2d/backward", "Gradient steps")),
           "n32_c64_56x56_k64_3x3_p1"),
    Family("filter2d", "Image filter (filter2d)",
           ((K + "filter2d", "Steps"),), "8192x8192_5x5"),
)


def every_step_folder():
    return [folder for family in FAMILIES for folder, _ in family.folders]
