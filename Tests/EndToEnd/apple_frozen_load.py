"""Load for 08_apple_frozen.sh: while Apple is frozen, sends the sign-ins with codes of a file (one
JSON body per line) at a steady rate, each on its own connection, and meanwhile times paced
`GET /health` and `POST /sync` requests on keep-alive connections. Prints one JSON object: the
sign-ins' statuses, and per route the statuses, p99 and maximum in milliseconds.

usage: apple_frozen_load.py SIGN_IN_BODIES ACCESS_TOKEN SECONDS SIGN_INS_PER_SECOND"""

import http.client
import json
import os
import ssl
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlparse

URL = urlparse(os.environ["E2E_URL"])
TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE


def connection(timeout):
    return http.client.HTTPSConnection(URL.hostname, URL.port, context=TLS, timeout=timeout)


def send(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    response.read()
    return response.status


def timed_route(method, path, body, headers, until, results):
    """Requests every 50 ms until `until`; records (status, milliseconds)."""
    conn = connection(30)
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            status = send(conn, method, path, body, headers)
        except (OSError, http.client.HTTPException):
            status = 0
            conn.close()
            conn = connection(30)
        results.append((status, (time.monotonic() - started) * 1000))
        time.sleep(0.05)
    conn.close()


def sign_in(body, statuses):
    conn = connection(30)
    try:
        statuses.append(send(conn, "POST", "/auth/apple", body, {"Content-Type": "application/json"}))
    except (OSError, http.client.HTTPException):
        statuses.append(0)
    finally:
        conn.close()


def summary(results):
    times = sorted(ms for _, ms in results)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] if times else None
    return {
        "statuses": dict(Counter(str(status) for status, _ in results)),
        "count": len(times),
        "p99_ms": round(p99, 1) if p99 is not None else None,
        "max_ms": round(times[-1], 1) if times else None,
    }


def main():
    bodies = [line.strip() for line in open(sys.argv[1]) if line.strip()]
    access, seconds, rate = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    until = time.monotonic() + seconds
    health, sync, sign_ins = [], [], []
    sync_headers = {"Authorization": "Bearer " + access, "Content-Type": "application/json"}
    routes = [
        threading.Thread(target=timed_route, args=("GET", "/health", None, {}, until, health)),
        threading.Thread(target=timed_route, args=("POST", "/sync", '{"cursor":null}', sync_headers, until, sync)),
    ]
    for thread in routes:
        thread.start()
    senders = []
    for body in bodies:
        if time.monotonic() >= until:
            break
        sender = threading.Thread(target=sign_in, args=(body, sign_ins))
        sender.start()
        senders.append(sender)
        time.sleep(1 / rate)
    for thread in routes + senders:
        thread.join()
    print(json.dumps({
        "signIns": dict(Counter(str(status) for status in sign_ins)),
        "health": summary(health),
        "sync": summary(sync),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
