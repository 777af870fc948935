"""The web sign-in in a real headless Chromium, through nginx over TLS, against the Apple ID
emulator: the account page, the emulator's consent page, Apple's cross-site form post, the
signed-in page; the session cookie's flags; Origin checks on cookie writes; revoking a device;
signing out; a cancelled sign-in; a forged state; account deletion from the page; every page and
error page (404, 400, 429, the callback's) at a phone's and a laptop's size. With --unavailable
(siwa stopped): the account page and nginx's 503 pages."""

import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from browser import Browser  # noqa: E402

BASE = os.environ["E2E_URL"]
APPLE = os.environ["E2E_APPLE_URL"]
ADMIN_SECRET = open(os.environ["E2E_APPLE_ADMIN_SECRET_FILE"]).read().strip()
TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def ok(message):
    print(f"  ok: {message}")


def http(method, url, body=None, headers=None):
    """(status, parsed JSON or text) of one request."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if isinstance(body, dict):
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, context=TLS) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


VIEWPORTS = [(390, 844), (1280, 800)]
SCREENS = os.path.join(os.environ["E2E_TMP"], "screenshots")


def looks_finished(browser, name, ready="document.readyState === 'complete'"):
    """At a phone's and a laptop's size, the page `name` is no wider than the screen and is not raw
    JSON; a screenshot of a failure is kept in E2E_TMP/screenshots."""
    for width, height in VIEWPORTS:
        browser.set_viewport(width, height)
        browser.wait_for(ready, f"{name} at {width}px")
        wide = browser.evaluate("document.documentElement.scrollWidth")
        raw = browser.evaluate("document.body ? document.body.innerText.trim().startsWith('{') : true")
        if wide > width or raw:
            os.makedirs(SCREENS, exist_ok=True)
            shot = os.path.join(SCREENS, f"{name.replace(' ', '_')}-{width}.png")
            browser.screenshot(shot)
            fail(f"{name} at {width}x{height}: " + (f"{wide}px wide" if wide > width else "raw JSON") + f" (see {shot})")


def text(browser, element_id):
    return browser.evaluate(f"document.getElementById('{element_id}').textContent")


def signed_in(browser):
    browser.wait_for(f"location.href === '{BASE}/' && !document.getElementById('signed-in').hidden"
                     " && document.querySelectorAll('#sessions li').length > 0", "the signed-in page")


def consent(browser, email=None, hide=False):
    """On the emulator's consent page: Continue as the test user with this email (hiding it behind
    Hide My Email when `hide`), or Cancel."""
    browser.wait_for(f"location.href.startsWith('{APPLE}/auth/authorize') && document.getElementById('continue') !== null",
                     "the emulator's consent page")
    if email is None:
        browser.evaluate("document.getElementById('cancel').click()")
        return
    found = browser.evaluate(
        "(() => { const label = [...document.querySelectorAll('label')].find(l => l.textContent.includes("
        f"{json.dumps(email)})); if (!label) return false; label.querySelector('input').checked = true;"
        f"document.getElementById('{'hide-email' if hide else 'share-email'}').checked = true;"
        "document.getElementById('continue').click(); return true })()")
    if not found:
        fail(f"the consent page does not list {email}")


def start(browser):
    browser.navigate(BASE + "/")
    browser.wait_for("!document.getElementById('signed-out').hidden", "the sign-in button")
    browser.evaluate("document.getElementById('sign-in').click()")


def styled_page(browser, name, path, status_wanted, title=None):
    """`path` answers `status_wanted` with a styled page (not JSON), which looks finished in the browser."""
    status, body = http("GET", BASE + path, headers={"Accept": "text/html"})
    if status != status_wanted or not isinstance(body, str) or "<html" not in body or "app.css" not in body:
        fail(f"{name} ({path}): {status} {str(body)[:200]}")
    browser.navigate(BASE + path)
    ready = f"location.pathname === '{path.split('?')[0]}' && document.readyState === 'complete'"
    if title:
        ready += f" && document.title === {json.dumps(title)}"
    looks_finished(browser, name, ready)


def rate_limited_page(browser):
    """While other requests use up this address's /auth/ rate, the browser's sign-in click gets
    nginx's styled 429 page with Retry-After."""
    stop = threading.Event()
    limited = []

    # Each flood runs until the browser's page has loaded (at most 30 s): a flood that ended on its
    # own clock could end before a slow browser's request arrived, which then went through.
    def flood():
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(BASE + "/auth/web/complete?handle=flood", context=TLS):
                    pass
            except urllib.error.HTTPError as error:
                if error.code == 429:
                    limited.append((error.headers.get("Retry-After"), error.headers.get("Content-Type"), error.read().decode()))

    # Ten floods of ten threads at most: on a loaded machine (CI, with builds beside it) six threads
    # sometimes sent less than the rate (50/s), and the browser's request went through five times.
    for _ in range(10):
        threads = [threading.Thread(target=flood) for _ in range(10)]
        for thread in threads:
            thread.start()
        try:
            # This attempt's flood has used the rate up once a request of it was refused.
            before, deadline = len(limited), time.monotonic() + 5
            while len(limited) == before and time.monotonic() < deadline:
                time.sleep(0.02)
            browser.navigate(BASE + "/auth/web/start?return_to=/")
            title = browser.wait_for("document.readyState === 'complete' && document.title", "the sign-in click under load")
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            stop.clear()
        if title == "Too many attempts":
            break
    else:
        fail(f"the browser never got the 429 page while the rate was used up ({len(limited)} requests limited)")
    retry_after, content_type, body = limited[0]
    if retry_after != "5" or not content_type.startswith("text/html") or "app.css" not in body:
        fail(f"nginx's 429 on a browser path: Retry-After {retry_after}, {content_type}: {body[:200]}")
    looks_finished(browser, "the 429 page", "document.title === 'Too many attempts'")
    time.sleep(1)  # the rate is back for the checks that follow
    ok("too many requests: the browser's sign-in click gets a styled 429 page (Retry-After: 5), no wider than the screen")


def unavailable_pages():
    """siwa is stopped: the account page says so, and every web route gets nginx's styled 503."""
    with Browser() as browser:
        browser.navigate(BASE + "/")
        browser.wait_for("document.getElementById('notice').textContent.includes('unavailable')", "the account page's notice")
        looks_finished(browser, "the account page with siwa down")
        for name, path in [("the sign-in click with siwa down", "/auth/web/start?return_to=/"),
                           ("the completion with siwa down", "/auth/web/complete?handle=x")]:
            styled_page(browser, name, path, 503, "Temporarily unavailable")
    ok("siwa down: the account page says the service is unavailable; the web routes get a styled 503, no wider than the screen")


def main():
    if sys.argv[1:] == ["--unavailable"]:
        unavailable_pages()
        sys.exit(0)

    admin = {"Authorization": f"Bearer {ADMIN_SECRET}"}
    status, person = http("POST", APPLE + "/admin/users", {"email": "web.e2e@example.com", "firstName": "Web", "lastName": "Browser"}, admin)
    if status != 201:
        fail(f"the emulator user: {status} {person}")
    me_sub = person["id"]
    status, _ = http("POST", APPLE + "/admin/users", {"email": "hidden.e2e@example.com", "firstName": "Hidden", "lastName": "Address"}, admin)
    if status != 201:
        fail(f"the second emulator user: {status}")

    with Browser() as browser:
        # --- A first sign-in: button, consent page, form post, signed-in page.
        start(browser)
        authorize = browser.wait_for(f"location.href.startsWith('{APPLE}/auth/authorize') && location.href")
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorize).query)
        expected = {"response_type": ["code id_token"], "response_mode": ["form_post"], "scope": ["name email"],
                    "client_id": ["com.example.siwa.web"], "redirect_uri": [BASE + "/auth/callback"]}
        if any(query.get(name) != value for name, value in expected.items()) or not query.get("state") or not query.get("nonce"):
            fail(f"the authorize URL: {authorize}")
        consent(browser, "web.e2e@example.com")
        signed_in(browser)
        if text(browser, "user-name") != "Web Browser":
            fail(f"the name from the first authorization's user JSON: {text(browser, 'user-name')!r}")
        if "web.e2e@example.com" not in text(browser, "emails"):
            fail(f"the email: {text(browser, 'emails')}")
        if "Chrome on Linux" not in text(browser, "sessions") or "signed in on the web" not in text(browser, "sessions"):
            fail(f"the device list (the browser named from its User-Agent): {text(browser, 'sessions')}")
        if browser.evaluate("document.getElementById('progress').hidden") is not True:
            fail("the progress line shows for a user who never synced anything")
        if browser.evaluate("document.title") != "Web Browser: Example Lessons" or text(browser, "app-name") != "Example Lessons":
            fail(f"the signed-in page's title and heading (SIWA_APP_NAME): {browser.evaluate('document.title')}, {text(browser, 'app-name')}")
        looks_finished(browser, "the signed-in page", "!document.getElementById('signed-in').hidden")
        exported = browser.evaluate(
            "fetch(document.getElementById('download-data').href).then(async r => [r.status, r.headers.get('Content-Disposition'),"
            " (await r.json()).emails.map(e => e.address)])")
        if exported[0] != 200 or not exported[1].startswith("attachment") or exported[2] != ["web.e2e@example.com"]:
            fail(f"Download my data with the page's cookie: {exported}")
        cookies = {cookie["name"]: cookie for cookie in browser.cookies()}
        session = cookies.get("__Host-siwa_session")
        if not session or not session["httpOnly"] or not session["secure"] or session.get("sameSite") != "Lax" or session["path"] != "/":
            fail(f"the session cookie: {session}")
        if "__Host-siwa_signin" in cookies:
            fail("the browser-binding cookie was not cleared")
        ok("the page's button, the emulator's consent, the form post and the signed-in page with name, email, device and Download my data; "
           "the session cookie is __Host-, HttpOnly, Secure, SameSite=Lax")

        # --- Cookie writes need our Origin.
        cookie = f"__Host-siwa_session={session['value']}"
        status, _ = http("GET", BASE + "/auth/me", headers={"Cookie": cookie})
        if status != 200:
            fail(f"GET /auth/me with the cookie: {status}")
        for origin in [None, "https://evil.example", "null"]:
            headers = {"Cookie": cookie} | ({"Origin": origin} if origin else {})
            status, body = http("POST", BASE + "/auth/logout", headers=headers)
            if status != 403 or body.get("error") != "origin_mismatch":
                fail(f"a cookie write with Origin {origin}: {status} {body}")
        ok("cookie-authenticated writes without our Origin (none, another site, null) get 403 origin_mismatch")

        # --- A second device (a native sign-in of the same Apple user), revoked from the page.
        status, grant = http("POST", APPLE + "/admin/sign-in", {"userId": me_sub, "clientId": "com.example.siwa", "nonce": "web-e2e-native"}, admin)
        status, native = http("POST", BASE + "/auth/apple", {"identityToken": grant["identityToken"], "nonce": "web-e2e-native", "device": "Web's iPhone"})
        if status != 200 or native["user"]["firstName"] != "Web":
            fail(f"the native sign-in of the same person: {status} {native}")
        status, _ = http("POST", BASE + "/sync", {"cursor": None, "profile": {"totalXp": 120, "currentLevel": 2, "streakDays": 1,
                         "lastActiveDate": "2026-11-20"}}, {"Authorization": f"Bearer {native['accessToken']}"})
        if status != 200:
            fail(f"a sync from the second device: {status}")
        browser.evaluate("location.reload()")
        browser.wait_for("document.querySelectorAll('#sessions li').length === 2", "two devices")
        browser.wait_for("document.getElementById('progress').textContent.startsWith('Level 2 · 120 XP')",
                         "the progress line once the app synced (POST /sync with the cookie)")
        if "Web's iPhone" not in text(browser, "sessions") or "signed in with the app" not in text(browser, "sessions"):
            fail(f"the app's device in the list: {text(browser, 'sessions')}")
        browser.evaluate("document.querySelector('#sessions button.revoke').click()")
        browser.wait_for("document.querySelectorAll('#sessions li').length === 1", "one device after revoking")
        status, _ = http("GET", BASE + "/auth/me", headers={"Authorization": f"Bearer {native['accessToken']}"})
        if status != 401:
            fail(f"the revoked device's access token: {status}")
        ok("the same person's native session appears on the page as a second device; Revoke ends it")

        # --- Sign out, then a returning sign-in: the name is kept (no user JSON the second time).
        browser.evaluate("document.getElementById('sign-out').click()")
        browser.wait_for("!document.getElementById('signed-out').hidden", "the signed-out page")
        status, _ = http("GET", BASE + "/auth/me", headers={"Cookie": cookie})
        if status != 401:
            fail(f"the cookie after sign-out: {status}")
        browser.evaluate("document.getElementById('sign-in').click()")
        consent(browser, "web.e2e@example.com")
        signed_in(browser)
        if text(browser, "user-name") != "Web Browser":
            fail(f"the returning user's name: {text(browser, 'user-name')!r}")
        ok("sign out ends the cookie's session; a returning sign-in lands on the same user with the name kept")

        # --- A cancelled sign-in returns to the page with a readable message.
        browser.evaluate("document.getElementById('sign-out').click()")
        browser.wait_for("!document.getElementById('signed-out').hidden", "the signed-out page")
        browser.evaluate("document.getElementById('sign-in').click()")
        consent(browser, None)
        browser.wait_for(f"location.href === '{BASE}/' && document.getElementById('notice').textContent.includes('cancelled')",
                         "the cancelled message")
        # The page shows one of its two states once its own check of the session (GET /auth/me) answers.
        browser.wait_for("!document.getElementById('signed-out').hidden || !document.getElementById('signed-in').hidden",
                         "the page's state after the cancel")
        if not browser.evaluate("!document.getElementById('signed-out').hidden"):
            fail("signed in after a cancel")
        ok("Cancel at Apple returns to the page with \"Sign-in was cancelled.\" and no session")

        # --- A forged state posted to the callback.
        browser.evaluate(
            "(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/auth/callback';"
            "for (const [n, v] of [['state', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'], ['code', 'c'], ['id_token', 'x.y.z']]) {"
            "const i = document.createElement('input'); i.type = 'hidden'; i.name = n; i.value = v; f.append(i) }"
            "document.body.append(f); f.submit() })()")
        message = browser.wait_for("location.pathname === '/auth/callback' && document.getElementById('message')?.textContent",
                                   "the callback's error page")
        if "not valid" not in message:
            fail(f"a forged state: {message}")
        looks_finished(browser, "the callback's error page")
        ok(f"a forged state at /auth/callback gets the error page: \"{message}\"")

        # --- A Hide My Email sign-in (the longest address and its tags fit a phone), then delete the account from the page.
        start(browser)
        consent(browser, "hidden.e2e@example.com", hide=True)
        signed_in(browser)
        if "Hide My Email" not in text(browser, "emails"):
            fail(f"the relay address has no Hide My Email tag: {text(browser, 'emails')}")
        looks_finished(browser, "the signed-in page with a Hide My Email address", "!document.getElementById('signed-in').hidden")
        cookie = "__Host-siwa_session=" + {c["name"]: c for c in browser.cookies()}["__Host-siwa_session"]["value"]
        browser.evaluate("document.getElementById('delete-account').click()")
        if not browser.evaluate("!document.getElementById('delete-confirmation').hidden"
                                " && document.getElementById('delete-confirmation').textContent.includes('cannot be undone')"):
            fail("Delete account… shows no explanation")
        looks_finished(browser, "the deletion confirmation")
        browser.evaluate("document.getElementById('cancel-delete').click()")
        if not browser.evaluate("document.getElementById('delete-confirmation').hidden"):
            fail("Cancel left the deletion confirmation open")
        status, _ = http("GET", BASE + "/auth/me", headers={"Cookie": cookie})
        if status != 200:
            fail(f"the account after Cancel: {status}")
        browser.evaluate("document.getElementById('delete-account').click()")
        browser.evaluate("document.getElementById('confirm-delete').click()")
        browser.wait_for("!document.getElementById('signed-out').hidden && document.getElementById('notice').textContent.includes('deleted')",
                         "the deleted message")
        status, _ = http("GET", BASE + "/auth/me", headers={"Cookie": cookie})
        if status != 401:
            fail(f"the deleted account's cookie: {status}")
        ok("Delete account on the page explains and can be cancelled (the account stays); confirmed, the account is gone and the page is signed out")

        # --- Every page a browser can land on, at a phone's and a laptop's size: no sideways scrolling, no raw JSON.
        looks_finished(browser, "the signed-out page", "!document.getElementById('signed-out').hidden")
        if browser.evaluate("document.title") != "Sign in to Example Lessons":
            fail(f"the signed-out page's title: {browser.evaluate('document.title')}")
        for name, path, status_wanted in [
            ("a wrong path", "/no-such-page", 404),
            ("a bad return_to", "/auth/web/start?return_to=//evil.example", 400),
            ("an unknown completion handle", "/auth/web/complete?handle=unknown", 400),
            ("a completion without a handle", "/auth/web/complete", 400),
        ]:
            styled_page(browser, name, path, status_wanted)
        ok("the account page (signed out, signed in, the deletion confirmation), 404, a bad return_to and the completion errors: "
           "styled HTML, no wider than 390 px and 1280 px screens")
        rate_limited_page(browser)


if __name__ == "__main__":
    main()
