"""A headless Chromium from the distribution's packages (``apt-get install chromium chromium-driver``),
driven by Selenium through the distribution's chromedriver: nothing is downloaded.

Used by ``tests/view/test_view.py`` and ``benchmarks/view.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("LLMVCR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = (
    os.environ.get("LLMVCR_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)
MISSING = (
    "the page tests need Chromium and its driver from the distribution: apt-get install -y chromium "
    "chromium-driver (or name them with LLMVCR_CHROMIUM and LLMVCR_CHROMEDRIVER)"
)


def start(profile: str | None = None, flags: tuple[str, ...] = ()) -> Any:
    """A new headless Chromium with a fresh profile, logging every network request it makes;
    ``flags``: more command-line switches (``--host-resolver-rules=...``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            raise RuntimeError(f"{path} not found: {MISSING}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, *flags, f"--user-data-dir={profile or tempfile.mkdtemp(prefix='llmvcr-chromium-')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def open_page(driver: Any, path: str | Path, fragment: str = "", timeout: float = 60) -> None:
    """Load the page from its file and wait until it has drawn everything (``body[data-ready]``)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(Path(path).resolve().as_uri() + fragment)
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body.dataset.ready") == "1"
    )


def requests_made(driver: Any) -> list[str]:
    """The URLs of every request a page opened from a file made since the last call (the DevTools
    network log; the browser's own start page is not one)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message.get("method") == "Network.requestWillBeSent" and params["documentURL"].startswith("file:"):
            urls.append(params["request"]["url"])
    return urls


def paint_times(driver: Any, timeout: float = 30) -> dict[str, float]:
    """Milliseconds from navigation to first paint, first contentful paint and the page drawn (once
    the browser has painted: a small page is drawn before its first paint)."""
    from selenium.webdriver.support.ui import WebDriverWait

    painted = "return performance.getEntriesByName('first-contentful-paint').length"
    WebDriverWait(driver, timeout, poll_frequency=0.02).until(lambda d: d.execute_script(painted))
    return dict(
        driver.execute_script(
            "const out = {};"
            "for (const e of performance.getEntriesByType('paint')) out[e.name] = e.startTime;"
            "for (const e of performance.getEntriesByName('llmvcr-drawn')) out['drawn'] = e.startTime;"
            "return out;"
        )
    )
