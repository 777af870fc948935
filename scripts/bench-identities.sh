# The benchmarks of `scripts/bench identities`; sourced by scripts/bench once its stack (MariaDB,
# the emulator, nginx, siwa release build) runs. Uses URL, TMP, BIN, BIN_DIR, DURATION, CONNECTIONS.
#
# 1. Guest accounts: POST /auth/guest (a user and a session per request, one transaction) against
#    GET /health in the same run (nginx's per-address limits lifted for the load's address, as in
#    every mode of scripts/bench).
# 2. Team transfer: `siwa transfer prepare` and `complete` over TRANSFER_USERS identities (500 by
#    default) at the emulator with no pacing, against the round trips of the same count of requests
#    to the emulator on one kept-alive connection (GET /auth/keys), the floor of one call per user.

log "warm-up"
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/guest.lua" "$URL" >/dev/null 2>&1
wrk -t2 -c"$CONNECTIONS" -d2s "$URL/health" >/dev/null

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s through nginx (TLS, 2 workers), siwa release with $THREADS threads, MariaDB with fsync per commit"
printf '%-44s %10s %9s %9s %9s %7s\n' target req/s p50_ms p99_ms max_ms failed
read -r h_rps h_p50 h_p99 h_max h_err < <(wrk_run "$URL/health")
printf '%-44s %10s %9s %9s %9s %7s\n' "reference: GET /health (DB ping)" "$h_rps" "$h_p50" "$h_p99" "$h_max" "$h_err"
read -r g_rps g_p50 g_p99 g_max g_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/guest.lua")
printf '%-44s %10s %9s %9s %9s %7s\n' "POST /auth/guest (new user and session)" "$g_rps" "$g_p50" "$g_p99" "$g_max" "$g_err"
if [ -s "$TMP/failed_runs" ]; then echo "non-2xx answers of the guest run (status, body start):"; sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -5; fi
check_runs
awk -v g="$g_rps" -v h="$h_rps" 'BEGIN { printf "guest accounts: %d/s = %.3fx GET /health\n", g, g / h }'
echo "non-2xx answers of the guest run (status, body start):"
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -5

USERS=${TRANSFER_USERS:-500}
log "making $USERS users at the emulator and their team-A identities in a database of their own"
create_database "$TMP/db" siwa_transfer siwa "$TMP/db_password"
sed -e 's/^SIWA_DB_NAME=.*/SIWA_DB_NAME=siwa_transfer/' "$TMP/siwa.env" >"$TMP/transfer_a.env"
sed -e 's/^SIWA_APPLE_TEAM_ID=.*/SIWA_APPLE_TEAM_ID=TEAMID0002/' -e 's/^SIWA_APPLE_KEY_ID=.*/SIWA_APPLE_KEY_ID=KEYID00002/' \
    -e "s|^SIWA_APPLE_PRIVATE_KEY_FILE=.*|SIWA_APPLE_PRIVATE_KEY_FILE=$TMP/apple/apple_key_b.p8|" "$TMP/transfer_a.env" >"$TMP/transfer_b.env"
siwa_with_env "$BIN" "$TMP/transfer_a.env" migrate >/dev/null
python3 "$SIWA_ROOT/bench/transfer_users.py" "https://localhost:$EMULATOR_PORT" "$TMP/apple/admin_secret" "$USERS" "$TMP/transfer_users.sql"
mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot siwa_transfer <"$TMP/transfer_users.sql"

timed() { local start; start=$(date +%s%N); "$@" >"$TMP/timed.out" 2>&1 || { cat "$TMP/timed.out"; die "$* failed"; }; echo $(( ($(date +%s%N) - start) / 1000000 )); }
reference_ms=$(python3 - "$EMULATOR_PORT" "$USERS" <<'PY'
import http.client, ssl, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
connection = http.client.HTTPSConnection("localhost", port, context=ssl._create_unverified_context())
start = time.monotonic()
for _ in range(count):
    connection.request("GET", "/auth/keys")
    connection.getresponse().read()
print(int((time.monotonic() - start) * 1000))
PY
)
prepare_ms=$(timed siwa_with_env "$BIN" "$TMP/transfer_a.env" transfer prepare --to-team TEAMID0002 --pace-ms 0)
tail -1 "$TMP/timed.out"
curl -ksf -H "Authorization: Bearer $(cat "$TMP/apple/admin_secret")" -d '{"clientIds":["com.example.siwa"],"toTeam":"TEAMID0002"}' \
    "https://localhost:$EMULATOR_PORT/admin/transfers" >/dev/null || die "the emulator's transfer failed"
complete_ms=$(timed siwa_with_env "$BIN" "$TMP/transfer_b.env" transfer complete --pace-ms 0)
tail -1 "$TMP/timed.out"
echo
awk -v n="$USERS" -v r="$reference_ms" -v p="$prepare_ms" -v c="$complete_ms" 'BEGIN {
    printf "reference: %d GET /auth/keys on one kept-alive connection: %d ms (%.0f/s)\n", n, r, n * 1000 / r
    printf "siwa transfer prepare, %d identities, no pacing: %d ms (%.0f identities/s, %.2fx the reference)\n", n, p, n * 1000 / p, r / p
    printf "siwa transfer complete, %d identities, no pacing: %d ms (%.0f identities/s, %.2fx the reference)\n", n, c, n * 1000 / c, r / c
    printf "at the default pace of 100 ms: about %.0f minutes per 10,000 users and step\n", 10000 * 0.1 / 60 }'
