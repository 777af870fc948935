"""Writes the seed corpus of the fastcgi fuzz target (fuzz/corpus/fastcgi): FastCGI connections as
nginx opens them with nginx/siwa-locations.conf (begin request, the parameters siwa reads and
others, the body), each file named by the SHA-256 of its bytes. Run it again after changing it:
    python3 fuzz/fastcgi_seeds.py"""

import hashlib
import os
import struct

BEGIN_REQUEST, PARAMS, STDIN = 1, 4, 5
RESPONDER, KEEP_CONN = 1, 1


def record(kind, content, request_id=1, padding=0):
    header = struct.pack(">BBHHBB", 1, kind, request_id, len(content), padding, 0)
    return header + content + b"\0" * padding


def length(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def params(pairs):
    body = b"".join(length(len(k)) + length(len(v)) + k + v for k, v in pairs)
    return record(PARAMS, body) + record(PARAMS, b"")


def connection(method, uri, body=b"", headers=(), flags=0, declared=None, split_body=False):
    path, _, query = uri.partition(b"?")
    pairs = [
        (b"REQUEST_METHOD", method), (b"DOCUMENT_URI", path), (b"REQUEST_URI", uri), (b"QUERY_STRING", query),
        (b"REMOTE_ADDR", b"127.0.0.1"), (b"REQUEST_ID", b"3f2a9c0d1e5b7a8c9d0e1f2a3b4c5d6e"),
        (b"CONTENT_LENGTH", str(len(body) if declared is None else declared).encode() if body or declared is not None else b""),
        (b"CONTENT_TYPE", b"application/json" if body else b""), (b"SERVER_PROTOCOL", b"HTTP/1.1"),
    ] + [(b"HTTP_" + name, value) for name, value in headers]
    stream = record(BEGIN_REQUEST, struct.pack(">HB5x", RESPONDER, flags)) + params(pairs)
    chunks = [body[:len(body) // 2], body[len(body) // 2:]] if split_body else [body]
    for chunk in chunks:
        if chunk:
            stream += record(STDIN, chunk, padding=(8 - len(chunk) % 8) % 8)
    return stream + record(STDIN, b"")


SYNC = b'{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"completed","score":3}]}'
SEEDS = [
    connection(b"GET", b"/health"),
    connection(b"HEAD", b"/health", flags=KEEP_CONN),
    connection(b"GET", b"/auth/me", headers=[(b"AUTHORIZATION", b"Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig")]),
    connection(b"POST", b"/sync", SYNC, headers=[(b"AUTHORIZATION", b"Bearer x"), (b"ORIGIN", b"https://example.com")]),
    connection(b"POST", b"/auth/refresh", b'{"refreshToken":"abc"}', split_body=True),
    connection(b"POST", b"/auth/logout", b"{}", declared=10),
    connection(b"GET", b"/auth/web/start?return_to=%2Faccount", headers=[(b"COOKIE", b"siwa_binding=" + b"b" * 200)]),
    connection(b"POST", b"/webhook/apple", b'{"payload":"' + b"p" * 300 + b'"}', headers=[(b"USER_AGENT", b"a" * 150)]),
]

directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fastcgi")
os.makedirs(directory, exist_ok=True)
for seed in SEEDS:
    with open(os.path.join(directory, hashlib.sha256(seed).hexdigest()[:16]), "wb") as out:
        out.write(seed)
print(f"{len(SEEDS)} seeds in {directory}")
