"""The question page of ``sieveqa serve`` in Chromium, answering over the demo corpus: the picture in
the README (docs/img/serve-page.png).

    python bench/serve_screenshot.py --out docs/img/serve-page.png
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from _common import served
from playwright.sync_api import sync_playwright


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--question", default="What protein carries oxygen in octopus blood?")
    parser.add_argument("--port", type=int, default=8767)
    parser.add_argument("--out", type=Path, default=Path("docs/img/serve-page.png"))
    args = parser.parse_args()
    index = "runs/demo-index"  # as make demo builds it
    if not Path(index).exists():
        sieveqa = str(Path(sys.executable).parent / "sieveqa")
        subprocess.run([sieveqa, "index", "corpus", "--input", "demo", "--out", index], check=True)
    with served("--index", index, port=args.port) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 900, "height": 900})
        page.goto(url)
        page.fill("#question", args.question)
        page.click("#submit")
        page.wait_for_selector("#result:not([hidden])")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out), full_page=True)
        browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
