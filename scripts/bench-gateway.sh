# The protected-location benchmark of `scripts/bench gateway`; sourced by scripts/bench once its
# stack (MariaDB, the emulator, nginx, siwa release build, the C responder) runs. Uses URL, TMP,
# BIN_DIR, DURATION, CONNECTIONS.

log "signing in 1,000 people for their access tokens"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count 1000 >"$TMP/identity_tokens"
python3 "$SIWA_ROOT/bench/sign_in_all.py" "$URL" "$TMP/identity_tokens" "$TMP/access_tokens" accessToken "bench gateway"
[ "$(wc -l <"$TMP/access_tokens")" -eq 1000 ] || die "the sign-ins did not give 1,000 access tokens"
head -n 1 "$TMP/access_tokens" >"$TMP/one_token"
curl -ksf -H "Authorization: Bearer $(cat "$TMP/one_token")" "$URL/example/whoami" >/dev/null || die "/example/whoami refuses a fresh token"
curl -ksf -H "Authorization: Bearer $(cat "$TMP/one_token")" "$URL/bench/protected-c" >/dev/null || die "/bench/protected-c does not answer"

log "warm-up"
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/bearer.lua" "$URL" -- "$TMP/access_tokens" /bench/protected-c >/dev/null 2>&1
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/bearer.lua" "$URL" -- "$TMP/access_tokens" /example/whoami >/dev/null 2>&1

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s through nginx (TLS, 2 workers): a protected location, its auth_request answered by"
echo "siwa (release, $THREADS threads; GET /auth/check, the session checked in MariaDB) or by the C responder (nothing checked)"
printf '%-52s %10s %9s %9s %9s %7s\n' target req/s p50_ms p99_ms max_ms failed
read -r c_rps c_p50 c_p99 c_max c_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/bearer.lua" -- "$TMP/access_tokens" /bench/protected-c)
printf '%-52s %10s %9s %9s %9s %7s\n' "reference: auth_request to the C responder" "$c_rps" "$c_p50" "$c_p99" "$c_max" "$c_err"
read -r m_rps m_p50 m_p99 m_max m_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/bearer.lua" -- "$TMP/access_tokens" /example/whoami)
printf '%-52s %10s %9s %9s %9s %7s\n' "siwa, 1,000 access tokens cycling" "$m_rps" "$m_p50" "$m_p99" "$m_max" "$m_err"
read -r o_rps o_p50 o_p99 o_max o_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/bearer.lua" -- "$TMP/one_token" /example/whoami)
printf '%-52s %10s %9s %9s %9s %7s\n' "siwa, one access token (every request a cache hit)" "$o_rps" "$o_p50" "$o_p99" "$o_max" "$o_err"
if [ -s "$TMP/failed_runs" ]; then echo "non-2xx answers of the last run (status, body start):"; sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -5; fi
check_runs
echo
awk -v m="$m_rps" -v mp="$m_p99" -v o="$o_rps" -v c="$c_rps" -v n="$CONNECTIONS" 'BEGIN {
    printf "1,000 tokens: %d/s = %.3fx the C reference (target >= 0.8x), p99 %.2f ms (target <= 20 ms) at %d connections: %s\n", m, m / c, mp, n, (m / c >= 0.8 && mp <= 20) ? "met" : "NOT met"
    printf "one token:    %d/s = %.3fx the C reference\n", o, o / c }'
echo "non-2xx answers (status, body start):"
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -5
