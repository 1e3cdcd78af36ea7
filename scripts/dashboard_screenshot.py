"""Take the README's screenshot of a running dashboard with Debian's Chromium (Playwright).

    python scripts/dashboard_screenshot.py --url http://127.0.0.1:8000/ --out docs/images/dashboard.png

docs/demo.md says how the README's picture was made (the demo's dashboard after ``perftrack demo``).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000/")
    parser.add_argument("--out", type=Path, default=Path("docs/images/dashboard.png"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=760)
    options = parser.parse_args()
    options.out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": options.width, "height": options.height})
        page.goto(options.url, wait_until="networkidle")
        page.screenshot(path=str(options.out))
        browser.close()
    print(f"wrote {options.out}")


if __name__ == "__main__":
    main()
