"""Writes through POST /sync from many users at once, and GET /health, for SECONDS; every answer, or
its absence, logged. For scripts/bench dbfreeze:
    python3 bench/freeze_load.py URL ACCESS_TOKENS_FILE SECONDS LOG_FILE
Each user (one access token a line) has its own thread and kept-alive connection, and sends one new
lesson a request ("freeze"/"<user>-<n>", with the cursor of its previous answer), 20 ms apart; one
more thread sends GET /health. Each request is logged as it ends, one JSON line:
    {"route", "item", "user", "status", "ms"}   (status 0: no answer within 60 s, or the connection broke)
so that the caller can follow progress and, after the run, check that every acknowledged lesson
(status 200) is stored."""
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse

url, tokens_file, seconds, log_file = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
address = urllib.parse.urlsplit(url)
tls = ssl.create_default_context()
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE
tokens = open(tokens_file).read().split()
until = time.monotonic() + seconds
lock = threading.Lock()
log = open(log_file, "w")


def record(entry):
    with lock:
        log.write(json.dumps(entry) + "\n")
        log.flush()


def run(user, route):
    connection = None
    cursor = None
    n = 0
    while time.monotonic() < until:
        n += 1
        item = f"{user}-{n}"
        if route == "sync":
            body = json.dumps({"cursor": cursor, "progress": [
                {"beliefSystemId": "freeze", "lessonId": item, "status": "in_progress", "score": 1, "earnedXp": 1}],
                "achievements": []})
            method, path, headers = "POST", "/sync", {"Authorization": "Bearer " + tokens[user], "Content-Type": "application/json"}
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
        except (OSError, http.client.HTTPException):
            connection.close()
            connection, status = None, 0
        record({"route": route, "item": item, "user": user, "status": status, "ms": round((time.monotonic() - started) * 1000, 1)})
        time.sleep(0.02)


threads = [threading.Thread(target=run, args=(user, "sync")) for user in range(len(tokens))]
threads.append(threading.Thread(target=run, args=(0, "health")))
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
