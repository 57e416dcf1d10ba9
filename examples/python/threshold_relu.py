# SPDX-License-Identifier: Apache-2.0
"""Threshold ReLU from PyTorch with kernelforge: train a small model, check it, time it.

1. Two copies of one small MLP, one with kernelforge.torch.ThresholdReLU, one with
   torch.nn.Threshold(threshold, 0), start from the same weights and train a few
   SGD steps on the same batches. Their losses and gradients must agree: the
   kernelforge op plugs into autograd (its backward is kernelforge's
   relu_threshold_backward).
2. The forward at 2^28 float32 elements, timed with CUDA events against
   torch.nn.functional.threshold (both read 1 GiB and write 1 GiB).

Run: python examples/python/threshold_relu.py   (needs a GPU and PyTorch; prints PASSED, or
     SKIPPED and exits 77 without them)
"""

import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print('SKIPPED: PyTorch is not installed (pip install ".[torch]", or torch itself)')
    sys.exit(77)

import kernelforge as kf
import kernelforge.torch as kft

THRESHOLD = 0.1


def make_model(activation):
    return torch.nn.Sequential(torch.nn.Linear(64, 256), activation, torch.nn.Linear(256, 256), activation,
                               torch.nn.Linear(256, 10))


def train_and_compare(steps=5):
    torch.manual_seed(0)
    ours = make_model(kft.ThresholdReLU(THRESHOLD)).cuda()
    reference = make_model(torch.nn.Threshold(THRESHOLD, 0.0)).cuda()
    reference.load_state_dict(ours.state_dict())
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.05)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.05)
    for step in range(steps):
        x = torch.randn(128, 64, device="cuda")
        target = torch.randint(0, 10, (128,), device="cuda")
        losses = []
        for model, opt in ((ours, opt_ours), (reference, opt_ref)):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), target)
            loss.backward()
            losses.append(loss)
        for p, q in zip(ours.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
        opt_ours.step()
        opt_ref.step()
        print(f"step {step}: loss kernelforge {losses[0].item():.5f}  torch {losses[1].item():.5f}")
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-4, atol=1e-5)


def time_ms(fn, repeats=20):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # larger than L2
    times = []
    for _ in range(repeats):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def benchmark(n=1 << 28):
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    ours = time_ms(lambda: kf.relu_threshold(x, THRESHOLD, out))
    op = time_ms(lambda: kft.relu_threshold(x, THRESHOLD))
    theirs = time_ms(lambda: torch.nn.functional.threshold(x, THRESHOLD, 0.0))
    gbs = lambda ms: 2 * n * 4 / ms / 1e6  # noqa: E731
    print(f"2^28 fp32 forward: kernelforge {ours:.3f} ms ({gbs(ours):.0f} GB/s), kernelforge.torch op "
          f"{op:.3f} ms ({gbs(op):.0f} GB/s), F.threshold {theirs:.3f} ms ({gbs(theirs):.0f} GB/s); "
          f"speedup over torch {theirs / ours:.2f}x")
    torch.testing.assert_close(out, F.threshold(x, THRESHOLD, 0.0), rtol=0, atol=0)


def main():
    if not torch.cuda.is_available() or kf.device_count() == 0:
        print("SKIPPED: this example needs a CUDA GPU and found none; kernelforge-doctor (built with the C++ "
              "package) says why and how to fix it")
        return 77
    print(f"kernelforge {kf.__version__} on {kf.device_info()['name']}")
    train_and_compare()
    benchmark()
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
