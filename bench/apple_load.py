"""Sign-ins with codes at a steady rate, while GET /health and a signed-in user's POST /sync are timed.

usage: apple_load.py URL SIGN_IN_BODIES ACCESS_TOKEN SECONDS RATE [SENDERS]

Sends the sign-in bodies of SIGN_IN_BODIES (one JSON body per line) to POST /auth/apple at RATE a
second for SECONDS, open loop: each has its time on a schedule, and a pool of SENDERS keep-alive
connections (64 by default) sends it then or as soon as a connection is free, so that a server
falling behind shows as latency, counted from the scheduled time, not as a lower rate. Meanwhile
GET /health and POST /sync (with ACCESS_TOKEN) are sent every 50 ms, each on its own keep-alive
connection. RATE 0 times /health and /sync alone. Prints one JSON object: per kind ("signIns",
"health", "sync") the statuses, the count, p50, p99 and maximum in milliseconds, and for the
sign-ins the rate achieved. TLS is not verified (the local stack's certificate is self-signed)."""

import http.client
import json
import queue
import ssl
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlparse

TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE


class Client:
    """One keep-alive connection, opened again after an error."""

    def __init__(self, url, timeout=30):
        self.url, self.timeout, self.conn = url, timeout, None

    def send(self, method, path, body=None, headers=None):
        """The status, or 0 when no answer came."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.url.hostname, self.url.port, context=TLS, timeout=self.timeout)
            self.conn.request(method, path, body=body, headers=headers or {})
            response = self.conn.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return 0


def timed_route(url, method, path, body, headers, until, results):
    """Requests every 50 ms until `until`; records (status, milliseconds)."""
    client = Client(url)
    while time.monotonic() < until:
        started = time.monotonic()
        status = client.send(method, path, body, headers)
        results.append((status, (time.monotonic() - started) * 1000))
        time.sleep(0.05)


def sender(url, work, results):
    client = Client(url)
    headers = {"Content-Type": "application/json"}
    while True:
        item = work.get()
        if item is None:
            return
        scheduled, body = item
        status = client.send("POST", "/auth/apple", body, headers)
        results.append((status, (time.monotonic() - scheduled) * 1000))


def summary(results):
    times = sorted(ms for _, ms in results)

    def at(share):
        return round(times[min(len(times) - 1, int(len(times) * share))], 1) if times else None

    return {
        "statuses": dict(Counter(str(status) for status, _ in results)),
        "count": len(times),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "max_ms": round(times[-1], 1) if times else None,
    }


def main():
    url = urlparse(sys.argv[1])
    bodies = [line.strip() for line in open(sys.argv[2]) if line.strip()]
    access, seconds, rate = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
    senders = int(sys.argv[6]) if len(sys.argv) > 6 else 64
    start = time.monotonic()
    until = start + seconds
    health, sync, sign_ins = [], [], []
    sync_headers = {"Authorization": "Bearer " + access, "Content-Type": "application/json"}
    threads = [
        threading.Thread(target=timed_route, args=(url, "GET", "/health", None, {}, until, health)),
        threading.Thread(target=timed_route, args=(url, "POST", "/sync", '{"cursor":null}', sync_headers, until, sync)),
    ]
    work = queue.Queue()
    if rate > 0:
        threads += [threading.Thread(target=sender, args=(url, work, sign_ins)) for _ in range(senders)]
    for thread in threads:
        thread.start()
    scheduled = 0
    if rate > 0:
        for body in bodies[: int(seconds * rate)]:
            at = start + scheduled / rate
            pause = at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            work.put((at, body))
            scheduled += 1
    for _ in range(senders):
        work.put(None)
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    result = {"signIns": summary(sign_ins), "health": summary(health), "sync": summary(sync)}
    result["signIns"]["rate"] = round(scheduled / seconds, 1) if rate > 0 else 0
    result["signIns"]["seconds"] = round(elapsed, 1)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
