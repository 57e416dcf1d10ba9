#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Opens the built documentation site in headless Chromium, served over HTTP on 127.0.0.1 as a
published site is (from file:// Material's search box cannot load its index), and checks what a
reader sees:

  - every HTML page of the site (MkDocs pages and the Doxygen reference) loads without a
    console error, an uncaught exception or a failed resource load;
  - every image renders: it decoded (natural size) and, with every folded block opened,
    takes up a non-zero box on the page;
  - every step section of the learning-path pages (learn/<family>.html) shows its measured
    figure: the bold "On the H200 at ..." line or the "Measured on the H200" block, or says
    "Not measured on the H200";
  - screenshots of three pages are written to <site>/../screenshots/ (the build tree).

    python3 docs/check_site_browser.py [--site build-docs/site] [--chromium PATH]

Needs Chromium (Debian: apt-get install chromium) and Python's standard library only: it
drives Chromium through the DevTools protocol over a pipe (--remote-debugging-pipe), so no
websocket client and no network are needed. Without Chromium it says so and exits 77 (skipped).
Exit codes: 0 all checks passed, 1 a check failed, 2 bad arguments or no site, 77 no Chromium.
"""
import argparse
import base64
import functools
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKIPPED = 77
SCREENSHOTS = ["index.html", "learn/matmul.html", "compare/h200.html"]
PAGE_TIMEOUT_S = 30
SETTLE_S = 0.05  # after the checks: scripts that run late (search index, highlighting) report their errors

# Run in the page after load: open every folded block, wait for every image, report each one.
IMAGES_JS = """(async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const images = [...document.images];
  await Promise.all(images.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return images.map(i => { const b = i.getBoundingClientRect();
    return {src: i.getAttribute('src'), natural: i.naturalWidth * i.naturalHeight, box: b.width * b.height}; });
})()"""

# Run on a learning-path page: for each "Step N" section (an h3 up to the next h2/h3), whether it shows a figure.
STEP_FIGURES_JS = """(() => {
  const out = [];
  for (const h of document.querySelectorAll('article h3')) {
    if (!/^Step \\d+:/.test(h.textContent.trim())) continue;
    let shown = false;
    for (let e = h.nextElementSibling; e && !/^H[23]$/.test(e.tagName); e = e.nextElementSibling) {
      const strong = [...e.querySelectorAll('strong')].some(s => s.textContent.startsWith('On the H200 at'));
      const block = e.matches('details') && /Measured on the H200/.test(e.querySelector('summary')?.textContent || '');
      const none = /Not measured on the H200/.test(e.textContent);
      const box = e.getBoundingClientRect();
      if ((strong || block || none) && box.width > 0 && box.height > 0) shown = true;
    }
    out.push({step: h.textContent.replace(/\\s*¶\\s*$/, '').trim(), shown});
  }
  return out;
})()"""


def find_chromium(given):
    for name in ([given] if given else ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """Headless Chromium driven over the DevTools pipe: commands on fd 3, replies and events on fd 4,
    each message a JSON document ending in a NUL byte."""

    def __init__(self, chromium, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def pipes_as_3_and_4():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        flags = ["--headless=new", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run",
                 "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
                 f"--user-data-dir={profile}", "--window-size=1280,900"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox (CI containers)
        self.process = subprocess.Popen([chromium, *flags, "about:blank"], pass_fds=(3, 4),
                                        preexec_fn=pipes_as_3_and_4, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.next_id, self.buffer, self.events = 0, b"", []

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe (it exited)")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=PAGE_TIMEOUT_S):
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self.to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, session, timeout=PAGE_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        for i, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method and message.get("sessionId") == session:
                return message
            self.events.append(message)

    def drain(self, seconds):
        """Collects the events that arrive in the next `seconds` (the page's late errors)."""
        import select
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if b"\0" not in self.buffer and not select.select([self.from_browser], [], [],
                                                               max(0.0, deadline - time.monotonic()))[0]:
                break
            self.events.append(self._read_message(deadline + PAGE_TIMEOUT_S))

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def errors_in(events, session, base_url):
    """The console errors, uncaught exceptions and failed loads among the page's events. The browser's own
    request for /favicon.ico (Doxygen's pages name no icon) is not the page's."""
    out = []
    for e in events:
        if e.get("sessionId") != session:
            continue
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                              for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("uncaught: " + d.get("exception", {}).get("description", d.get("text", "")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            if entry.get("url") == base_url + "favicon.ico":
                continue
            out.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".rstrip())
    return out


def evaluate(browser, session, expression):
    result = browser.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                               "returnByValue": True}, session)
    if "exceptionDetails" in result:
        raise RuntimeError(f"page script failed: {result['exceptionDetails'].get('text')}")
    return result["result"].get("value")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site):
    """An HTTP server for `site` on a free port of 127.0.0.1, in a thread; returns (server, base URL)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def check_page(browser, session, base_url, page, shots):
    """Loads one page; returns its problems (strings). Writes its screenshot if it is one of SCREENSHOTS."""
    browser.events = [e for e in browser.events if e.get("sessionId") != session]
    browser.send("Page.navigate", {"url": base_url + page}, session)
    browser.wait_for("Page.loadEventFired", session)
    problems = []
    if page in SCREENSHOTS:
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session)
        (shots / page.replace("/", "-").replace(".html", ".png")).write_bytes(base64.b64decode(shot["data"]))
    for image in evaluate(browser, session, IMAGES_JS):
        if not image["natural"]:
            problems.append(f"image {image['src'][:100]} did not load or decode")
        elif not image["box"]:
            problems.append(f"image {image['src'][:100]} renders with zero size")
    if page.startswith("learn/") and page != "learn/index.html":
        sections = evaluate(browser, session, STEP_FIGURES_JS)
        if not sections:
            problems.append("a learning-path page with no 'Step N:' sections")
        problems += [f"{s['step']}: its figure is not shown" for s in sections if not s["shown"]]
    browser.drain(SETTLE_S)
    return errors_in(browser.events, session, base_url) + problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=pathlib.Path, default=ROOT / "build-docs" / "site",
                    help="the built site (default: build-docs/site, what docs/build_site.py writes)")
    ap.add_argument("--chromium", help="the browser to run (default: chromium, then chrome, on PATH)")
    args = ap.parse_args(argv)
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        print(f"no site at {site} (build it: python3 docs/build_site.py)", file=sys.stderr)
        return 2
    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("SKIPPED: the browser check needs Chromium (Debian/Ubuntu: apt-get install chromium)")
        return SKIPPED
    pages = sorted(str(p.relative_to(site)).replace(os.sep, "/") for p in site.rglob("*.html")
                   if "source" not in p.relative_to(site).parts[:1])
    shots = site.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    begin = time.monotonic()
    failures = {}
    server, base_url = serve(site)
    with tempfile.TemporaryDirectory(prefix="kf-chromium-") as profile:
        browser = Browser(chromium, profile)
        try:
            target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                browser.send(f"{domain}.enable", session=session)
            for page in pages:
                problems = check_page(browser, session, base_url, page, shots)
                if problems:
                    failures[page] = problems
        finally:
            browser.close()
            server.shutdown()
    for page, problems in failures.items():
        for problem in problems:
            print(f"FAILED {page}: {problem}")
    written = [p.name for p in sorted(shots.glob("*.png"))]
    print(f"{len(pages)} pages opened in {os.path.basename(chromium)}, {len(failures)} with problems; "
          f"screenshots in {shots}: {', '.join(written) or 'none'} ({time.monotonic() - begin:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
