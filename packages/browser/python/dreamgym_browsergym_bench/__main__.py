"""A JSON-lines server that maps pages with BrowserGym, for benchmarks/axtree.ts.

It launches the system Chromium through BrowserGym's own Playwright (Python), with the flags
DreamGym uses, and answers one request per line on standard input:

    {"url": "http://127.0.0.1:8000/form.html", "repeats": 5, "miniwob_seed": null}

with one line on standard output:

    {"text": "<flattened tree>", "ms": [12.3, ...], "nodes": 412}

`ms` times BrowserGym's whole observation pipeline, as its environment runs it for every
step (`BrowserEnv._get_obs`): marking the DOM with ids, the DOM snapshot, the merged AX tree
of all frames, the focused element, the extra properties, then `flatten_axtree_to_str` with
its defaults and the clean-up of the marks. A MiniWoB++ page is started with its seed first,
as @dreamgym/browser does. An empty line or end of input stops the server.
"""

from __future__ import annotations

import json
import os
import sys
import time

from browsergym.core.observation import (
    _post_extract,
    _pre_extract,
    extract_dom_extra_properties,
    extract_dom_snapshot,
    extract_focused_element_bid,
    extract_merged_axtree,
)
from browsergym.utils.obs import flatten_axtree_to_str
from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def observe(page) -> tuple[str, int]:
    """One BrowserGym observation of `page`: the flattened tree and the number of AX nodes."""
    _pre_extract(page, tags_to_mark="standard_html", lenient=False)
    try:
        dom = extract_dom_snapshot(page)
        axtree = extract_merged_axtree(page)
        extract_focused_element_bid(page)
        extra_properties = extract_dom_extra_properties(dom, scale_factor=1.0)
    finally:
        _post_extract(page)
    return flatten_axtree_to_str(axtree, extra_properties=extra_properties), len(axtree["nodes"])


def start_miniwob(page, seed) -> None:
    page.wait_for_function("typeof core !== 'undefined' && typeof core.startEpisodeReal === 'function'")
    page.evaluate(
        "(seed) => { Math.seedrandom(seed); core.setDataMode('train'); core.EPISODE_MAX_TIME = 600000; core.startEpisodeReal(); }",
        seed,
    )
    page.wait_for_function("WOB_TASK_READY === true")


def main() -> int:
    executable = os.environ.get("DREAMGYM_CHROMIUM") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        print(json.dumps({"ready": True, "version": browser.version}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            request = json.loads(line)
            page = context.new_page()
            try:
                page.goto(request["url"], wait_until="load")
                if request.get("miniwob_seed") is not None:
                    start_miniwob(page, request["miniwob_seed"])
                page.wait_for_timeout(request.get("settle_ms", 300))
                timings = []
                text, nodes = "", 0
                for _ in range(int(request.get("repeats", 5))):
                    started = time.perf_counter()
                    text, nodes = observe(page)
                    timings.append((time.perf_counter() - started) * 1000)
                print(json.dumps({"text": text, "ms": timings, "nodes": nodes}), flush=True)
            except Exception as error:  # noqa: BLE001 - reported to the caller, which fails loudly
                print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
            finally:
                page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
