"""Runs the signature-verification snippets (Python, Node, PHP) of docs/WEBHOOKS.md against a real delivery.

Usage: webhook_snippets.py PAGE SAMPLE_JSON SECRET_FILE WORK_DIR

PAGE is docs/WEBHOOKS.md: the snippets are the python, js and php blocks of its "Lifecycle webhooks" section.

SAMPLE_JSON holds a delivery as a receiver got it (the `Siwa-Signature` header and the raw body,
base64). Each snippet must accept it, and refuse it under a wrong secret, with one byte of the body
changed, with a `t` ten minutes old, and with no `v1`; a header carrying a second, unknown `v1`
(a secret being rotated) must still verify. Prints one line per language; exits 1 on a difference.
"""

import base64
import hashlib
import hmac
import json
import re
import subprocess
import sys
import time

page, sample_file, secret_file, work = sys.argv[1:5]
section = open(page).read().split("## Lifecycle webhooks", 1)[1].split("\n## ", 1)[0]
snippets = {lang: re.search(r"```" + lang + r"\n(.*?)```", section, re.S).group(1) for lang in ("python", "js", "php")}

sample = json.load(open(sample_file))
secret = open(secret_file).read().splitlines()[0].strip()
body = base64.b64decode(sample["body"])
now = int(time.time())


def signed(stamp, payload):
    return hmac.new(secret.encode(), str(stamp).encode() + b"." + payload, hashlib.sha256).hexdigest()


altered = bytearray(body)
altered[-2] ^= 1
cases = [
    ("the delivery as received", sample["header"], body, secret, True),
    ("a wrong secret", sample["header"], body, "x" * 64, False),
    ("a body changed by one bit", sample["header"], bytes(altered), secret, False),
    ("a t ten minutes old", f"t={now - 600},v1={signed(now - 600, body)}", body, secret, False),
    ("no v1", f"t={now}", body, secret, False),
    ("an unknown v1 before the right one", f"t={now},v1={'0' * 64},v1={signed(now, body)}", body, secret, True),
]
cases_file = f"{work}/snippet_cases.json"
json.dump([{"header": h, "body": base64.b64encode(b).decode(), "secret": s} for _, h, b, s, _ in cases], open(cases_file, "w"))

programs = {
    "python": (["python3"], snippets["python"] + """
import base64, json, sys
cases = json.load(open(sys.argv[1]))
print(json.dumps([verify_siwa_signature(c["header"], base64.b64decode(c["body"]), c["secret"].encode()) for c in cases]))
"""),
    "js": (["node"], snippets["js"] + """
const cases = JSON.parse(require("node:fs").readFileSync(process.argv[2]));
console.log(JSON.stringify(cases.map((c) => verifySiwaSignature(c.header, Buffer.from(c.body, "base64"), c.secret))));
"""),
    "php": (["php"], snippets["php"] + """
$cases = json_decode(file_get_contents($argv[1]), true);
echo json_encode(array_map(fn ($c) => siwa_verify_signature($c['header'], base64_decode($c['body']), $c['secret']), $cases)), "\\n";
"""),
}
failed = False
for lang, (command, program) in programs.items():
    path = f"{work}/snippet.{lang}"
    open(path, "w").write(program)
    run = subprocess.run(command + [path, cases_file], capture_output=True, text=True)
    try:
        results = json.loads(run.stdout)
    except ValueError:
        print(f"FAIL: the {lang} snippet did not run: {run.stdout}{run.stderr}", file=sys.stderr)
        failed = True
        continue
    wrong = [name for (name, *_, expected), got in zip(cases, results) if got is not expected]
    if wrong or len(results) != len(cases):
        print(f"FAIL: the {lang} snippet is wrong for: {', '.join(wrong)}", file=sys.stderr)
        failed = True
    else:
        print(f"  ok: the {lang} snippet of docs/WEBHOOKS.md accepts a real delivery and a rotation header, refuses "
              f"a wrong secret, a changed body, a stale t and a header without v1")
sys.exit(1 if failed else 0)
