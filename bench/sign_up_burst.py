"""Signs in once per identity token of a file (new users), then signs out, from CONNECTIONS kept-alive
HTTPS connections at once, as fast as siwa answers: two lifecycle events per user (user.created, then
session.revoked), whose order the receivers must keep; for scripts/bench webhooks:
    python3 bench/sign_up_burst.py URL TOKENS_FILE CONNECTIONS
TOKENS_FILE as `appleid-emulator mint` prints it ("<token> <raw nonce>" lines). The connections are
opened (TLS handshakes done) before the first sign-in is sent. Prints one line:
    <users signed up and out> <failures> <time of the first request> <time of the last sign-out>
times in seconds since the epoch; the other answers (status, body start) go to standard error."""
import collections
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse

url, tokens_file, connections = sys.argv[1], sys.argv[2], int(sys.argv[3])
address = urllib.parse.urlsplit(url)
tls = ssl.create_default_context()
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE
words = open(tokens_file).read().split()
bodies = [json.dumps({"identityToken": token, "nonce": nonce, "device": "bench webhooks"}).encode()
          for token, nonce in zip(words[0::2], words[1::2])]

lock = threading.Lock()
next_body = 0
answered = 0
last_answer = 0.0
failures = collections.Counter()
ready = threading.Barrier(connections + 1)


def take():
    """The next sign-in's body, or None when every token was sent."""
    global next_body
    with lock:
        if next_body == len(bodies):
            return None
        next_body += 1
        return bodies[next_body - 1]


def client():
    global answered, last_answer
    connection = http.client.HTTPSConnection(address.hostname, address.port, context=tls, timeout=30)
    connection.connect()
    ready.wait()
    while (body := take()) is not None:
        try:
            connection.request("POST", "/auth/apple", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
            status = response.status
            if status == 200:
                access = json.loads(answer)["accessToken"]
                connection.request("POST", "/auth/logout", None, {"Authorization": "Bearer " + access})
                response = connection.getresponse()
                answer = response.read()
                status = 200 if response.status in (200, 204) else response.status
        except (OSError, http.client.HTTPException) as error:
            # The sign-in may or may not have happened: counted as a failure, not sent again (the
            # token's nonce may be spent). The connection reopens on the next request.
            connection.close()
            status, answer = type(error).__name__, b""
        now = time.time()
        with lock:
            if status == 200:
                answered += 1
                last_answer = max(last_answer, now)
            else:
                failures[f"{status} {answer[:60].decode(errors='replace')}"] += 1
    connection.close()


threads = [threading.Thread(target=client) for _ in range(connections)]
for thread in threads:
    thread.start()
ready.wait()
start = time.time()
for thread in threads:
    thread.join()
for failure, count in failures.most_common(5):
    print(f"{count:7d} {failure}", file=sys.stderr)
print(f"{answered} {sum(failures.values())} {start:.6f} {last_answer:.6f}")
