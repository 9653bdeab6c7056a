"""MkDocs hooks: docs/RESULTS.md shows the benchmark plots where the benchmarks wrote them
(``../bench/results/...``, outside ``docs/``), so the site takes those files in and points there; the
Models and Benchmarks pages are generated from the model folders and the result files
(``tools/docs_pages.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_FROM, _TO = "](../bench/results/", "](bench/results/"


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).parent
    sys.path.insert(0, str(root))
    from sieveqa.models.zoo import SHIPPED
    from tools.docs_pages import benchmarks, model_cards

    files.append(File.generated(config, "models.md", content=model_cards(root, SHIPPED)))
    files.append(File.generated(config, "benchmarks.md", content=benchmarks(root)))
    for image in sorted((root / "bench" / "results").rglob("*.png")):
        uri = image.relative_to(root).as_posix()
        files.append(File(uri, src_dir=str(root), dest_dir=config.site_dir, use_directory_urls=False))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return markdown.replace(_FROM, _TO) if page.file.src_uri == "RESULTS.md" else markdown
