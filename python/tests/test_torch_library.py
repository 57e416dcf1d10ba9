# SPDX-License-Identifier: Apache-2.0
"""GPU tests of kernelforge.torch as PyTorch code sees it: the torch.library operators
(opcheck, the eager direct path against the operator, dispatch and fake-tensor modes,
gradcheck, torch.compile with fullgraph, CUDA graph capture) and the nn.Modules against
torch's own. Skipped without torch or a GPU."""

import pytest

import kernelforge as kf

torch = pytest.importorskip("torch")
if kf.device_count() == 0 or not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402
from conv_torch_support import DEV, rand  # noqa: E402

import kernelforge.torch as kft  # noqa: E402

pytestmark = pytest.mark.usefixtures("exact_torch")  # torch's reference ops in full fp32 (conftest.py)


def test_opcheck_every_op():
    ops = torch.ops.kernelforge
    x = rand(3, 37, requires_grad=True)
    torch.library.opcheck(ops.relu_threshold.default, (x, 0.1))
    torch.library.opcheck(ops.relu_threshold_backward.default, (rand(3, 37), rand(3, 37), 0.1))
    torch.library.opcheck(ops.matmul.default, (rand(17, 9, requires_grad=True), rand(9, 5, requires_grad=True)))
    torch.library.opcheck(ops.matmul.default, (rand(9, 17).t(), rand(5, 9, requires_grad=True).t()))
    for dtype in (torch.float16, torch.bfloat16):
        torch.library.opcheck(ops.matmul.default, (rand(17, 9, dtype=dtype, requires_grad=True),
                                                   rand(5, 9, dtype=dtype, requires_grad=True).t()))
    torch.library.opcheck(ops.conv2d.default, (rand(2, 3, 9, 10, requires_grad=True),
                                               rand(4, 3, 3, 3, requires_grad=True), rand(4, requires_grad=True),
                                               [1, 1], [1, 1], [1, 1]))
    torch.library.opcheck(ops.conv2d.default, (rand(1, 2, 9, 9), rand(3, 2, 3, 3), None, [2, 2], [0, 0], [1, 1]))
    torch.library.opcheck(ops.filter2d.default, (rand(2, 20, 21), rand(3, 3)))
    torch.library.opcheck(ops.filter2d.default, (rand(20, 21), rand(5, 5), "reflect"))


def test_direct_path_and_operator_agree():
    # Eager calls on plain CUDA tensors skip the dispatcher; everything else goes through the operator.
    x, g = rand(4099), rand(4099)
    direct = kft.relu_threshold(x, 0.3)
    through_op = torch.ops.kernelforge.relu_threshold(x, 0.3)
    torch.testing.assert_close(direct, through_op, rtol=0, atol=0)
    torch.testing.assert_close(direct, F.threshold(x, 0.3, 0.0), rtol=0, atol=0)
    torch.testing.assert_close(kft.relu_threshold_backward(g, x, 0.3),
                               torch.ops.kernelforge.relu_threshold_backward(g, x, 0.3), rtol=0, atol=0)
    with torch.inference_mode():
        torch.testing.assert_close(kft.relu_threshold(x, 0.3), direct, rtol=0, atol=0)


def test_dispatch_modes_see_the_operator():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = rand(3, 17)
    with Record():
        y = kft.relu_threshold(x, 0.1)
        z = kft.matmul(x, x.t())
    assert "kernelforge.relu_threshold.default" in seen and "kernelforge.matmul.default" in seen
    torch.testing.assert_close(y, F.threshold(x, 0.1, 0.0), rtol=0, atol=0)
    torch.testing.assert_close(z, x @ x.t(), rtol=1e-4, atol=1e-4)  # test_torch.py's MM_TOL for float32
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(rand(2, 3, 9, 9))
        out = kft.conv2d(fake, mode.from_tensor(rand(5, 3, 3, 3)), None, [2, 2], [1, 1], [1, 1])
        assert out.shape == (2, 5, 5, 5)


def test_gradcheck_float64():
    x = rand(50, dtype=torch.float64)
    x = (x + 0.2 * torch.sign(x - 0.1)).requires_grad_()  # keep points away from the threshold's kink
    assert torch.autograd.gradcheck(lambda t: kft.relu_threshold(t, 0.1), (x,))
    a = rand(7, 5, dtype=torch.float64, requires_grad=True)
    b = rand(5, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(kft.matmul, (a, b))
    assert torch.autograd.gradcheck(lambda p, q: kft.matmul(p.t(), q), (rand(5, 7, dtype=torch.float64,
                                                                            requires_grad=True), b))


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = kft.Conv2d(3, 8, 3, padding=1)
        self.act = kft.ThresholdReLU(0.05)
        self.fc = torch.nn.Parameter(torch.randn(8 * 8 * 8, 10) * 0.05)

    def forward(self, x):
        h = self.act(self.conv(x)).flatten(1)
        return kft.matmul(h, self.fc)


def test_torch_compile_fullgraph():
    torch.manual_seed(0)
    net = SmallNet().to(DEV)
    x = rand(4, 3, 8, 8)
    eager = net(x)
    compiled = torch.compile(net, fullgraph=True)
    out = compiled(x)
    torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-4)
    out.sum().backward()  # the compiled graph's backward uses the registered formulas
    assert net.conv.weight.grad is not None and net.fc.grad is not None


def test_cuda_graph_capture_and_replay():
    x = rand(1 << 16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up (first calls cache device queries) outside capture
        kft.relu_threshold(x, 0.5)
        kf.vector_add(x, x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = kft.relu_threshold(x, 0.5)
        z = kf.vector_add(y, y)
    x.copy_(rand(1 << 16))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, F.threshold(x, 0.5, 0.0), rtol=0, atol=0)
    torch.testing.assert_close(z, 2 * y)


def test_modules_match_torch_modules():
    torch.manual_seed(0)
    ours, theirs = kft.Conv2d(4, 6, 3, stride=2, padding=1).to(DEV), torch.nn.Conv2d(4, 6, 3, 2, 1).to(DEV)
    theirs.load_state_dict(ours.state_dict())
    x1 = rand(2, 4, 15, 16, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    act1, act2 = kft.ThresholdReLU(0.1), torch.nn.Threshold(0.1, 0.0)
    y1, y2 = act1(ours(x1)), act2(theirs(x2))
    torch.testing.assert_close(y1, y2, rtol=1e-4, atol=1e-4)
    g = rand(*y1.shape)
    y1.backward(g)
    y2.backward(g)
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(ours.bias.grad, theirs.bias.grad, rtol=1e-3, atol=1e-3)
