# SPDX-License-Identifier: Apache-2.0
"""A torch.compile backend that records aot_autograd's forward and backward graphs, for the
tests that check which operators a compiled training step runs (test_torch_conv.py on the
GPU, test_torch_conv_cpu.py on the CPU). Imports torch when used, not at import."""


class AotGraphs:
    """An aot_autograd backend that keeps the forward and backward graphs (and runs them eagerly)."""

    def __init__(self):
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd
        self.forward, self.backward = [], []
        keep = lambda graphs: lambda gm, inputs: (graphs.append(gm), make_boxed_func(gm.forward))[1]  # noqa: E731
        self.backend = aot_autograd(fw_compiler=keep(self.forward), bw_compiler=keep(self.backward))

    @staticmethod
    def targets(graphs):
        return [str(node.target) for gm in graphs for node in gm.graph.nodes if node.op == "call_function"]
