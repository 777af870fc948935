#!/usr/bin/env bash
# docs/SECURITY.md rule 8: after every sign-in, refresh, web flow and job of the checks before this one, no
# token, code, nonce or full email appears in siwa's log or in nginx's logs.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

logs=("$E2E_TMP/siwa.log" "$E2E_TMP/nginx/error.log" "$E2E_TMP/nginx/access.log")
for log_file in "${logs[@]}"; do [ -s "$log_file" ] || fail "$log_file is missing or empty"; done
[ -s "$E2E_TMP/secrets_seen" ] || fail "the checks recorded no secrets to look for"
grep -q 'refresh token reused' "$E2E_TMP/siwa.log" || fail "the log does not have the events this check expects"

checked=0
while IFS= read -r secret; do
    [ ${#secret} -ge 8 ] || continue
    checked=$((checked + 1))
    for log_file in "${logs[@]}"; do
        ! grep -qF -- "$secret" "$log_file" || fail "a secret (${secret:0:12}…) appears in $log_file"
    done
done <"$E2E_TMP/secrets_seen"
# Whatever the checks did not record: anything shaped like a JWT, or a whole email address.
! grep -qE 'eyJ[A-Za-z0-9_-]{10,}\.' "${logs[@]}" || fail "a JWT in the logs: $(grep -ohE 'eyJ[A-Za-z0-9_-]{10,}' "${logs[@]}" | head -1)"
! grep -qiE '[a-z0-9._%+-]+@(example\.com|privaterelay\.appleid\.com)' "$E2E_TMP/siwa.log" || fail "an email address in siwa's log"
pass "none of the $checked tokens, codes, nonces and emails of the checks is in siwa's or nginx's logs; no JWT, no email address"
