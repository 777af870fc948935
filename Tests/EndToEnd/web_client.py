"""siwa.js (public/siwa.js) in a real headless Chromium against the local stack and the emulator,
through the example page (examples/spa) with the tokens in IndexedDB: sign in through Sign in with
Apple JS's popup; a second tab of the origin finds the session; both tabs refresh at once and
exactly one POST /auth/refresh reaches the server (counted in nginx's access log); signing out in
one tab signs the other out (an event with its reason); a new sign-in reaches the other tab, which
deletes the account, and the first tab is signed out with reason accountDeleted; then the app flow
with PKCE in a popup (GET /auth/app/start, POST /auth/token).

WEB_CLIENT_CROSS_TAB=off loads the pages with the tabs' coordination off (?crossTab=off): the
one-refresh check must then fail."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from browser import Browser, BrowserError  # noqa: E402
from spa_sign_in import new_user  # noqa: E402
from web_sign_in import BASE, consent, fail, http, ok  # noqa: E402

CROSS_TAB = os.environ.get("WEB_CLIENT_CROSS_TAB", "on")


def page(storage):
    return BASE + f"/example/spa/?storage={storage}" + ("&crossTab=off" if CROSS_TAB == "off" else "")


PAGE = page("indexedDB")
ACCESS_LOG = os.path.join(os.environ["E2E_TMP"], "nginx", "access.log")
STATUS = "document.getElementById('status').textContent"
EVENT = "document.getElementById('event').textContent"
# A new person at each run: Apple gives the name on the first authorization only.
EMAIL = f"web.client.{os.getpid()}@example.com"


def refreshes():
    """The POST /auth/refresh requests nginx has logged so far."""
    with open(ACCESS_LOG) as log:
        return sum('"POST /auth/refresh ' in line for line in log)


def open_tab(browser, url):
    """A new tab at `url`; its DevTools session (browser.session is left as it was)."""
    target = browser.send("Target.createTarget", {"url": url})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    current, browser.session = browser.session, session
    browser.send("Page.enable", session=True)
    browser.send("Runtime.enable", session=True)
    browser.session = current
    return session


def on(browser, session):
    browser.session = session
    browser.opener_session = session


def wait_status(browser, *wanted):
    condition = " || ".join(f"s === {json.dumps(w)}" for w in wanted)
    return browser.wait_for(f"(() => {{ const s = {STATUS}; return ({condition}) ? s : null }})()", f"the page's status {wanted}")


def sign_in_with_popup(browser, email):
    browser.evaluate("document.getElementById('sign-in').click()", gesture=True)
    browser.popup()
    consent(browser, email)
    browser.back()
    status = browser.wait_for(f"(() => {{ const s = {STATUS}; return s === 'signed-in' || s.startsWith('refused') ? s : null }})()",
                              "the page's outcome")
    if status != "signed-in":
        fail(f"the popup sign-in: {status}")


def refresh_at_once(browser, tab_a, tab_b, user_id):
    """Both tabs refresh at once: while the test holds the tabs' refresh lock, both ask for a
    refresh with the same refresh token; then the lock is let go. Exactly one POST /auth/refresh
    reaches nginx, and both tabs use its tokens. Returns the tabs' access tokens."""
    on(browser, tab_a)
    browser.evaluate("window.held = new Promise((held) => navigator.locks.request('siwa:siwa:refresh',"
                     " () => { held(); return new Promise((release) => { window.releaseLock = release; }); }))")
    browser.evaluate("window.held")
    before = refreshes()
    tokens_before = browser.evaluate("siwaClient.accessToken()")
    for tab in (tab_a, tab_b):
        on(browser, tab)
        browser.evaluate("window.refreshed = siwaClient.refresh().then(() => 'ok', (e) => e.code || String(e)); true")
    if CROSS_TAB != "off":
        on(browser, tab_a)
        browser.wait_for("navigator.locks.query().then((s) => s.pending.filter((l) => l.name === 'siwa:siwa:refresh').length === 2)",
                         "both tabs' refreshes waiting for the lock")
    on(browser, tab_a)
    browser.evaluate("window.releaseLock(); true")
    outcomes = []
    for tab in (tab_a, tab_b):
        on(browser, tab)
        outcomes.append(browser.evaluate("window.refreshed"))
    if outcomes != ["ok", "ok"]:
        fail(f"the refreshes: {outcomes}")
    sent = refreshes() - before
    if sent != 1:
        fail(f"two tabs refreshing at once sent {sent} POST /auth/refresh, not 1")
    tokens = []
    for tab in (tab_a, tab_b):
        on(browser, tab)
        tokens.append(browser.evaluate("siwaClient.accessToken()"))
        me = browser.evaluate("siwaClient.json('/auth/me').then((me) => me.user.id, (e) => e.code)")
        if me != user_id:
            fail(f"/auth/me after the refresh: {me}")
    if tokens[0] != tokens[1] or tokens[0] == tokens_before:
        fail("the tabs do not share the new access token")
    return tokens


def main():
    started = time.monotonic()
    new_user(EMAIL, "Web", "Client")
    with Browser() as browser:
        browser.watch_popups()
        tab_a = browser.session
        browser.opener_session = tab_a
        browser.navigate(PAGE)
        wait_status(browser, "ready")
        sign_in_with_popup(browser, EMAIL)
        shown = browser.evaluate("document.getElementById('user').textContent")
        if not shown.startswith("Signed in as Web"):
            fail(f"the user after the sign-in: {shown}")
        user_id = browser.evaluate("siwaClient.user.id")
        ok(f"siwa.js signs in through Sign in with Apple JS's popup (POST /auth/apple), user {user_id}; the token session is in IndexedDB")

        tab_b = open_tab(browser, PAGE)
        on(browser, tab_b)
        wait_status(browser, "signed-in")
        if browser.evaluate("siwaClient.user.id") != user_id:
            fail("the second tab's user")
        ok("a second tab of the origin finds the session (signedIn, restored)")

        tokens = refresh_at_once(browser, tab_a, tab_b, user_id)
        ok("two tabs refreshing at once send one POST /auth/refresh (nginx's access log); both use the new token")

        # Signing out in one tab signs the other out, with the reason.
        on(browser, tab_b)
        browser.evaluate("document.getElementById('sign-out').click()")
        wait_status(browser, "signed-out")
        on(browser, tab_a)
        event = browser.wait_for(f"{EVENT}.startsWith('signedOut') && {EVENT}", "the other tab's sign-out")
        if event != "signedOut: signedOut" or browser.evaluate("siwaClient.user") is not None:
            fail(f"the other tab after a sign-out: {event}")
        status, _ = http("GET", BASE + "/auth/me", headers={"Authorization": "Bearer " + tokens[0]})
        if status != 401:
            fail(f"the token after the sign-out: {status}")
        ok("signing out in one tab ends the session at the server (401) and signs the other tab out (signedOut: signedOut)")

        # A new sign-in in one tab reaches the other; deleting the account there signs the first out.
        sign_in_with_popup(browser, EMAIL)
        token = browser.evaluate("siwaClient.accessToken()")
        on(browser, tab_b)
        browser.wait_for(f"{EVENT} === 'signedIn' && siwaClient.user !== null", "the sign-in in the other tab")
        result = browser.evaluate("siwaClient.deleteAccount().then(() => 'deleted', (e) => e.code)")
        if result != "deleted":
            fail(f"the account's deletion: {result}")
        on(browser, tab_a)
        event = browser.wait_for(f"{EVENT}.startsWith('signedOut') && {EVENT}", "the other tab after the deletion")
        if event != "signedOut: accountDeleted":
            fail(f"the other tab after the deletion: {event}")
        status, body = http("GET", BASE + "/auth/me", headers={"Authorization": "Bearer " + token})
        if status != 401:
            fail(f"the token after the deletion: {status} {body}")
        ok("a sign-in reaches the other tab; deleting the account there signs this tab out (signedOut: accountDeleted); "
           "the token is refused (401)")

        # The app flow with PKCE, in a popup: GET /auth/app/start, the emulator, POST /auth/token.
        browser.navigate(BASE + "/example/spa/?flow=pkce")
        wait_status(browser, "ready")
        sign_in_with_popup(browser, EMAIL)
        sessions = browser.evaluate("siwaClient.sessions().then((s) => s.filter((x) => x.current).length)")
        if sessions != 1:
            fail(f"the sessions list after the app flow: {sessions}")
        session_id = browser.evaluate("siwaClient.sessionId")
        browser.evaluate(f"siwaClient.revokeSession({json.dumps(session_id)})")
        wait_status(browser, "signed-out")
        if browser.evaluate(EVENT) != "signedOut: signedOut":
            fail(f"ending this session from the list: {browser.evaluate(EVENT)}")
        ok("the app flow in a popup (GET /auth/app/start, the emulator, POST /auth/token with the PKCE verifier) signs in; "
           "the sessions list marks this one current; ending it signs out (signedOut: signedOut)")

        browser.navigate(BASE + "/example/spa/?flow=pkce&mode=redirect")
        wait_status(browser, "ready")
        browser.evaluate("document.getElementById('sign-in').click()", gesture=True)
        consent(browser, EMAIL)
        wait_status(browser, "signed-in")
        if "code=" in browser.url() or "state=" in browser.url():
            fail(f"the code is left in the address: {browser.url()}")
        ok("the app flow by redirect: the page comes back with the code, handleRedirect() exchanges it and clears the address")

        # The same with the tokens in localStorage, in two more tabs (the first two left: they
        # share the channel and the lock, which are the origin's).
        on(browser, tab_b)
        browser.navigate("about:blank")
        tab_c = open_tab(browser, page("localStorage"))
        on(browser, tab_c)
        wait_status(browser, "ready")
        sign_in_with_popup(browser, EMAIL)
        tab_d = open_tab(browser, page("localStorage"))
        on(browser, tab_d)
        wait_status(browser, "signed-in")
        refresh_at_once(browser, tab_c, tab_d, browser.evaluate("siwaClient.user.id"))
        browser.evaluate("siwaClient.signOut()")
        on(browser, tab_c)
        browser.wait_for(f"{EVENT} === 'signedOut: signedOut'", "the sign-out in the other localStorage tab")
        ok("the same with the tokens in localStorage: one POST /auth/refresh for two tabs; the sign-out reaches the other tab")
    print(f"  web client checks: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    try:
        main()
    except BrowserError as error:
        fail(str(error))
