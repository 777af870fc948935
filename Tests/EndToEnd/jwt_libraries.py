"""Our access tokens verified by a standard JWT library, as an app's own backend would (40_jwt_libraries.sh):
PyJWT's PyJWKClient fetches /auth/jwks.json through nginx and verifies a token from a real sign-in
(signature, `iss`, `exp`, `iat`, the algorithm); it refuses the same claims expired, and signed by
another key under our key id. siwa refuses the forged token too."""

import glob
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt import PyJWKClient

from schemathesis_hooks import BASE, post, sign_in_body

TLS = ssl.create_default_context(cafile=os.path.join(os.environ["E2E_TMP"], "tls", "cert.pem"))
ALGORITHMS = ["ES256", "RS256"]

grant = post(BASE + "/auth/apple", sign_in_body())
token = grant["accessToken"]
keys = PyJWKClient(BASE + "/auth/jwks.json", ssl_context=TLS)
key = keys.get_signing_key_from_jwt(token)
claims = jwt.decode(token, key.key, algorithms=ALGORITHMS, issuer=BASE, options={"require": ["exp", "iat", "iss", "sub"]})
assert claims["sub"] == grant["user"]["id"] and claims["sid"] == grant["sessionId"], claims
header = jwt.get_unverified_header(token)
assert header["typ"] == "at+jwt" and header["alg"] == "ES256", header

# The same claims, expired, signed with siwa's own key: refused as expired.
own_key = sorted(glob.glob(os.path.join(os.environ["E2E_TMP"], "secrets", "access_keys", "*.pem")))[-1]
now = int(time.time())
expired = jwt.encode(dict(claims, iat=now - 2000, exp=now - 1000), open(own_key).read(), algorithm="ES256", headers=header)
try:
    jwt.decode(expired, key.key, algorithms=ALGORITHMS, issuer=BASE)
    sys.exit("PyJWT accepted an expired access token")
except jwt.ExpiredSignatureError:
    pass

# Signed by another P-256 key under our key id: refused by PyJWT and by siwa.
forged = jwt.encode(claims, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256", headers=header)
try:
    jwt.decode(forged, keys.get_signing_key_from_jwt(forged).key, algorithms=ALGORITHMS, issuer=BASE)
    sys.exit("PyJWT accepted a token signed by another key")
except jwt.InvalidSignatureError:
    pass
request = urllib.request.Request(BASE + "/auth/me", headers={"Authorization": "Bearer " + forged})
try:
    urllib.request.urlopen(request, context=TLS, timeout=10)
    sys.exit("siwa accepted a token signed by another key")
except urllib.error.HTTPError as error:
    assert error.code == 401, error.code

print(f"PyJWT {jwt.__version__} verifies an access token against /auth/jwks.json ({header['alg']}, kid {header['kid']}); "
      "refuses it expired and signed by another key (siwa refuses that one too)")
