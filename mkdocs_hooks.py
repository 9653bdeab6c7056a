"""MkDocs hooks: docs/RESULTS.md and docs/benchmarks.md show the benchmark plots where the benchmarks
wrote them (``../bench/results/...``, outside ``docs/``), so the site takes those files in and points
there. (The Models and Benchmarks pages are generated into docs/ by ``python tools/docs_pages.py``;
a test keeps them current.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_FROM, _TO = "](../bench/results/", "](bench/results/"


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).parent
    for image in sorted((root / "bench" / "results").rglob("*.png")):
        uri = image.relative_to(root).as_posix()
        files.append(File(uri, src_dir=str(root), dest_dir=config.site_dir, use_directory_urls=False))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return markdown.replace(_FROM, _TO) if page.file.src_uri in {"RESULTS.md", "benchmarks.md"} else markdown
