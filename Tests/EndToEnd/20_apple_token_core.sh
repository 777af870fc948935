#!/usr/bin/env bash
# The Apple token core from outside: siwa verify-token on real Apple tokens with the key set
# fetched over TLS through nginx (a copy of Apple's keys that scripts/test serves, trusted through
# SIWA_APPLE_CA_FILE), and siwa client-secret checked by the openssl command line alone.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

KEYS_URL=$E2E_URL/test-fixtures/apple/auth/keys
fixture() { # fixture ID FIELD: a field of a real token in Tests/Fixtures
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
t=[t for t in d["tokens"] if t["id"]==sys.argv[2]][0]
print(t[sys.argv[3]])' "$SIWA_ROOT/Tests/Fixtures/vectors/apple/apple_identity_tokens.json" "$1" "$2"
}
verify() { SIWA_APPLE_CA_FILE=$E2E_TMP/tls/cert.pem "$E2E_BIN" verify-token --jwks "$KEYS_URL" "$@"; }

ID=vapor-jwt-dMlERBaFdK-2025
TOKEN=$(fixture $ID token)
AUD=$(fixture $ID aud)
CLOCK=$(fixture $ID suggested_fixed_clock)
EXP=$(fixture $ID exp)

out=$(verify "$TOKEN" --audience "$AUD" --at "$CLOCK") || fail "a real Apple token did not verify: $out"
grep -q "^pass  signature" <<<"$out" || fail "no signature line: $out"
grep -q "result: valid" <<<"$out" || fail "not valid: $out"
out=$(printf '%s\n' "$TOKEN" | verify - --audience "$AUD" --at "$CLOCK") || fail "token on standard input: $out"
pass "a real Apple token verifies with the key set fetched over TLS (argument and standard input)"

set +e
out=$(verify "$TOKEN" --audience "$AUD" --at "$((EXP + 60))"); status=$?
set -e
[ $status -eq 1 ] && grep -q "^FAIL  exp" <<<"$out" || fail "expired token: status $status, $out"
set +e
out=$(verify "$TOKEN" --audience com.example.other --at "$CLOCK"); status=$?
set -e
[ $status -eq 1 ] && grep -q "^FAIL  aud" <<<"$out" || fail "wrong audience: status $status, $out"
pass "after exp + 60 s, or for another audience, verify-token fails with exit status 1"

for input in "not a token" "a.b.c" "$(head -c 3000 /dev/urandom | base64 -w0)" "${TOKEN%?}A" ""; do
    set +e
    verify "$input" --audience "$AUD" --at "$CLOCK" >/dev/null 2>&1; status=$?
    set -e
    [ $status -eq 1 ] || fail "input ${input:0:20}...: exit status $status"
done
set +e
head -c 100000 /dev/urandom | verify - --audience "$AUD" >/dev/null 2>&1; status=$?
set -e
[ $status -eq 1 ] || fail "random bytes on standard input: exit status $status"
pass "garbage, truncated and random input exit 1 without a crash"

SECRET=$(siwa_with_env "$E2E_BIN" "$E2E_ENV" client-secret --client-id com.example.siwa)
out=$("$SIWA_ROOT/scripts/verify-client-secret" "$SECRET" "$E2E_TMP/apple/apple_key.p8") || fail "client secret: $out"
grep -q "Verified OK" <<<"$out" || fail "client secret: $out"
grep -q '"sub":"com.example.siwa"' <<<"$out" || fail "client secret sub: $out"
pass "siwa client-secret makes an ES256 JWT that openssl dgst verifies"
