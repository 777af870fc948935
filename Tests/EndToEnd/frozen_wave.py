"""The first wave of a frozen database, for 12_database_restart.sh:
    python3 frozen_wave.py URL DB_PID TIMEOUT MARGIN FREEZE ACCESS_TOKEN...
24 clients, more than siwa's 16 worker threads, send requests without pause: syncs that write (one
client per access token and more, through the group committer), refreshes with an unknown token (a
read) and GET /health. Once each has been answered, MariaDB is stopped (SIGSTOP) for FREEZE seconds
while they go on, then continued, and the clients stop. Every request still unanswered when MariaDB
stopped, or begun while it was stopped, must be answered within TIMEOUT (SIWA_DB_TIMEOUT) and
MARGIN seconds: those in flight at the freeze include requests that wait in the socket's queue for
a worker thread, behind threads that wait for MariaDB."""
import http.client
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.parse

url, db_pid, timeout, margin, freeze = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
access = sys.argv[6:]
address = urllib.parse.urlsplit(url)
tls = ssl.create_default_context()
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE
stop = threading.Event()
lock = threading.Lock()
answers = []  # (route, status, start, end, client)
answered = threading.Condition(lock)


def client(index, route):
    n = 0
    while not stop.is_set():
        n += 1
        headers = {"Content-Type": "application/json"}
        if route == "sync":
            headers["Authorization"] = "Bearer " + access[index % len(access)]
            body = json.dumps({"cursor": None, "progress": [
                {"beliefSystemId": "wave", "lessonId": f"{index}-{n}", "status": "in_progress", "score": 1}]})
            method, path = "POST", "/sync"
        elif route == "refresh":
            method, path, body = "POST", "/auth/refresh", json.dumps({"refreshToken": "A" * 43})
        else:
            method, path, body, headers = "GET", "/health", None, {}
        begin = time.monotonic()
        try:
            connection = http.client.HTTPSConnection(address.hostname, address.port, context=tls, timeout=30)
            connection.request(method, path, body, headers)
            response = connection.getresponse()
            response.read()
            status = response.status
            connection.close()
        except (OSError, http.client.HTTPException):
            status = 0
        with lock:
            answers.append((route, status, begin, time.monotonic(), index))
            answered.notify_all()


routes = ["sync"] * 12 + ["refresh"] * 8 + ["health"] * 4
threads = [threading.Thread(target=client, args=(i, route)) for i, route in enumerate(routes)]
for thread in threads:
    thread.start()
# The load runs: each client answered, and as many answers again, before MariaDB stops.
with answered:
    answered.wait_for(lambda: len({a[4] for a in answers}) == len(routes) and len(answers) >= 2 * len(routes), timeout=30)
os.kill(db_pid, signal.SIGSTOP)
frozen = time.monotonic()
try:
    time.sleep(freeze)  # the length of the freeze, not a wait for anything
finally:
    os.kill(db_pid, signal.SIGCONT)
thawed = time.monotonic()
stop.set()
for thread in threads:
    thread.join()

limit = timeout + margin
wave = [a for a in answers if a[2] < frozen < a[3]]
during = [a for a in answers if frozen <= a[2] < thawed]
late = [a for a in wave + during if a[3] - a[2] > limit or a[1] == 0]
def show(items):
    return " ".join(f"{route}:{status}:{end - begin:.2f}s" for route, status, begin, end, _ in sorted(items, key=lambda a: a[2]))
print(f"first wave (in flight when MariaDB stopped): {len(wave)} requests: {show(wave)}")
print(f"begun while it was stopped: {len(during)}, slowest {max((a[3] - a[2] for a in during), default=0):.2f}s")
if sum(1 for a in wave if a[0] == "sync") == 0 or len(wave) <= 16:
    sys.exit(f"too few requests in flight at the freeze to fill the 16 worker threads: {len(wave)}")
if late:
    sys.exit(f"answered later than {limit:.1f} s (SIWA_DB_TIMEOUT and {margin} s), or not at all: {show(late)}")
kinds = ", ".join(f"{route} {sum(1 for a in wave if a[0] == route)}" for route in ("sync", "refresh", "health"))
print(f"{len(wave)} in flight at the freeze ({kinds}) answered in {min(a[3] - a[2] for a in wave):.2f}-"
      f"{max(a[3] - a[2] for a in wave):.2f} s, {len(during)} begun during it in at most "
      f"{max((a[3] - a[2] for a in during), default=0):.2f} s: all within {limit:.1f} s")
