# SPDX-License-Identifier: Apache-2.0
"""A small CNN trained end to end on kernelforge, next to the same network built from torch.

The data: scikit-learn's 8x8 handwritten digits (load_digits: 1,797 images that ship
inside the scikit-learn package, no download), 75% for training, 25% held out.

The network, built twice from one seed (the same initial weights, the same batches):
  conv 3x3 1->32, ThresholdReLU, conv 3x3 32->64 stride 2, ThresholdReLU,
  conv 3x3 64->64, ThresholdReLU, flatten, linear 1024->128, ThresholdReLU, linear 128->10
- kernelforge: kernelforge.torch.Conv2d (forward conv2d, backward conv2d_backward_data
  and conv2d_backward_filter: no aten convolution backward), kernelforge.torch.ThresholdReLU
  and linear layers made of kernelforge.torch.matmul;
- torch: torch.nn.Conv2d, torch.nn.Threshold and torch.nn.Linear (cuDNN, cuBLAS).
Both train in bfloat16 channels_last (the usual mixed-precision recipe: bf16 weights,
activations and gradients; fp32 master weights in the optimizer, Adam), and are held
to: the kernelforge network above 95% on the held-out images, and within 1 point of
torch's. It prints both accuracies and the time per training step of each, which
backward operators one training step ran, and PASSED (exit 0) or FAILED (exit 1).

Run: python examples/python/train_cnn.py [--epochs N] [--compile]
     (needs a GPU, PyTorch and scikit-learn; prints PASSED; --compile: torch.compile both
     networks with fullgraph=True)
"""

import argparse
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:
    print('SKIPPED: PyTorch is not installed (pip install ".[examples]": torch and scikit-learn)')
    sys.exit(77)

import kernelforge as kf
import kernelforge.torch as kft

SEED = 0
THRESHOLD = 0.0  # ThresholdReLU(0) is ReLU; any threshold >= 0 trains the same way
CL = torch.channels_last
DTYPE = torch.bfloat16
DEVICE = "cuda"


class MatmulLinear(nn.Module):
    """torch.nn.Linear's parameters (the same names and initialization, so state_dicts match)
    on kernelforge.torch.matmul: y = x @ weight.T + bias (weight.T read in place, no copy)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        reference = nn.Linear(in_features, out_features)
        self.weight, self.bias = reference.weight, reference.bias

    def forward(self, x):
        return kft.matmul(x, self.weight.t()) + self.bias


def make_network(conv, activation, linear):
    return nn.Sequential(conv(1, 32, 3, padding=1), activation(), conv(32, 64, 3, stride=2, padding=1), activation(),
                         conv(64, 64, 3, padding=1), activation(), nn.Flatten(), linear(64 * 4 * 4, 128),
                         activation(), linear(128, 10))


def kernelforge_network():
    return make_network(kft.Conv2d, lambda: kft.ThresholdReLU(THRESHOLD), MatmulLinear)


def torch_network():
    return make_network(nn.Conv2d, lambda: nn.Threshold(THRESHOLD, 0.0), nn.Linear)


def load_data(device):
    """Normalized images (N, 1, 8, 8) in bf16 channels_last and labels, a stratified 75/25 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    train, test = train_test_split(range(len(labels)), test_size=0.25, random_state=SEED, stratify=digits.target)
    train, test = torch.tensor(train), torch.tensor(test)
    mean, std = images[train].mean(), images[train].std()
    images = ((images - mean) / std).to(device, DTYPE).contiguous(memory_format=CL)
    labels = labels.to(device)
    return images[train], labels[train], images[test], labels[test]


class MasterWeights:
    """Adam on fp32 copies of the bf16 parameters: the step adds updates too small for bf16 to
    the fp32 copy, then rounds it back into the model."""

    def __init__(self, model, lr):
        self.params = list(model.parameters())
        self.master = [p.detach().to(torch.float32, copy=True).requires_grad_() for p in self.params]
        self.optimizer = torch.optim.Adam(self.master, lr=lr)

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def step(self):
        for p, m in zip(self.params, self.master):
            m.grad = p.grad.float()
        self.optimizer.step()
        with torch.no_grad():
            for p, m in zip(self.params, self.master):
                p.copy_(m)


def train(name, model, data, epochs, batch, compile_model):
    """Trains model in place; returns (held-out accuracy in %, ms per training step)."""
    x_train, y_train, x_test, y_test = data
    forward = torch.compile(model, fullgraph=True) if compile_model else model
    optimizer = MasterWeights(model, lr=2e-3)
    order = torch.Generator(device="cpu").manual_seed(SEED)  # the same batches for both networks
    steps, seconds = 0, 0.0
    for epoch in range(epochs):
        model.train()
        permutation = torch.randperm(len(y_train), generator=order).to(x_train.device)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(0, len(y_train) - batch + 1, batch):  # full batches only: one shape
            index = permutation[i:i + batch]
            optimizer.zero_grad()
            loss = F.cross_entropy(forward(x_train[index].contiguous(memory_format=CL)).float(), y_train[index])
            loss.backward()
            optimizer.step()
            if epoch > 0:  # epoch 0 warms up (cuDNN's and kernelforge's plans, torch.compile)
                steps += 1
        torch.cuda.synchronize()
        if epoch > 0:
            seconds += time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        predicted = forward(x_test).float().argmax(1)
    accuracy = 100.0 * (predicted == y_test).float().mean().item()
    ms = 1e3 * seconds / max(steps, 1)
    print(f"{name:12s} held-out accuracy {accuracy:6.2f}%  ({int((predicted == y_test).sum())}/{len(y_test)}), "
          f"{ms:.3f} ms per training step (batch {batch}, {steps} steps timed), final loss {loss.item():.4f}")
    return accuracy, ms


def backward_operators(model, data):
    """[(operator, calls)]: the kernelforge and convolution operators one training step's backward
    dispatches (a dispatch mode records them)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    x, y = data[0][:64], data[1][:64]
    loss = F.cross_entropy(model(x).float(), y)
    recorder = Recorder()
    with recorder:
        loss.backward()
    model.zero_grad(set_to_none=True)
    return sorted({op: recorder.ops.count(op) for op in recorder.ops
                   if op.startswith("kernelforge.") or "convolution" in op}.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--compile", action="store_true", help="torch.compile both networks (fullgraph=True)")
    args = parser.parse_args()
    if not torch.cuda.is_available() or kf.device_count() == 0:
        print("SKIPPED: this example needs a CUDA GPU and found none; kernelforge-doctor (built with the C++ "
              "package) says why and how to fix it")
        return 77
    try:
        data = load_data(DEVICE)
    except ImportError:
        print("SKIPPED: scikit-learn is not installed (pip install scikit-learn)")
        return 77
    print(f"kernelforge {kf.__version__} on {kf.device_info()['name']}, torch {torch.__version__}")
    print(f"digits: {len(data[1])} training and {len(data[3])} held-out 8x8 images, {DTYPE} channels_last, "
          f"{args.epochs} epochs{', torch.compile' if args.compile else ''}")
    torch.manual_seed(SEED)
    ours = kernelforge_network()
    theirs = torch_network()
    theirs.load_state_dict(ours.state_dict())  # one seed: the same initial weights
    ours = ours.to(DEVICE, DTYPE, memory_format=CL)
    theirs = theirs.to(DEVICE, DTYPE, memory_format=CL)

    ops = backward_operators(ours, data)
    print("one training step's backward runs " + ", ".join(f"{op} x{n}" for op, n in ops))
    torch.backends.cudnn.benchmark = True  # torch's best cuDNN algorithms
    accuracy, ms = train("kernelforge", ours, data, args.epochs, args.batch, args.compile)
    reference, reference_ms = train("torch", theirs, data, args.epochs, args.batch, args.compile)
    print(f"time per training step: kernelforge / torch = {ms / reference_ms:.2f}")

    checks = [
        ("no aten convolution backward in kernelforge's backward",
         not any("convolution" in op for op, _ in ops) and dict(ops).get("kernelforge.conv2d_backward_filter") == 3),
        (f"kernelforge accuracy {accuracy:.2f}% > 95%", accuracy > 95.0),
        (f"within 1 point of torch's {reference:.2f}% (difference {accuracy - reference:+.2f})",
         abs(accuracy - reference) <= 1.0),
    ]
    for what, ok in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if all(ok for _, ok in checks):
        print("PASSED")
        return 0
    print("FAILED")
    return 1


if __name__ == "__main__":
    sys.exit(main())
