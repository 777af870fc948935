"""A real headless Chromium, driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
commands on fd 3, answers on fd 4, each a JSON text ended by NUL). No package beyond Python's own.

    with Browser() as browser:
        browser.navigate("https://localhost:8443/")
        browser.wait_for("document.querySelector('#sign-in') !== null")
        browser.evaluate("document.querySelector('#sign-in').click()")
"""

import json
import os
import shutil
import subprocess
import tempfile
import time


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, binary=None, timeout=20.0):
        self.binary = binary or shutil.which("chromium") or shutil.which("chromium-browser")
        if not self.binary:
            raise BrowserError("chromium is not installed")
        self.timeout = timeout
        self.next_id = 0
        self.events = []
        self.buffer = b""

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="siwa-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def child_fds():
            # Through high numbers first, so neither end lands on the other's target, and so that
            # dup2 always makes a new, inheritable descriptor.
            os.dup2(to_browser_r, 100)
            os.dup2(from_browser_w, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)

        self.process = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--ignore-certificate-errors", "--no-first-run", "--no-default-browser-check",
             "--disable-background-networking", "--disable-extensions", "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "about:blank"],
            # preexec_fn runs before close_fds would close 3 and 4 again, so nothing is closed here.
            close_fds=False, preexec_fn=child_fds,
            stdout=subprocess.DEVNULL, stderr=None if os.environ.get("BROWSER_DEBUG") else subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self.to_browser)
        os.close(self.from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        import select
        while b"\0" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError("timed out waiting for the browser")
            ready, _, _ = select.select([self.from_browser], [], [], remaining)
            if ready:
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    raise BrowserError("the browser closed the pipe")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=False):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def evaluate(self, expression, gesture=False):
        """The value of a JavaScript expression in the page (promises awaited); with `gesture`, run as
        if the person had clicked (a page may open a window only then)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True,
                                                "userGesture": gesture}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def navigate(self, url):
        self.send("Page.navigate", {"url": url}, session=True)

    def wait_for(self, expression, what=None):
        """Polls until the expression is truthy in the current page (pages change under it)."""
        deadline = time.monotonic() + self.timeout
        last = None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
                if value:
                    return value
            except BrowserError as error:
                last = error  # the page is being replaced
            time.sleep(0.1)
        raise BrowserError(f"timed out waiting for {what or expression} (at {self.url()}; {last})")

    def popup(self):
        """Attaches to the window the page opened last (window.open) and makes it the one the other
        methods act on, until `back()`. Call `watch_popups()` before the page opens it."""
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events:
                if event.get("method") == "Target.targetCreated":
                    info = event["params"]["targetInfo"]
                    if info.get("type") == "page" and info.get("openerId") and info["targetId"] not in self.seen_popups:
                        self.seen_popups.add(info["targetId"])
                        self.opener_session = self.session
                        self.session = self.send("Target.attachToTarget", {"targetId": info["targetId"], "flatten": True})["sessionId"]
                        self.send("Runtime.enable", session=True)
                        return info["targetId"]
            if time.monotonic() > deadline:
                raise BrowserError("no popup opened")
            try:
                self.events.append(self._read_message(time.monotonic() + 0.2))
            except BrowserError:
                pass

    def watch_popups(self):
        """Reports the windows pages open (window.open), for `popup()`."""
        self.seen_popups = set()
        self.send("Target.setDiscoverTargets", {"discover": True})

    def back(self):
        """Acts on the page that opened the popup again."""
        self.session = self.opener_session

    def url(self):
        try:
            return self.evaluate("location.href")
        except BrowserError:
            return "?"

    def cookies(self):
        return self.send("Storage.getCookies")["cookies"]

    def set_viewport(self, width, height):
        """Emulates a screen of width × height CSS pixels (a phone when narrow)."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}, session=True)

    def screenshot(self, path):
        """Saves a PNG of the page."""
        import base64
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))
