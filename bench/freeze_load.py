"""Writes through POST /sync from many users at once, refreshes sessions, signs in, and polls GET /health,
for SECONDS; every answer, or its absence, logged. For scripts/bench dbfreeze:
    python3 bench/freeze_load.py URL ACCESS_TOKENS_FILE SECONDS LOG_FILE [REFRESH_TOKENS_FILE IDENTITY_TOKENS_FILE]
Each user (one access token a line) has its own thread and kept-alive connection, and sends one new
lesson a request ("freeze"/"<user>-<n>", with the cursor of its previous answer), 20 ms apart; one
more thread sends GET /health. With the two optional files, one thread per refresh token rotates its
session through POST /auth/refresh (keeping the token it holds when an answer is not 200: a retry
within the reuse interval gets a new pair), and two threads sign in through POST /auth/apple, one
identity token and nonce of the file each (alternate lines, as `appleid-emulator mint` prints them).
Each request is logged as it ends, one JSON line:
    {"route", "item", "user", "status", "start", "ms"}
(status 0: no answer within 60 s, or the connection broke; start: time.monotonic(), the clock of
CLOCK_MONOTONIC, which the caller reads too) so that the caller can follow progress, place each
request against a freeze, and after the run check that every acknowledged lesson (status 200) is
stored and every refresh token last acknowledged still refreshes (written to LOG_FILE.refresh)."""
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse

url, tokens_file, seconds, log_file = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
refresh_file = sys.argv[5] if len(sys.argv) > 5 else None
identity_file = sys.argv[6] if len(sys.argv) > 6 else None
address = urllib.parse.urlsplit(url)
tls = ssl.create_default_context()
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE
tokens = open(tokens_file).read().split()
refresh_tokens = open(refresh_file).read().split() if refresh_file else []
identity = open(identity_file).read().split() if identity_file else []
identity_pairs = list(zip(identity[0::2], identity[1::2]))
identity_lock = threading.Lock()
until = time.monotonic() + seconds
lock = threading.Lock()
log = open(log_file, "w")


def record(entry):
    with lock:
        log.write(json.dumps(entry) + "\n")
        log.flush()


def next_identity():
    with identity_lock:
        return identity_pairs.pop() if identity_pairs else None


def run(user, route):
    connection = None
    cursor = None
    refresh = refresh_tokens[user] if route == "refresh" else None
    n = 0
    while time.monotonic() < until:
        n += 1
        item = f"{user}-{n}"
        headers = {"Content-Type": "application/json"}
        if route == "sync":
            body = json.dumps({"cursor": cursor, "progress": [
                {"beliefSystemId": "freeze", "lessonId": item, "status": "in_progress", "score": 1, "earnedXp": 1}],
                "achievements": []})
            method, path = "POST", "/sync"
            headers["Authorization"] = "Bearer " + tokens[user]
        elif route == "refresh":
            body, method, path = json.dumps({"refreshToken": refresh}), "POST", "/auth/refresh"
        elif route == "signIn":
            pair = next_identity()
            if pair is None:
                return
            body = json.dumps({"identityToken": pair[0], "nonce": pair[1], "device": "bench freeze"})
            method, path = "POST", "/auth/apple"
        else:
            body, method, path, headers = None, "GET", "/health", {}
        started = time.monotonic()
        try:
            if connection is None:
                connection = http.client.HTTPSConnection(address.hostname, address.port, context=tls, timeout=60)
            connection.request(method, path, body, headers)
            response = connection.getresponse()
            answer = response.read()
            status = response.status
            if route == "sync" and status == 200:
                cursor = json.loads(answer)["cursor"]
            if route == "refresh" and status == 200:
                refresh = json.loads(answer)["refreshToken"]
        except (OSError, http.client.HTTPException):
            connection.close()
            connection, status = None, 0
        record({"route": route, "item": item, "user": user, "status": status, "start": round(started, 4),
                "ms": round((time.monotonic() - started) * 1000, 1)})
        time.sleep(0.02)
    if route == "refresh":
        with lock, open(log_file + ".refresh", "a") as last:
            last.write(refresh + "\n")


threads = [threading.Thread(target=run, args=(user, "sync")) for user in range(len(tokens))]
threads += [threading.Thread(target=run, args=(user, "refresh")) for user in range(len(refresh_tokens))]
threads += [threading.Thread(target=run, args=(user, "signIn")) for user in range(2 if identity_pairs else 0)]
threads.append(threading.Thread(target=run, args=(0, "health")))
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
