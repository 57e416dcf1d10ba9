#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Puts kernelforge-doctor's text output (from the H200, written by
scripts/gpu_check.sh's doctor step as $OUT/doctor/doctor.txt) into the documentation
site's errors page (docs/pages/howto/errors.md; the README points there) between the
markers <!-- doctor:begin --> and <!-- doctor:end -->.

    python3 tools/doctor/update_readme.py out/doctor/doctor.txt [PAGE.md]
"""
import os
import sys


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    readme = argv[2] if len(argv) == 3 else os.path.join(root, "docs", "pages", "howto", "errors.md")
    output = open(argv[1], encoding="utf-8").read().rstrip("\n")
    text = open(readme, encoding="utf-8").read()
    begin, end = "<!-- doctor:begin -->", "<!-- doctor:end -->"
    if begin not in text or end not in text:
        sys.exit(f"{readme}: markers {begin} / {end} not found")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    block = f"{begin}\n```\n$ kernelforge-doctor\n{output}\n```\n{end}"
    open(readme, "w", encoding="utf-8").write(head + block + tail)
    print(f"updated {readme}")


if __name__ == "__main__":
    main(sys.argv)
