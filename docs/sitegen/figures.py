# SPDX-License-Identifier: Apache-2.0
"""Each step's measured figures on the H200, read from the committed benchmark JSON
(benchmarks/results/h200/), never copied: a new run committed there changes the site.

STEP_ROWS says which benchmark rows measure which step file: the JSON file, the
row's "<op>/<type>/<impl>" prefix (bench_* naming, benchmarks/report.py's docstring) and,
where a step runs only some of those sizes, the start of the sizes it runs.
A step with no row (not measured on the H200) is listed with an empty tuple; the
site says so on its section."""
import sys

from .site import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import report  # noqa: E402  (benchmarks/report.py: the JSON reader every results script shares)

RESULTS = ROOT / "benchmarks" / "results" / "h200"
K = "include/kernelforge/kernels/"
EW, MM, CONV, FIL = "bench_elementwise.json", "bench_matmul.json", "bench_conv.json", "bench_conv.json"

STEP_ROWS = {
    K + "elementwise/01_naive.cuh": ((EW, "saxpy/fp32/naive"), (EW, "vector_add/bf16/naive")),
    K + "elementwise/02_vectorized.cuh": ((EW, "saxpy/fp32/vectorized"), (EW, "vector_add/bf16/vectorized")),
    K + "matmul/01_naive.cuh": ((MM, "matmul/fp32/naive"),),
    K + "matmul/02_coalesced.cuh": ((MM, "matmul/fp32/coalesced"),),
    K + "matmul/03_smem_tiled.cuh": ((MM, "matmul/fp32/smem_tiled"),),
    K + "matmul/04_blocktile_1d.cuh": ((MM, "matmul/fp32/blocktile_1d"),),
    K + "matmul/05_blocktile_2d.cuh": ((MM, "matmul/fp32/blocktile_2d"),),
    K + "matmul/06_vectorized.cuh": ((MM, "matmul/fp32/vectorized"),),
    K + "matmul/07_warp_tiled.cuh": ((MM, "matmul/fp32/warp_tiled"),),
    K + "matmul/08_large_tile.cuh": ((MM, "matmul/fp32/large_tile"),),
    K + "matmul/09_tensor_core_tf32.cuh": ((MM, "matmul/tf32/mma_sync"),),
    K + "matmul/10_tensor_core_f16.cuh": ((MM, "matmul/fp16/tensor_core_f16"), (MM, "matmul/bf16/tensor_core_f16")),
    K + "matmul/11_wgmma_tma.cuh": ((MM, "matmul/fp16/wgmma_step11"),),
    K + "matmul/12_wgmma_warp_specialized.cuh": ((MM, "matmul/fp16/wgmma_step12"),),
    K + "matmul/13_wgmma_clusters.cuh": ((MM, "matmul/fp16/wgmma_step13"),),
    K + "matmul/14_wgmma.cuh": ((MM, "matmul/fp16/best_vs_cublas"), (MM, "matmul/bf16/best_vs_cublas"),
                                (MM, "matmul/tf32/best_vs_cublas")),
    K + "matmul/15_wgmma_fp32_emulated.cuh": (("bench_matmul_fp32_emulated.json",
                                               "matmul/fp32_emulated/best_vs_cublas"),),
    K + "matmul/16_mma_sync_fp32_emulated.cuh": (("bench_matmul_fp32_emulated.json",
                                                  "matmul/fp32_emulated/mma_sync_vs_cublas"),),
    K + "matmul/17_wgmma_fp32_emulated_skinny.cuh": (),  # not yet run on the H200 (skinny_vs_step15 rows)
    K + "matmul/scaled/01_naive.cuh": (("bench_scaled_matmul.json", "matmul/fp8_per_tensor/naive"),),
    K + "matmul/scaled/02_mma_sync.cuh": (),  # sm_89's path: the H200 runs step 3
    K + "matmul/scaled/03_wgmma.cuh": (("bench_scaled_matmul.json", "matmul/fp8_per_tensor/best_vs_cublaslt"),
                                       ("bench_scaled_matmul.json", "matmul/fp8_blockwise/best_vs_cublaslt")),
    K + "conv2d/01_naive.cuh": ((CONV, "conv2d/fp32/naive"),),
    K + "conv2d/02_smem_tiled.cuh": ((CONV, "conv2d/fp32/smem_tiled"),),
    K + "conv2d/03_implicit_gemm.cuh": ((CONV, "conv2d/fp32/implicit_gemm"),),
    K + "conv2d/04_implicit_gemm_tf32.cuh": ((CONV, "conv2d/tf32/implicit_gemm_tf32"),),
    K + "conv2d/05_implicit_gemm_pipelined.cuh": ((CONV, "conv2d/fp32/implicit_gemm_pipelined"),),
    K + "conv2d/06_winograd.cuh": ((CONV, "conv2d/fp32/winograd"),),
    K + "conv2d/07_implicit_gemm_wgmma.cuh": ((CONV, "conv2d/tf32/implicit_gemm_wgmma"),
                                              ("bench_conv_nhwc.json", "conv2d_nhwc/fp16/best")),
    K + "conv2d/08_winograd_fused.cuh": ((CONV, "conv2d/fp32/winograd_fused"),),
    K + "conv2d/09_implicit_gemm_wgmma_fp32_emulated.cuh": (
        (CONV, "conv2d/fp32_emulated/best_vs_cudnn"),
        (CONV, "conv2d_nhwc/fp32_emulated/best_vs_cudnn")),
    K + "conv2d/10_few_channels_mma.cuh": (("bench_conv_nhwc.json", "conv2d_nhwc/fp16/few_channels_vs_fold"),
                                           ("bench_conv_nhwc.json", "conv2d_nhwc/bf16/few_channels_vs_fold")),
    K + "conv2d/11_few_channels_persistent.cuh": (("bench_conv_nhwc.json", "conv2d_nhwc/fp16/persistent_vs_one_band"),
                                                  ("bench_conv_nhwc.json", "conv2d_nhwc/bf16/persistent_vs_one_band")),
    # best's 3x3 NHWC layers since 2026-12-07 (results/h100/bench_conv_halo_*; the H200's: the best rows of
    # bench_conv.json, whose run is later than step 12)
    K + "conv2d/12_implicit_gemm_wgmma_halo.cuh": (),
    # fp32_emulated's 3x3 stride-1 layers where it wins (results/h200/bench_conv_fp32_emulated_halo_2026-12-07.json)
    K + "conv2d/13_implicit_gemm_wgmma_halo_fp32_emulated.cuh": (),
    K + "conv2d/backward/01_naive.cuh": (),  # the correctness baseline, not benchmarked
    K + "conv2d/backward/03_wgrad_wgmma.cuh": ((CONV, "conv2d_backward/fp16/filter"),
                                               (CONV, "conv2d_backward/bf16/filter")),
    K + "conv2d/backward/04_wgrad_wgmma_tf32.cuh": (
        (CONV, "conv2d_backward/tf32/filter_wgmma"),),
    # Exact fp32 NCHW: measured through torch (bench_python.json's conv2d_train fp32 rows);
    # bench_conv_backward's cuDNN graphs are NHWC only.
    K + "conv2d/backward/05_wgrad_simt_fp32.cuh": (),
    K + "conv2d/backward/06_wgrad_winograd.cuh": (),  # through torch too (bench_python's fp32 NCHW rows)
    K + "conv2d/backward/07_dgrad_parity_fp32.cuh": (),  # through torch (conv2d_wgrad_fp32.json's stem dx row)
    # best's dx runs step 8 on the stem alone (the strided few-channel layers).
    K + "conv2d/backward/08_dgrad_parity_mma.cuh": tuple(
        (CONV, f"conv2d_backward/{t}/data", "n16_c3_") for t in ("fp16", "bf16", "tf32")),
    K + "conv2d/backward/09_wgrad_mma_tf32_pointwise.cuh": (),  # not yet run on the H200 (tf32/filter 1x1 rows)
    K + "filter2d/01_naive.cuh": ((FIL, "filter2d/fp32/naive"),),
    K + "filter2d/02_constant_memory.cuh": ((FIL, "filter2d/fp32/constant_memory"),),
    K + "filter2d/03_smem_tiled.cuh": ((FIL, "filter2d/fp32/smem_tiled"),),
    K + "filter2d/04_register_window.cuh": ((FIL, "filter2d/fp32/register_window"),),
    K + "filter2d/05_rolling_window.cuh": ((FIL, "filter2d/fp32/rolling_window"),),
    K + "filter2d/06_tma_pipeline.cuh": ((FIL, "filter2d/fp32/tma_pipeline"),),
}

BASELINE_NAMES = {"cublas": "cuBLAS", "cublaslt": "cuBLASLt", "cudnn": "cuDNN", "copy": "copy", "cub": "CUB",
                  "unfused": "unfused"}
_cache = {}


def runs(json_name):
    """{row prefix "op/type/impl": [(size, record)]} of one committed file, in file order."""
    if json_name not in _cache:
        source = report.Source(str(RESULTS / json_name))
        rows = {}
        for name, record in source.runs.items():
            fields = report.name_fields(name, source.family)
            if len(fields) >= 4:
                rows.setdefault("/".join(fields[:3]), []).append(("/".join(fields[3:]), record))
        _cache[json_name] = (source, rows)
    return _cache[json_name]


def rate(record):
    for counter, unit in report.RATE_COUNTERS:
        if counter in record["counters"]:
            return record["counters"][counter], unit
    return None, None


def comparisons(counters):
    """'0.94x cuBLAS' for every frac_<baseline> counter (same run), plus the fraction of peak."""
    out = []
    for key, value in counters.items():
        if key.startswith("frac_") and key != "frac_peak":
            who = key[len("frac_"):]
            out.append(f"{value:.2f}x {BASELINE_NAMES.get(who, who)}")
        elif key.startswith("speedup_vs_"):
            out.append(f"{value:.2f}x {key[len('speedup_vs_'):]}")
    return ", ".join(out)


def step_rows(step_path):
    """[(json file, row prefix, [(size, rate, unit, comparisons, % of peak)])] measured for a step."""
    if step_path not in STEP_ROWS:
        raise KeyError(f"{step_path}: no entry in docs/sitegen/figures.py STEP_ROWS (add the benchmark rows that "
                       f"measure it, or an empty tuple if none do)")
    out = []
    for json_name, prefix, *sizes in STEP_ROWS[step_path]:
        _, rows = runs(json_name)
        cells = []
        for size, record in rows.get(prefix, []):
            value, unit = rate(record)
            if value is None or (sizes and not size.startswith(sizes[0])):
                continue
            peak = record["counters"].get("frac_peak")
            cells.append((size, value, unit, comparisons(record["counters"]), peak))
        out.append((json_name, prefix, cells))
    return out


def device_line(json_name):
    ctx = runs(json_name)[0].context
    return (f"{ctx.get('gpu_name', 'unknown GPU')}, compute capability {ctx.get('gpu_compute_capability', '?')}, "
            f"CUDA runtime {ctx.get('cuda_runtime_version', '?')}, run of {str(ctx.get('date', '?'))[:10]}")
