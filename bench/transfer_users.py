"""Makes COUNT test users at the Apple ID emulator (admin API) and writes, for each, the SQL that
gives them a user and a team-A identity in siwa's database, as signed-in users of com.example.siwa
would have.
    python3 bench/transfer_users.py EMULATOR_URL ADMIN_SECRET_FILE COUNT SQL_OUT
Each user also authorizes com.example.siwa at the emulator (a native sign-in), as a real user would
have before a transfer."""
import http.client
import json
import ssl
import sys
from urllib.parse import urlparse

url, secret_file, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
secret = open(secret_file).read().strip()
target = urlparse(url)
connection = http.client.HTTPSConnection(target.hostname, target.port, context=ssl._create_unverified_context())
headers = {"Authorization": "Bearer " + secret, "Content-Type": "application/json"}


def admin(path, body):
    connection.request("POST", path, json.dumps(body), headers)
    response = connection.getresponse()
    answer = response.read()
    if response.status not in (200, 201):
        sys.exit(f"{path}: {response.status} {answer[:200]!r}")
    return json.loads(answer)


with open(out, "w") as sql:
    for n in range(count):
        user = admin("/admin/users", {"email": f"bench.transfer.{n}@example.com"})
        admin("/admin/sign-in", {"userId": user["id"], "clientId": "com.example.siwa", "nonce": f"n{n}"})
        sql.write(f"INSERT INTO users (id, first_name) VALUES ({n + 1}, 'Bench');\n")
        sql.write(
            "INSERT INTO apple_identities (user_id, team_id, sub, audience) "
            f"VALUES ({n + 1}, 'TEAMID0001', '{user['sub']}', 'com.example.siwa');\n")
