"""For 30_admin.sh: every time the API answers for one fact is one value. Signs in N new people
(argument 1) at the Apple ID emulator and natively at siwa, then reads each person's creation time
and their session's from the sign-in answer, GET /auth/me, GET /auth/sessions and the account export
(which gives milliseconds: its seconds, rounded down, must be the others' value). Prints a summary
line; exits 1 naming the first person whose times differ."""

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
import uuid

BASE = os.environ["E2E_URL"]
APPLE = os.environ["E2E_APPLE_URL"]
ADMIN = {"Authorization": "Bearer " + open(os.environ["E2E_APPLE_ADMIN_SECRET_FILE"]).read().strip()}
TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE


def call(method, url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    for _ in range(50):
        try:
            with urllib.request.urlopen(request, context=TLS, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            # The site's limit on sign-ins per client address (10 a second): pace, then again.
            if error.code != 429:
                raise
            time.sleep(0.1)
    raise RuntimeError(f"{method} {url}: still 429 after 50 tries")


def person_times(index):
    person = call("POST", APPLE + "/admin/users",
                  {"email": f"time.{index}.{uuid.uuid4().hex[:6]}@example.com", "firstName": "Time", "lastName": str(index)},
                  ADMIN)
    nonce = uuid.uuid4().hex
    apple = call("POST", APPLE + "/admin/sign-in", {"userId": person["id"], "clientId": "com.example.siwa", "nonce": nonce}, ADMIN)
    grant = call("POST", BASE + "/auth/apple", {"identityToken": apple["identityToken"], "nonce": nonce})
    bearer = {"Authorization": "Bearer " + grant["accessToken"]}
    me = call("GET", BASE + "/auth/me", headers=bearer)
    sessions = call("GET", BASE + "/auth/sessions", headers=bearer)["sessions"]
    export = call("GET", BASE + "/auth/account/export", headers=bearer)
    session_id = next(s["id"] for s in sessions if s.get("current"))
    exported_session = next(s for s in export["sessions"] if s["id"] == session_id)
    users = {"sign-in": grant["user"]["createdAt"], "me": me["user"]["createdAt"],
             "export": export["user"]["createdAt"] // 1000}
    session = {"sessions": next(s for s in sessions if s["id"] == session_id)["createdAt"],
               "export": exported_session["createdAt"] // 1000}
    return users, session


def main():
    count = int(sys.argv[1])
    for index in range(count):
        users, session = person_times(index)
        if len(set(users.values())) != 1 or len(set(session.values())) != 1:
            print(f"person {index}: user createdAt {users}, session createdAt {session}")
            return 1
    print(f"{count} sign-ins: the user's createdAt equal in the sign-in answer, /auth/me and the export; "
          "the session's in /auth/sessions and the export")
    return 0


if __name__ == "__main__":
    sys.exit(main())
