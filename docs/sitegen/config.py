# SPDX-License-Identifier: Apache-2.0
"""mkdocs.yml for the build tree: the Material theme, no fonts or scripts fetched from
the network, strict link and navigation checks, and the navigation the builders made.
Written as JSON, which is YAML, so the generator needs no YAML library."""
import json


def mkdocs_config(docs_dir, site_dir, nav):
    return {
        "site_name": "kernelforge",
        "site_description": "CUDA kernels from naive to fast, with a C++ API: the learning path, how-tos, "
                            "GPU comparisons and the API reference",
        "docs_dir": str(docs_dir),
        "site_dir": str(site_dir),
        "use_directory_urls": False,  # the site opens from the file system too
        "theme": {
            "name": "material",
            "font": False,  # no web fonts: the site builds and reads offline
            "features": ["navigation.sections", "navigation.indexes", "navigation.top", "content.code.copy",
                         "search.highlight"],
            "palette": {"primary": "indigo"},
        },
        "plugins": ["search"],
        "markdown_extensions": [
            "admonition", "attr_list", "tables", "md_in_html", "pymdownx.details", "pymdownx.superfences",
            {"toc": {"permalink": True}},
            {"pymdownx.highlight": {"use_pygments": True}},
        ],
        "validation": {
            "nav": {"omitted_files": "warn", "not_found": "warn", "absolute_links": "warn"},
            "links": {"not_found": "warn", "absolute_links": "warn", "unrecognized_links": "warn",
                      "anchors": "warn"},
        },
        "nav": nav,
    }


def write(path, docs_dir, site_dir, nav):
    path.write_text(json.dumps(mkdocs_config(docs_dir, site_dir, nav), indent=1) + "\n", encoding="utf-8")
