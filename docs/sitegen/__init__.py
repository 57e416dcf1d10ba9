# SPDX-License-Identifier: Apache-2.0
"""The documentation site's generator: turns the repository (step headers, benchmark
JSON, tuning notes, public headers, Python docstrings, hand-written pages under
docs/pages/) into MkDocs Markdown in a build tree. docs/build_site.py drives it."""
