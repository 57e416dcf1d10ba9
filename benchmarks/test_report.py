#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests for benchmarks/report.py (run by ctest, label cpu; Python 3 standard library):
the committed H200 results and two runs of the same GPU (bench_conv.json and
bench_conv_previous_run.json) become a markdown report with tables, and with
plots when matplotlib is installed (otherwise a clear note and tables only);
and for update_readme.py: the README's headline table and the site's full tables.

    python3 benchmarks/test_report.py
"""
import contextlib
import glob
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pathlib  # noqa: E402
import plot_matmul  # noqa: E402
import update_readme  # noqa: E402
import report  # noqa: E402
import report_plots  # noqa: E402

H200 = os.path.join(HERE, "results", "h200")


def run_report(*args):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(err):
        code = report.main(list(args))
    return code, out.getvalue(), err.getvalue()


class Report(unittest.TestCase):
    def test_tables_for_every_committed_h200_file(self):
        files = sorted(glob.glob(os.path.join(H200, "*.json")))
        self.assertGreaterEqual(len(files), 3)
        code, out, _ = run_report(*files)
        self.assertEqual(code, 0)
        for family in ("## conv", "## elementwise", "## matmul"):
            self.assertIn(family, out)
        self.assertIn("NVIDIA H200", out)
        self.assertIn("| op | type | size |", out)

    def test_two_runs_of_one_gpu_are_told_apart(self):
        runs = [os.path.join(H200, "bench_conv.json"), os.path.join(H200, "bench_conv_previous_run.json")]
        code, out, _ = run_report(*runs)
        self.assertEqual(code, 0)
        self.assertIn("NVIDIA H200 (h200/bench_conv.json)", out)
        self.assertIn("NVIDIA H200 (h200/bench_conv_previous_run.json)", out)
        self.assertIn("| GPU |", out.split("## conv")[1])  # a GPU/run column once there are two

    def test_out_dir_writes_report_and_plots_or_says_why_not(self):
        runs = [os.path.join(H200, "bench_conv.json"), os.path.join(H200, "bench_conv_previous_run.json"),
                os.path.join(H200, "bench_matmul.json")]
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_report(*runs, "--out", tmp)
            self.assertEqual(code, 0)
            md = open(os.path.join(tmp, "report.md"), encoding="utf-8").read()
            self.assertIn("## Plots", md)
            plt, reason = report_plots.matplotlib_or_reason()
            if plt is None:
                self.assertIn("pip install matplotlib", err)
                self.assertIn("No plots", md)
                print(f"note: {reason}", file=sys.stderr)
                return
            for family in ("conv", "matmul"):
                png = os.path.join(tmp, f"{family}.png")
                self.assertTrue(os.path.exists(png), png)
                with open(png, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
                self.assertIn(f"![{family}]({family}.png)", md)

    def test_fraction_notes(self):
        rc = report.RATE_COUNTERS
        rec = lambda **c: {"counters": c}
        row = {"best": rec(**{"GB/s": 900.0, "frac_copy": 0.9}), "cudnn": rec(**{"GB/s": 450.0}),
               "copy": rec(**{"GB/s": 1000.0, "frac_copy": 1.0}), "implicit_gemm": rec(**{"TFLOP/s": 30.0})}
        self.assertEqual(report_plots.fraction_note("best", row["best"], row, ["cudnn"], rc), "0.90x copy")
        self.assertEqual(report_plots.fraction_note("copy", row["copy"], row, ["cudnn"], rc), "")
        row2 = {"implicit_gemm": rec(**{"TFLOP/s": 30.0}), "cudnn": rec(**{"TFLOP/s": 40.0})}
        self.assertEqual(report_plots.fraction_note("implicit_gemm", row2["implicit_gemm"], row2, ["cudnn"], rc),
                         "0.75x cudnn")


class MatmulTables(unittest.TestCase):
    """plot_matmul's tables of the rows timed in turn (bench_matmul: time_gpu_paired)."""

    def setUp(self):
        _, self.rows = plot_matmul.load(os.path.join(H200, "bench_matmul.json"))
        # The rows it lacks from the other runs, as update_readme.py passes them (--extra).
        plot_matmul.add_missing_rows(self.rows, sorted(glob.glob(os.path.join(H200, "bench_matmul_*.json"))))

    def cells(self, table, label):
        line = next(l for l in table.splitlines() if l.startswith(f"| {label} "))
        return [c.strip() for c in line.strip("|").split("|")[1:]]

    def test_paired_table_has_every_precision_and_shape(self):
        table = plot_matmul.paired_table(self.rows)
        self.assertIn("timed in turn", table)
        for label in ("fp32 (best)", "TF32 (tensor_core_tf32)", "fp16 (best)", "bf16 (best)"):
            cells = self.cells(table, label)
            self.assertEqual(len(cells), 7)
            for c in cells:
                ratio, rates = c.split("<br>")[0].split(" ", 1)  # "<br>err ..." where the row has errors
                self.assertTrue(0.1 < float(ratio) < 10, c)  # ours / cuBLAS from the same pairs
                ours, theirs = (float(x) for x in rates.strip("()").split(" / "))
                self.assertAlmostEqual(float(ratio), ours / theirs, delta=0.01)

    def test_modes_table_and_the_separate_rows_table_keep_apart(self):
        modes = plot_matmul.modes_table(self.rows)
        for prec in ("tf32", "fp16", "bf16"):
            self.assertTrue(all(0.5 < float(c) < 2 for c in self.cells(modes, prec)))
        every = plot_matmul.all_shapes_table(self.rows)
        self.assertNotIn(plot_matmul.PAIRED, every)
        self.assertNotIn(plot_matmul.MODES, every)

    def test_no_paired_rows_no_table(self):
        rows = {k: v for k, v in self.rows.items() if k[1] not in (plot_matmul.PAIRED, plot_matmul.MODES)}
        self.assertEqual(plot_matmul.paired_table(rows), "")
        self.assertEqual(plot_matmul.modes_table(rows), "")


class UpdateReadme(unittest.TestCase):
    """update_readme.py: the README keeps a headline table between its markers; the full
    tables (and plots, with matplotlib) go where the caller says (the documentation site)."""

    def test_readme_section_is_replaced_between_the_markers(self):
        with tempfile.TemporaryDirectory() as tmp:
            readme = pathlib.Path(tmp, "README.md")
            readme.write_text("before\n<!-- results:begin -->\nold\n<!-- results:end -->\nafter\n")
            argv = sys.argv
            sys.argv = ["update_readme.py", "--readme", str(readme), "--results", H200]
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    update_readme.main()
            finally:
                sys.argv = argv
            text = readme.read_text()
            self.assertTrue(text.startswith("before\n") and text.endswith("after\n"))
            self.assertNotIn("old", text)
            self.assertIn("| 8 | large_tile |", text)  # the matmul progression at 4096^3

    def test_full_tables_have_every_family(self):
        with tempfile.TemporaryDirectory() as tmp:
            text = update_readme.full_tables(pathlib.Path(H200), pathlib.Path(tmp), "plots")
            for heading in ("## Elementwise", "## Matrix product", "## Convolution", "paired", "filter2d"):
                self.assertIn(heading, text)
            plt, _ = report_plots.matplotlib_or_reason()
            if plt is not None:
                self.assertIn("![matmul](plots/matmul.png)", text)
                self.assertTrue(os.path.exists(os.path.join(tmp, "matmul.png")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
