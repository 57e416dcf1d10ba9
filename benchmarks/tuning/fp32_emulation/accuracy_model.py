#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A CPU model of fp32 emulation on TF32 tensor cores: which schedule of
the split products keeps SGEMM's accuracy, before any kernel is written.

Each fp32 operand x is split into a TF32 high part xh = tf32(x) (cvt.rna: 10
explicit mantissa bits, round to nearest) and a TF32 remainder xl = tf32(x - xh);
a b ~ ah bh + ah bl + al bh (al bl, below 2^-22 |a b|, is dropped). The tensor
cores are modelled as published measurements describe them: a k = 8 product
group's sum is exact and is added to the fp32 accumulator rounded toward zero
(RZ). Promotion: a partial sum in the tensor cores is added into an fp32 total
on the CUDA cores with round to nearest (RN), as the FP8 kernel does every 128 of k.

Schedules (one output = a dot product of length k; errors relative to sum |a b|
against a float64 reference of the fp32 inputs; median / max over the outputs):
  sgemm            sequential fp32 FMAs, RN (a thread of an SGEMM)
  sgemm_4acc       four interleaved RN chains (k mod 4), added pairwise at the end: a k-unrolled
                   thread; closer to what cuBLAS's SGEMM measured on the H200 at short k
  3x_one_acc       the three products per k-group, small first, in one TC accumulator (CUTLASS 3xTF32)
  3x_concat        all ah bh, then ah bl, then al bh, one TC accumulator (the three as one GEMM of 3k)
  all_promoteP     the three products in a TC partial, promoted every P of k
  hh_promoteP+corr ah bh in a TC partial promoted every P of k; ah bl + al bh in a second TC
                   accumulator over all of k, added at the end
Run: python3 accuracy_model.py [--outputs N]   (numpy; a few minutes on one core)
"""
import argparse

import numpy as np


def tf32(x):
    """Round float32 to TF32 (10 explicit mantissa bits), nearest, ties away (cvt.rna.tf32.f32)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def rz32(x):
    """float64 -> float32 rounded toward zero."""
    f = x.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(x)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def rn_add(acc, s):
    return (acc.astype(np.float64) + s).astype(np.float32)


def rz_add(acc, s):
    return rz32(acc.astype(np.float64) + s)


def errors(A, B):
    outs, k = A.shape
    ah, bh = tf32(A), tf32(B)
    al, bl = tf32(A - ah), tf32(B - bh)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = np.einsum("ij,ij->i", A64, B64)
    mag = np.einsum("ij,ij->i", np.abs(A64), np.abs(B64))

    def group(x, y, p0):  # one k = 8 tensor-core product, summed exactly
        return np.einsum("ij,ij->i", x[:, p0:p0 + 8].astype(np.float64), y[:, p0:p0 + 8].astype(np.float64))

    zero = lambda: np.zeros(outs, np.float32)
    res = {}
    acc = zero()
    for p in range(k):
        acc = rn_add(acc, A64[:, p] * B64[:, p])
    res["sgemm"] = acc
    chains = [zero() for _ in range(4)]
    for p in range(k):
        chains[p % 4] = rn_add(chains[p % 4], A64[:, p] * B64[:, p])
    res["sgemm_4acc"] = rn_add(rn_add(chains[0], chains[1]), rn_add(chains[2], chains[3]))
    acc = zero()
    for p0 in range(0, k, 8):
        acc = rz_add(rz_add(rz_add(acc, group(al, bh, p0)), group(ah, bl, p0)), group(ah, bh, p0))
    res["3x_one_acc"] = acc
    acc = zero()
    for x, y in ((ah, bh), (ah, bl), (al, bh)):
        for p0 in range(0, k, 8):
            acc = rz_add(acc, group(x, y, p0))
    res["3x_concat"] = acc
    for P in (8, 16, 32, 128):
        total = zero()
        for c0 in range(0, k, P):
            part = zero()
            for p0 in range(c0, min(k, c0 + P), 8):
                part = rz_add(rz_add(rz_add(part, group(al, bh, p0)), group(ah, bl, p0)), group(ah, bh, p0))
            total = rn_add(total, part)
        res[f"all_promote{P}"] = total
    for P in (8, 32, 128):
        total, corr = zero(), zero()
        for c0 in range(0, k, P):
            part = zero()
            for p0 in range(c0, min(k, c0 + P), 8):
                corr = rz_add(rz_add(corr, group(al, bh, p0)), group(ah, bl, p0))
                part = rz_add(part, group(ah, bh, p0))
            total = rn_add(total, part)
        res[f"hh_promote{P}+corr"] = rn_add(total, corr)
    return {name: np.abs(v.astype(np.float64) - ref) / mag for name, v in res.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=256, help="dot products per case (a quarter at k = 65536)")
    args = parser.parse_args()
    rng = np.random.default_rng(2)
    names = None
    for dist in ("uniform", "randn", "span2^40"):
        for k in (16, 256, 4096, 65536):
            n = args.outputs if k <= 4096 else max(1, args.outputs // 4)
            if dist == "uniform":
                A, B = rng.random((n, k), dtype=np.float32), rng.random((n, k), dtype=np.float32)
            else:
                A, B = rng.standard_normal((n, k), dtype=np.float32), rng.standard_normal((n, k), dtype=np.float32)
                if dist == "span2^40":  # magnitudes 2^-20 .. 2^20 along k
                    A = (A * np.exp2(rng.uniform(-20, 20, (n, k)))).astype(np.float32)
            e = errors(A, B)
            if names is None:
                names = list(e)
                print("| data | k | " + " | ".join(names) + " |")
                print("|---|---|" + "---|" * len(names))
            print(f"| {dist} | {k} | " + " | ".join(f"{np.median(v):.1e} / {v.max():.1e}" for v in e.values()) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
