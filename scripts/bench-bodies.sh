# The adversarial-body check of `scripts/bench bodies`; sourced by scripts/bench once its stack runs.
# Uses URL, TMP, BIN_DIR and DURATION (30 s unless given). Eight clients send 1 MiB bodies of
# 131,000 members each (the shape that used to cost a worker 15 s) to POST /auth/refresh and to
# POST /sync as a signed-in user (as many members as fit under nginx's 1 MiB), for DURATION, while one client times GET /health and another a
# signed-in user's small sync, one request after the other. The same two are timed for 5 s before
# the load: the reference. Target: both p99 under 100 ms during the load.
[ "$DURATION" = 10 ] && DURATION=30
log "signing in two users"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count 2 >"$TMP/body_tokens"
python3 - "$URL" "$TMP/body_tokens" "$DURATION" <<'PY'
import json, ssl, sys, threading, time, urllib.error, urllib.request
url, tokens, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
def post(path, body, token=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    request = urllib.request.Request(url + path, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, context=tls, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
def get(path):
    try:
        with urllib.request.urlopen(url + path, context=tls, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
accesses = []
for line in open(tokens).read().splitlines():
    token, nonce = line.split()
    status, body = post("/auth/apple", {"identityToken": token, "nonce": nonce, "device": "bench"})
    assert status == 200, (status, body)
    accesses.append(json.loads(body)["accessToken"])
attacker, user = accesses
# As many members as fit under nginx's 1 MiB (more would be refused by nginx, never read by siwa).
count = 131_059
while len(b"{" + b",".join(b'"m%d":0' % i for i in range(count)) + b"}") > 1024 * 1024 - 1024:
    count -= 4096
big = b"{" + b",".join(b'"m%d":0' % i for i in range(count)) + b"}"
small = {"cursor": None, "progress": [{"beliefSystemId": "bench", "lessonId": "l1", "status": "in_progress", "score": 10}]}
def timed(kind, stop, out):
    while not stop.is_set():
        start = time.monotonic()
        status = get("/health") if kind == "health" else post("/sync", small, user)[0]
        out.append((time.monotonic() - start) * 1000)
        if status != 200: errors.append(f"{kind} {status}")
def p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))] if values else float("nan")
def measure(seconds, load):
    stop = threading.Event()
    health, sync, answers = [], [], {}
    lock = threading.Lock()
    def attack(index):
        while not stop.is_set():
            path = "/auth/refresh" if index % 2 else "/sync"
            status, _ = post(path, big, None if index % 2 else attacker)
            with lock: answers[f"{path} {status}"] = answers.get(f"{path} {status}", 0) + 1
    threads = [threading.Thread(target=timed, args=("health", stop, health)), threading.Thread(target=timed, args=("sync", stop, sync))]
    threads += [threading.Thread(target=attack, args=(i,)) for i in range(8 if load else 0)]
    for thread in threads: thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads: thread.join()
    return health, sync, answers
errors = []
base_health, base_sync, _ = measure(5, False)
health, sync, answers = measure(duration, True)
print(f"reference, no load: GET /health p99 {p99(base_health):.1f} ms ({len(base_health)} requests), "
      f"a user's sync p99 {p99(base_sync):.1f} ms ({len(base_sync)})")
print(f"8 clients sending bodies of {len(big)} bytes, {count} members, for {duration:.0f} s: {sum(answers.values())} bodies answered {answers}")
print(f"meanwhile: GET /health p99 {p99(health):.1f} ms ({len(health)} requests), a user's sync p99 {p99(sync):.1f} ms ({len(sync)}); "
      f"target under 100 ms: {'met' if max(p99(health), p99(sync)) < 100 else 'NOT met'}")
print(f"errors of the timed requests: {len(errors)} {sorted(set(errors))[:5]}")
PY
