# SPDX-License-Identifier: Apache-2.0
"""The probe operator of the frame experiment, shared by profile_torch_op.py (GPU) and
profile_torch_op_cpu.py (CPU): `<ns>::neg(Tensor x)`, torch.neg on every backend, and
three Autograd kernels that reach torch.neg through no Python frame (torch.neg itself,
a C callable), one and three. Registering each in turn on the Autograd key of one
compiled graph tells whether a Python frame costs more inside a compiled graph."""

import torch


def neg_probe(ns="kfprobe_neg"):
    """(library, op overload, {name: Autograd kernel}); keep the library alive while the op is used."""
    lib = torch.library.Library(ns, "DEF")
    lib.define("neg(Tensor x) -> Tensor")
    lib.impl("neg", torch.neg, "CompositeExplicitAutograd")  # what the trace runs (FakeTensors)
    torch.library.register_fake(f"{ns}::neg", lambda t: torch.empty_like(t), lib=lib)
    op = getattr(torch.ops, ns).neg.default

    def one(t):
        return torch.neg(t)

    def two(t):
        return one(t)

    def three(t):
        return two(t)

    kernels = {"C callable (torch.neg)": torch.neg, "1 Python frame": one, "3 Python frames": three}
    return lib, op, kernels
