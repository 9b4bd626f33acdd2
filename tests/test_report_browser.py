"""A real browser opens the reports: no console errors, every figure present and visible.

Headless Chromium (Debian's package; `make test` installs it when missing) is driven over
the DevTools protocol on a pipe (--remote-debugging-pipe: NUL-separated JSON on file
descriptors 3 and 4), so no extra Python package is needed. The page is loaded from disk
with the network cut off, as a reader who got it by mail would open it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gossiplab.multirun.compare import compare_runs
from gossiplab.multirun.sweep import run_sweep
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs Debian's chromium (make test installs it: apt-get install -y chromium)",
)
MAP_FDS_AND_EXEC = """
import fcntl, os, sys
read, write = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3])
os.dup2(read, 3)
os.dup2(write, 4)
os.execv(sys.argv[3], sys.argv[3:])
"""

# Every <img>, <figure> and console problem on the page, as plain data.
INSPECT = """
(() => {
  const visible = (el) => {
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none";
  };
  return {
    title: document.title,
    images: [...document.images].map((img) => ({
      alt: img.alt, complete: img.complete, width: img.naturalWidth,
      height: img.naturalHeight, visible: visible(img),
    })),
    figures: [...document.querySelectorAll("figure")].map((f) => ({
      title: f.querySelector("h3")?.textContent ?? "",
      caption: f.querySelector("figcaption p")?.textContent ?? "",
      image: f.querySelector("img") !== null,
      nodata: f.querySelector(".nodata") !== null,
      visible: visible(f),
    })),
    links: [...document.querySelectorAll("a[href]")].map((a) => a.getAttribute("href")),
    nodata_texts: [...document.querySelectorAll(".nodata")].map((p) => p.textContent),
  };
})()
"""


class Browser:
    """Chromium over --remote-debugging-pipe: send a command, read its answer and events."""

    def __init__(self, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # The protocol wants exactly fds 3 and 4: a tiny Python step maps our pipes there
        # (first moved above 9, so neither can be overwritten) and execs Chromium.
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                MAP_FDS_AND_EXEC,
                str(to_browser_r),
                str(from_browser_w),
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "--window-size=1200,900",
                "about:blank",
            ],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def command(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read()
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.command("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    chromium = Browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chromium
    finally:
        chromium.close()


def open_page(browser: Browser, page: Path, screenshot: Path) -> dict[str, Any]:
    """Load ``page`` offline; return what INSPECT finds plus the console problems."""
    target = browser.command("Target.createTarget", url="about:blank")["targetId"]
    session = browser.command("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.events.clear()
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.command(f"{domain}.enable", session)
    browser.command(
        "Network.emulateNetworkConditions",
        session,
        offline=True,
        latency=0,
        downloadThroughput=-1,
        uploadThroughput=-1,
    )
    browser.command("Page.navigate", session, url=page.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    found = browser.command("Runtime.evaluate", session, expression=INSPECT, returnByValue=True)[
        "result"
    ]["value"]
    shot = browser.command(
        "Page.captureScreenshot", session, format="png", captureBeyondViewport=True
    )
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    found["problems"] = [_problem(e) for e in browser.events if _problem(e)]
    browser.command("Target.closeTarget", targetId=target)
    return found


def _problem(event: dict[str, Any]) -> str:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        return f"exception: {params['exceptionDetails'].get('text')}"
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        return f"console.{params['type']}: {params.get('args')}"
    if method == "Log.entryAdded" and params["entry"]["level"] == "error":
        return f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}"
    if method == "Network.loadingFailed":
        return f"failed to load: {params.get('errorText')}"
    return ""


def check_page(found: dict[str, Any], figures_with_data: int) -> None:
    assert found["problems"] == []
    assert len(found["images"]) == figures_with_data
    for image in found["images"]:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image
        assert image["visible"], image
    for figure in found["figures"]:
        assert figure["visible"] and figure["title"] and figure["caption"], figure
        assert figure["image"] != figure["nodata"], figure  # a picture, or says why not
    assert sum(f["image"] for f in found["figures"]) == figures_with_data


def small_run(tmp_path: Path, name: str, latency: str) -> Path:
    s = parse_scenario(
        {
            "name": name,
            "topology": {"kind": "random-regular", "nodes": 30, "degree": 6},
            "network": {"latency": latency},
            "workload": {"messages": 60, "rate": "30/s", "warmup": "2s", "cooldown": "2s"},
        },
        base_dir=tmp_path,
    )
    return run(s, tmp_path / name).out_dir


def test_a_run_report_shows_every_figure_without_errors(browser: Browser, tmp_path: Path) -> None:
    folder = small_run(tmp_path, "run", "20ms")
    found = open_page(browser, folder / "report.html", tmp_path / "run.png")
    pngs = sorted((folder / "plots").glob("*.png"))
    # No drops in this run: that figure says so instead of showing an empty plot.
    check_page(found, figures_with_data=len(pngs))
    assert len(found["figures"]) == len(pngs) + 1
    assert {f["title"] for f in found["figures"] if f["nodata"]} == {"Drops by kind and reason"}
    assert "no drops" in found["nodata_texts"][0]
    assert found["title"] == "gossiplab — run"


def test_sweep_and_compare_pages_show_every_figure_without_errors(
    browser: Browser, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'name = "s"\n[topology]\nkind = "random-regular"\nnodes = 20\ndegree = 4\n'
        '[workload]\nmessages = 20\nwarmup = "2s"\ncooldown = "2s"\n'
        '[sweep]\n"network.latency" = ["5ms", "40ms"]\n'
    )
    outcome = run_sweep(sweep, tmp_path / "sweep", workers=1)
    found = open_page(browser, outcome.report, tmp_path / "sweep.png")
    check_page(found, figures_with_data=3)  # one trend figure, two overlays
    # The points' names link to their reports, which exist.
    assert [link for link in found["links"] if not link.startswith("#")] == [
        "network.latency=5ms/report.html",
        "network.latency=40ms/report.html",
    ]

    page = compare_runs([tmp_path / "sweep"], tmp_path / "compare")
    found = open_page(browser, page, tmp_path / "compare.png")
    check_page(found, figures_with_data=6)
