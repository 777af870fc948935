"""A webhook receiver as an app's backend would write one, for 38_webhooks.sh.

Usage: webhook_receiver.py PORT SECRET_FILE FAIL_SECONDS LOG_FILE

Listens on 127.0.0.1:PORT. Every POST is checked the documented way: the `Siwa-Signature` header
`t=<unix time>,v1=<hex>[,v1=<hex>...]`, one `v1` of which must be the HMAC-SHA256 of
"<t>.<raw body>" under the secret, with `t` within five minutes of now. A bad signature gets 400.
For FAIL_SECONDS from the first signed delivery it receives, the receiver answers 500 to every signed
delivery (an outage); then 200. Counted from the first delivery, not from its start, so that the
outage is met however long the sender takes to begin.
Each attempt is appended to LOG_FILE as one JSON line: the event id, type, user, the answer and
whether the signature verified. The first verified delivery is also kept whole, its signature header
and raw body, in LOG_FILE.sample.json (to check the snippets of docs/WEBHOOKS.md against).
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
SECRET = open(sys.argv[2], "rb").read().splitlines()[0].strip()
FAIL_SECONDS = float(sys.argv[3])
FAIL_UNTIL = None  # set by the first signed delivery
LOCK = threading.Lock()
LOG = sys.argv[4]
TOLERANCE = 300


def verified(header, body):
    """Whether the signature header signs `body` under SECRET, recently."""
    parts = [part.split("=", 1) for part in (header or "").split(",") if "=" in part]
    stamps = [value for name, value in parts if name == "t"]
    if len(stamps) != 1 or not stamps[0].isdigit() or abs(time.time() - int(stamps[0])) > TOLERANCE:
        return False
    expected = hmac.new(SECRET, stamps[0].encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, value) for name, value in parts if name == "v1")


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ok = verified(self.headers.get("Siwa-Signature"), body)
        global FAIL_UNTIL
        with LOCK:
            if ok and FAIL_UNTIL is None:
                FAIL_UNTIL = time.time() + FAIL_SECONDS
            status = 400 if not ok else (500 if time.time() < FAIL_UNTIL else 200)
        event = json.loads(body) if ok else {}
        sample = LOG + ".sample.json"
        if ok and not os.path.exists(sample):
            with open(sample, "w") as out:
                json.dump({"header": self.headers.get("Siwa-Signature"), "body": base64.b64encode(body).decode()}, out)
        with open(LOG, "a") as log:
            log.write(json.dumps({
                "id": event.get("id") or self.headers.get("Siwa-Event-Id"), "type": event.get("type"),
                "user": event.get("userId"), "data": event.get("data"), "status": status, "verified": ok,
                "headerId": self.headers.get("Siwa-Event-Id"),
            }) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Receiver).serve_forever()
