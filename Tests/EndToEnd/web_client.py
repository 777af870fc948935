"""siwa.js (public/siwa.js) in a real headless Chromium against the local stack and the emulator,
through the example page (examples/spa) with the tokens in IndexedDB: sign in through Sign in with
Apple JS's popup; a second tab of the origin finds the session; both tabs refresh at once and
exactly one POST /auth/refresh reaches the server (counted in nginx's access log); signing out in
one tab signs the other out (an event with its reason); a new sign-in reaches the other tab, which
deletes the account, and the first tab is signed out with reason accountDeleted; then the app flow
with PKCE in a popup (GET /auth/app/start, POST /auth/token). Then the same page served from another
origin (E2E_OTHER_ORIGIN, listed in SIWA_CORS_ORIGINS) signs in with the app flow and calls
/auth/me, refreshes and signs out across origins; a page of an origin not listed
(E2E_UNLISTED_ORIGIN) is kept from siwa's answers by the browser.

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


def cross_origin(browser):
    """The example page on another origin, with siwa's address (`server`): the app flow's popup,
    POST /auth/token (a simple request), then /auth/me, a refresh and the sign-out (each with a
    preflight), all answered for that origin; the same calls from an origin not listed are blocked."""
    other, unlisted = os.environ["E2E_OTHER_ORIGIN"], os.environ["E2E_UNLISTED_ORIGIN"]
    tab = open_tab(browser, other + "/example/spa/?flow=pkce")
    on(browser, tab)
    wait_status(browser, "ready")
    sign_in_with_popup(browser, EMAIL)
    if browser.evaluate("location.origin") != other or browser.evaluate("siwaClient.user === null"):
        fail("the sign-in on the other origin")
    user_id = browser.evaluate("siwaClient.user.id")
    token = browser.evaluate("siwaClient.accessToken()")
    before = refreshes()
    outcome = browser.evaluate("siwaClient.refresh().then(() => siwaClient.json('/auth/me')).then((me) => me.user.id, (e) => e.code)")
    renewed = browser.evaluate("siwaClient.accessToken()")
    if outcome != user_id or refreshes() - before != 1 or renewed == token:
        fail(f"the refresh from the other origin: {outcome}, {refreshes() - before} refreshes")
    call = "fetch({url}, {{headers: {{Authorization: 'Bearer ' + {token}}}}}).then((r) => 'answered ' + r.status, () => 'blocked')"
    me = call.format(url=json.dumps(BASE + "/auth/me"), token=json.dumps(renewed))
    if browser.evaluate(me) != "answered 200":
        fail("a plain fetch of /auth/me from the listed origin")
    ok(f"a page of another origin ({other}, in SIWA_CORS_ORIGINS) signs in with the app flow (POST /auth/token across "
       "origins), calls /auth/me and refreshes (one POST /auth/refresh), each answered for its origin")

    # An origin not listed: the same page, the same calls with a valid token; the browser keeps the answers.
    blocked = open_tab(browser, unlisted + "/example/spa/?flow=pkce")
    on(browser, blocked)
    wait_status(browser, "ready")
    token_exchange = ("fetch(" + json.dumps(BASE + "/auth/token") + ", {method: 'POST', headers: {'Content-Type': "
                      "'application/x-www-form-urlencoded'}, body: 'grant_type=authorization_code'}).then((r) => 'answered ' + r.status, () => 'blocked')")
    outcomes = [browser.evaluate(me), browser.evaluate(token_exchange)]
    if outcomes != ["blocked", "blocked"]:
        fail(f"calls from an origin not listed: {outcomes}")
    ok(f"a page of an origin not listed ({unlisted}): /auth/me with a valid token and POST /auth/token are blocked by the browser")

    # The sign-out across origins ends the session at the server.
    on(browser, tab)
    browser.evaluate("siwaClient.signOut()")
    wait_status(browser, "signed-out")
    status, _ = http("GET", BASE + "/auth/me", headers={"Authorization": "Bearer " + renewed})
    if status != 401:
        fail(f"the token after the sign-out from the other origin: {status}")
    ok("the sign-out from the other origin (POST /auth/logout) ends the session (401)")


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

        # A refused access token (spoilt in the store, the page reloaded): one refresh, the call sent again.
        on(browser, tab_a)
        browser.evaluate("""new Promise((done, failed) => { const open = indexedDB.open('siwa', 1); open.onsuccess = () => {
            const transaction = open.result.transaction('session', 'readwrite'); const store = transaction.objectStore('session');
            const get = store.get('siwa'); transaction.oncomplete = () => done(true); transaction.onerror = failed;
            get.onsuccess = () => { const session = JSON.parse(get.result); session.accessToken = 'not.a.token';
              store.put(JSON.stringify(session), 'siwa'); }; };
            open.onerror = failed; })""")
        browser.evaluate("window.before = true")
        before = refreshes()
        # The page lists the sessions as it loads (twice: at the start and at the signedIn event):
        # both refused, one refresh between them.
        browser.navigate(PAGE)
        browser.wait_for(f"!window.before && {STATUS} === 'signed-in'", "the page again, signed in")
        me = browser.evaluate("siwaClient.json('/auth/me').then((me) => me.user.id, (e) => e.code)")
        if me != user_id or refreshes() - before != 1:
            fail(f"a refused access token: /auth/me {me}, {refreshes() - before} refreshes")
        tokens = [browser.evaluate("siwaClient.accessToken()")]
        ok("client.fetch refreshes once after a 401 (a spoilt access token; two calls refused at once, one refresh) and sends the call again")

        # Offline: SiwaError offline, the session kept.
        browser.send("Network.enable", session=True)
        browser.send("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1,
                                                          "uploadThroughput": -1}, session=True)
        offline = browser.evaluate("siwaClient.fetch('/auth/me').then(() => 'answered', (e) => e.code)")
        browser.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                          "uploadThroughput": -1}, session=True)
        if offline != "offline" or browser.evaluate("siwaClient.user && siwaClient.user.id") != user_id:
            fail(f"offline: {offline}, user {browser.evaluate('siwaClient.user')}")
        ok("offline, client.fetch rejects with SiwaError offline and the session is kept")

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

        # An address with another sign-in's state: refused before anything is exchanged.
        tokens_before = sum('"POST /auth/token ' in line for line in open(ACCESS_LOG))
        refused = browser.evaluate("""(sessionStorage.setItem('siwa:pending', JSON.stringify({verifier: 'v'.repeat(43),
            state: 'this sign-in', redirectUri: location.origin + location.pathname})),
            siwaClient.handleRedirect(location.origin + location.pathname + '?code=c&state=another').then(() => 'accepted', (e) => e.code))""")
        if refused != "state_mismatch" or sum('"POST /auth/token ' in line for line in open(ACCESS_LOG)) != tokens_before:
            fail(f"the app flow's answer with another state: {refused}")
        ok("the app flow: an answer with another sign-in's state is refused (state_mismatch), no POST /auth/token sent")

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

        # The cookie session (POST /auth/web/apple): a second tab finds it (GET /auth/me); a
        # sign-out in one tab signs the other out.
        for tab in (tab_c, tab_d):
            on(browser, tab)
            browser.navigate("about:blank")
        tab_e = open_tab(browser, BASE + "/example/spa/?session=cookie")
        on(browser, tab_e)
        wait_status(browser, "ready")
        sign_in_with_popup(browser, EMAIL)
        tab_f = open_tab(browser, BASE + "/example/spa/?session=cookie")
        on(browser, tab_f)
        wait_status(browser, "signed-in")
        if browser.evaluate("siwaClient.sessionId") is not None or not browser.evaluate("siwaClient.signedIn"):
            fail("the cookie session in the second tab")
        browser.evaluate("siwaClient.signOut()")
        on(browser, tab_e)
        browser.wait_for(f"{EVENT} === 'signedOut: signedOut'", "the sign-out in the other cookie tab")
        if any(cookie["name"] == "__Host-siwa_session" for cookie in browser.cookies()):
            fail("the session cookie after the sign-out")
        ok("the cookie session: a second tab finds it; signing out in one tab clears the cookie and signs the other out")

        for tab in (tab_e, tab_f):
            on(browser, tab)
            browser.navigate("about:blank")
        cross_started = time.monotonic()
        cross_origin(browser)
        print(f"  the other origins: {time.monotonic() - cross_started:.1f} s")
    print(f"  web client checks: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    try:
        main()
    except BrowserError as error:
        fail(str(error))
