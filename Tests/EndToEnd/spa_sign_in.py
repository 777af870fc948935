"""Sign in with Apple JS in a single-page app, in a real headless Chromium, against the emulator:
the example page (examples/spa, on siwa.js) loads the emulator's stand-in for Apple's script, signs
in in a popup (response_mode=web_message), posts the credential to POST /auth/apple with its
redirectUri, and calls /auth/me with the access token. An answer of another sign-in (a forged
state) is refused by siwa.js, a forged nonce by siwa; a cancelled popup rejects signIn() with
user_cancelled_authorize."""

import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from browser import Browser, BrowserError  # noqa: E402
from web_sign_in import ADMIN_SECRET, APPLE, BASE, TLS, consent, fail, ok  # noqa: E402

PAGE = BASE + "/example/spa/"


def new_user(email, first, last):
    request = urllib.request.Request(
        APPLE + "/admin/users", method="POST", data=json.dumps({"email": email, "firstName": first, "lastName": last}).encode(),
        headers={"Authorization": "Bearer " + ADMIN_SECRET, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=TLS) as response:
        return json.loads(response.read())["id"]


def sign_in(browser, query="", email=None):
    """Opens the page, clicks Apple's button, consents (or cancels) in the popup; the page's status."""
    browser.back() if getattr(browser, "opener_session", None) else None
    browser.navigate(PAGE + query)
    browser.wait_for("document.getElementById('status') && document.getElementById('status').textContent === 'ready'",
                     "the page with Apple's script")
    browser.evaluate("document.getElementById('sign-in').click()", gesture=True)
    browser.popup()
    consent(browser, email)
    browser.back()
    return browser.wait_for("(() => { const s = document.getElementById('status').textContent;"
                            " return s === 'signed-in' || s.startsWith('refused') ? s : null })()", "the page's outcome")


def main():
    new_user("spa.e2e@example.com", "Spa", "Page")
    with Browser() as browser:
        browser.watch_popups()
        status = sign_in(browser, email="spa.e2e@example.com")
        if status != "signed-in":
            fail(f"the single-page app's sign-in: {status}")
        shown = browser.evaluate("document.getElementById('user').textContent")
        if not shown.startswith("Signed in as Spa"):
            fail(f"the page's user after /auth/me: {shown}")
        ok("Sign in with Apple JS in a popup (the emulator's script, response_mode=web_message): the page gets code, id_token, "
           "state and the name, signs in at POST /auth/apple with its redirectUri, and calls /auth/me with the token")
        if any(cookie["name"] == "__Host-siwa_session" for cookie in browser.cookies()):
            fail("the token sign-in set a session cookie")
        status = sign_in(browser, "?session=cookie", email="spa.e2e@example.com")
        cookie = [c for c in browser.cookies() if c["name"] == "__Host-siwa_session"]
        if status != "signed-in" or not cookie or not cookie[0]["httpOnly"] or not cookie[0]["secure"]:
            fail(f"the cookie sign-in: {status} {cookie}")
        ok("with ?session=cookie the same credential signs the page into the account pages' cookie session "
           "(POST /auth/web/apple: an HttpOnly, Secure __Host- cookie; /auth/me with it)")
        status = sign_in(browser, "?forge=state", email="spa.e2e@example.com")
        if status != "refused: state_mismatch":
            fail(f"a forged state: {status}")
        status = sign_in(browser, "?forge=nonce", email="spa.e2e@example.com")
        if status != "refused: invalid_token":
            fail(f"a forged nonce: {status}")
        status = sign_in(browser, email=None)
        if status != "refused: user_cancelled_authorize":
            fail(f"a cancelled popup: {status}")
        ok("an answer of another sign-in (forged state) is refused by siwa.js (state_mismatch), a forged nonce by siwa (invalid_token); Cancel rejects signIn() "
           "with user_cancelled_authorize")


if __name__ == "__main__":
    try:
        main()
    except BrowserError as error:
        fail(str(error))
