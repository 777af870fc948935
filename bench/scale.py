"""The users of `scripts/bench scale` in a database of `scripts/bench seed` (bench/seed/*.sql):

    python3 bench/scale.py sample USERS STRIDE COUNT SEED [--live] [--distinct] [--exclude FILE]
        COUNT user ids (one a line) drawn in the Zipf law of activity: an activity bucket b of 1,000
        with probability proportional to 1/b, then a user of that bucket (ranks (b-1)N/1000 to
        bN/1000), so that a database of 1,000 and one of 1,000,000 users see the same mix of users
        (a user's records follow the bucket); deleted ids are drawn again. --live: only users whose
        seeded iPhone session is still active; --distinct: each user once; --exclude: not those ids
        (fewer than COUNT when the users run out).
    python3 bench/scale.py refresh-tokens IDS_FILE
        the seeded refresh token of each user's iPhone session (session 4 * id)
    python3 bench/scale.py sign-in URL TOKENS_FILE OUT_FILE
        signs in once per `<identity token> <nonce>` line (8 at a time): `<access token> <user id>`
    python3 bench/scale.py sync-users SIGNED_IN_FILE VERSIONS_FILE DATA_KEYS_FILE OUT_FILE [--versions N]
        `<access token> <sync version> <cursor tags> <user id>` per signed-in line, the version from VERSIONS_FILE
        (`<user id> <sync_version>` lines) and the tag the server gives that cursor of that user
        (SyncCursorBinding: HMAC-SHA256 under a key derived from the first data key); with --versions,
        the tags of the N cursors from that version on (of 32 characters each, joined by commas), for
        a device whose every sync moves its version on by one
"""
import base64
import hashlib
import hmac
import json
import random
import ssl
import sys
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

BUCKETS = 1000
TWO_YEARS = 63072000


def deleted(user_id):
    return zlib.crc32(str(user_id).encode()) % 50 == 0


def live(user_id, users, stride):
    """Whether the seeded iPhone session of the user is active: used in the last 30 days (rank up
    to a tenth of the users), or created in the last 80 days (it expires 90 days after)."""
    inverse = pow(stride, -1, users) if users > 1 else 0
    rank = (user_id - 1) * inverse % users + 1
    return rank / users <= 0.1 or (users - user_id) * TWO_YEARS / users + 3600 < 80 * 86400


def sample(users, stride, count, seed, only_live, distinct, excluded):
    generator = random.Random(seed)
    weights = [1 / b for b in range(1, BUCKETS + 1)]
    per_bucket = max(users // BUCKETS, 1)
    chosen, seen = [], set(excluded)
    # With --live and --distinct the users may run out: it stops after 100 batches found none.
    idle = 0
    while len(chosen) < count and idle < 100:
        before = len(chosen)
        for bucket in generator.choices(range(1, BUCKETS + 1), weights, k=4096):
            rank = min((bucket - 1) * per_bucket + generator.randint(1, per_bucket), users)
            user_id = (rank - 1) * stride % users + 1 if users > 1 else 1
            if deleted(user_id) or (only_live and not live(user_id, users, stride)) or (distinct and user_id in seen):
                continue
            if distinct:
                seen.add(user_id)
            elif user_id in seen:
                continue
            chosen.append(user_id)
            if len(chosen) == count:
                break
        idle = idle + 1 if len(chosen) == before else 0
    return chosen


def refresh_token(session_id):
    digest = hashlib.sha256(f"siwa-seed-refresh|{session_id}".encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign_in_all(url, tokens_file, out_file):
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE

    def sign_in(line):
        token, nonce = line.split()
        body = json.dumps({"identityToken": token, "nonce": nonce, "device": "bench scale"}).encode()
        request = urllib.request.Request(url + "/auth/apple", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=tls, timeout=30) as response:
            answer = json.load(response)
        return f'{answer["accessToken"]} {answer["user"]["id"]}'

    with ThreadPoolExecutor(8) as pool:
        lines = list(pool.map(sign_in, open(tokens_file).read().splitlines()))
    open(out_file, "w").write("\n".join(lines) + "\n")


def sync_users(signed_in_file, versions_file, data_keys_file, out_file, count=1):
    versions = dict(line.split() for line in open(versions_file).read().splitlines())
    key_line = next(line for line in open(data_keys_file).read().splitlines() if line.strip() and not line.startswith("#"))
    derived = hmac.new(base64.b64decode(key_line.split()[1]), b"siwa sync cursor binding v1", hashlib.sha256).digest()
    out = []
    for line in open(signed_in_file).read().splitlines():
        token, user_id = line.split()
        version = versions[user_id]
        tags = ",".join(
            hmac.new(derived, f"{user_id} {int(version) + n}".encode(), hashlib.sha256).digest()[:16].hex() for n in range(count))
        out.append(f"{token} {version} {tags} {user_id}")
    open(out_file, "w").write("\n".join(out) + "\n")


def main(args):
    if args[0] == "sample":
        users, stride, count, seed = (int(a) for a in args[1:5])
        excluded = []
        if "--exclude" in args:
            excluded = [int(line) for line in open(args[args.index("--exclude") + 1]).read().split()]
        for user_id in sample(users, stride, count, seed, "--live" in args, "--distinct" in args, excluded):
            print(user_id)
    elif args[0] == "refresh-tokens":
        for line in open(args[1]).read().split():
            print(refresh_token(4 * int(line)))
    elif args[0] == "sign-in":
        sign_in_all(*args[1:4])
    elif args[0] == "sync-users":
        sync_users(*args[1:5], count=int(args[args.index("--versions") + 1]) if "--versions" in args else 1)
    else:
        sys.exit(__doc__)


main(sys.argv[1:])
