"""Schemathesis hooks for 42_openapi.sh.

- A real access token for the authenticated operations, got the way an app gets one: a new person is
  created at the Apple ID emulator and signs in there (an identity token for the e2e bundle id with a
  fresh nonce), and the token is exchanged at POST /auth/apple. It is renewed every few seconds, so an
  operation that ended the session (logout, account deletion) costs only the next few requests theirs.
- Half of the generated sign-ins carry such a real identity token instead of generated data, so that
  sign-ins succeed and the stateful phase follows the document's links from them (refresh, me, sync,
  sessions, logout)."""

import json
import os
import random
import ssl
import urllib.request
import uuid

import schemathesis

BASE = os.environ["E2E_URL"]
APPLE = os.environ["E2E_APPLE_URL"]
ADMIN = open(os.environ["E2E_APPLE_ADMIN_SECRET_FILE"]).read().strip()
CLIENT_ID = "com.example.siwa"
TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE


def post(url, body, headers=None):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, context=TLS, timeout=10) as response:
        return json.load(response)


def sign_in_body():
    """The body of a native sign-in of a new person, with a real identity token."""
    admin = {"Authorization": "Bearer " + ADMIN}
    person = post(APPLE + "/admin/users", {"email": f"openapi.{uuid.uuid4().hex[:8]}@example.com",
                                           "firstName": "Open", "lastName": "Api"}, admin)
    nonce = uuid.uuid4().hex
    signed = post(APPLE + "/admin/sign-in", {"userId": person["id"], "clientId": CLIENT_ID, "nonce": nonce}, admin)
    return {"identityToken": signed["identityToken"], "nonce": nonce, "device": "schemathesis"}


def sign_in():
    """A new person's access token."""
    return post(BASE + "/auth/apple", sign_in_body())["accessToken"]


@schemathesis.hook
def before_call(context, case, **kwargs):
    if case.operation.method.upper() == "POST" and case.operation.path == "/auth/apple" and random.random() < 0.5:
        case.body = sign_in_body()
    # A sync's `collections` takes the collections this deployment declares, each record in the shape
    # of its declaration, which the document cannot give: a generated one is refused (400 naming the
    # collection or the member), so it is left out. 39_sync_collections.sh sends declared records.
    if case.operation.method.upper() == "POST" and case.operation.path == "/sync" and isinstance(case.body, dict):
        case.body.pop("collections", None)


@schemathesis.auth(refresh_interval=5)
class AccessToken:
    def get(self, case, context):
        return sign_in()

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = "Bearer " + data
