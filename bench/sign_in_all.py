"""Signs in once per identity token of a file (token and nonce on alternate lines, as
`appleid-emulator mint` prints them) and writes one member of each answer a line:
    python3 bench/sign_in_all.py URL TOKENS_FILE OUT_FILE accessToken|refreshToken DEVICE"""
import json
import ssl
import sys
import urllib.request

url, tokens, out, member, device = sys.argv[1:]
tls = ssl.create_default_context()
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE
lines = open(tokens).read().split()
with open(out, "w") as written:
    for token, nonce in zip(lines[0::2], lines[1::2]):
        body = json.dumps({"identityToken": token, "nonce": nonce, "device": device}).encode()
        request = urllib.request.Request(url + "/auth/apple", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=tls) as response:
            written.write(json.load(response)[member] + "\n")
