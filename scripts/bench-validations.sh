# The daily check of Apple's refresh tokens at scale, `scripts/bench validations`; sourced by
# scripts/bench once its stack (MariaDB, the emulator, nginx, siwa release build) runs. Uses URL,
# TMP, BIN, BIN_DIR, EMULATOR_PORT.
# BENCH_VALIDATION_TOKENS tokens (100,000) all due, made in SQL from 200 real sign-ins with codes
# (each copy carries one of their sealed tokens, which the emulator still knows), the emulator
# answering in 200 ms as Apple does; `siwa jobs` with BENCH_VALIDATION_LANES lanes (40) and its
# default rate ceiling runs for VALIDATION_SECONDS (60). Printed: the checks a second achieved
# against the 116 a second that 10 million tokens need, and the p99 of sign-ins with codes at 20 a
# second during the run against their p99 with `siwa jobs` stopped, timed first in the same run.

TOKENS=${BENCH_VALIDATION_TOKENS:-100000}
LANES=${BENCH_VALIDATION_LANES:-40}
VALIDATION_SECONDS=${VALIDATION_SECONDS:-60}
SEEDS=200
SIGN_IN_RATE=20
NEEDED=116

db() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B siwa -e "$1"; }
stop_validation_bench() { stop_pidfile "$TMP/jobs.pid" 30 2>/dev/null || true; }
trap 'stop_validation_bench; cleanup' EXIT

ADMIN_AUTH="Authorization: Bearer $(cat "$TMP/apple/admin_secret")"
APPLE_ADMIN=https://localhost:$EMULATOR_PORT/admin
behave() { curl -ksf -H "$ADMIN_AUTH" -d "$1" "$APPLE_ADMIN/behaviour" >/dev/null || die "the emulator's behaviour $1"; }
# Sign-ins with codes, one JSON body a line: sign_ins COUNT FILE
sign_ins() {
    curl -ksf -H "$ADMIN_AUTH" -d "{\"clientId\":\"com.example.siwa\",\"count\":$1}" "$APPLE_ADMIN/sign-ins" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["signIns"]:
    print(json.dumps({"identityToken": s["identityToken"], "authorizationCode": s["authorizationCode"], "nonce": s["nonce"], "device": "bench"}))
' >"$2"
}

log "$SEEDS sign-ins with codes: each stores a sealed Apple refresh token the emulator knows"
sign_ins "$SEEDS" "$TMP/seed_sign_ins"
python3 - "$URL" "$TMP/seed_sign_ins" "$TMP/sync_access" <<'PY'
import http.client, json, ssl, sys
from urllib.parse import urlparse
url = urlparse(sys.argv[1])
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
conn = http.client.HTTPSConnection(url.hostname, url.port, context=tls, timeout=30)
first = None
for body in open(sys.argv[2]):
    conn.request("POST", "/auth/apple", body=body.strip(), headers={"Content-Type": "application/json"})
    response = conn.getresponse(); answer = response.read()
    if response.status != 200: sys.exit(f"seed sign-in answered {response.status}")
    # The first user's access token: apple_load.py times that user's syncs too.
    first = first or json.loads(answer)["accessToken"]
open(sys.argv[3], "w").write(first)
PY
seeded=$(db "SELECT COUNT(*) FROM apple_tokens")
[ "$seeded" -ge "$SEEDS" ] || die "only $seeded Apple tokens stored by the seed sign-ins"

log "making $TOKENS Apple tokens in SQL, all due (the oldest an hour ago)"
started=$(date +%s.%N)
db "
SET @base = (SELECT COALESCE(MAX(id), 0) FROM users) + 1000000;
CREATE TEMPORARY TABLE seeds (n INT PRIMARY KEY, token VARBINARY(1024), token_key_id VARCHAR(32), client_id VARCHAR(255));
INSERT INTO seeds SELECT ROW_NUMBER() OVER (ORDER BY identity_id) - 1, token, token_key_id, client_id FROM apple_tokens;
SET @seeds = (SELECT COUNT(*) FROM seeds);
INSERT INTO users (id) SELECT @base + seq FROM seq_1_to_$TOKENS;
INSERT INTO apple_identities (id, user_id, team_id, sub, audience)
    SELECT @base + seq, @base + seq, (SELECT team_id FROM apple_identities LIMIT 1), CONCAT('bench.', seq), 'com.example.siwa'
    FROM seq_1_to_$TOKENS;
INSERT INTO apple_tokens (identity_id, client_id, token, token_key_id, next_validation_at)
    SELECT @base + seq, s.client_id, s.token, s.token_key_id, UTC_TIMESTAMP(3) - INTERVAL (seq MOD 3600) SECOND
    FROM seq_1_to_$TOKENS JOIN seeds s ON s.n = seq MOD @seeds;
UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) + INTERVAL 1 DAY WHERE identity_id < @base;
" || die "the tokens could not be made"
made=$(db "SELECT COUNT(*) FROM apple_tokens WHERE next_validation_at <= UTC_TIMESTAMP(3)")
log "$made tokens due, made in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"

# The metric's statement on this table, as GET /metrics runs it (the head of the index only).
metric_ms=$(python3 - "$TMP/db/mysql.sock" <<'PY'
import subprocess, sys, time
sql = ("SELECT GREATEST(0, COALESCE(TIMESTAMPDIFF(SECOND, (SELECT MIN(next_validation_at) FROM apple_tokens), UTC_TIMESTAMP(3)), 0)) AS overdue, "
       "(SELECT COUNT(*) FROM (SELECT 1 FROM apple_tokens WHERE next_validation_at <= UTC_TIMESTAMP(3) LIMIT 10000) d) AS due;" * 20)
started = time.monotonic()
subprocess.run(["mariadb", "--no-defaults", f"--socket={sys.argv[1]}", "-uroot", "-N", "-B", "siwa", "-e", sql], check=True, capture_output=True)
print(f"{(time.monotonic() - started) * 1000 / 20:.2f}")
PY
)
metrics=$(curl -ksf "$URL/metrics" | grep -E '^siwa_apple_validation(s_due|_overdue_seconds) ' | tr '\n' ' ')

# The sign-ins timed: with codes, Apple at 200 ms, open loop.
sign_ins $((SIGN_IN_RATE * 30 * 2)) "$TMP/load_sign_ins"
head -n $((SIGN_IN_RATE * 30)) "$TMP/load_sign_ins" >"$TMP/load_idle"
tail -n +$((SIGN_IN_RATE * 30 + 1)) "$TMP/load_sign_ins" >"$TMP/load_busy"
SYNC_ACCESS=$(cat "$TMP/sync_access")
behave '{"latencyMs":200}'
sync

log "sign-ins with codes at $SIGN_IN_RATE/s for 20 s, siwa jobs not running (the reference)"
idle=$(python3 "$SIWA_ROOT/bench/apple_load.py" "$URL" "$TMP/load_idle" "$SYNC_ACCESS" 20 "$SIGN_IN_RATE" 32)

log "siwa jobs with $LANES lanes for $VALIDATION_SECONDS s; sign-ins with codes at $SIGN_IN_RATE/s during its last 20 s"
cp "$TMP/siwa.env" "$TMP/jobs.env"
echo "SIWA_APPLE_VALIDATION_LANES=$LANES" >>"$TMP/jobs.env"
echo "SIWA_LOG_LEVEL=notice" >>"$TMP/jobs.env"
rate_setting=$({ grep -E '^SIWA_APPLE_VALIDATION_RATE=' "$TMP/jobs.env" || true; } | tail -1 | cut -d= -f2)
before_cpu=$(for name in siwa appleid-emulato mariadbd; do cpu_ticks "$name"; done)
(clear_siwa_variables; set -a; . "$TMP/jobs.env"; set +a; exec "$BIN" jobs) >>"$TMP/jobs.log" 2>&1 &
echo $! >"$TMP/jobs.pid"
t0=$(date +%s.%N)
sleep $((VALIDATION_SECONDS - 20))
pidfile_alive "$TMP/jobs.pid" || die "siwa jobs ended: $(tail -5 "$TMP/jobs.log")"
busy=$(python3 "$SIWA_ROOT/bench/apple_load.py" "$URL" "$TMP/load_busy" "$SYNC_ACCESS" 20 "$SIGN_IN_RATE" 32)
# Checked since the start: the tokens made above (the sign-ins during the run store new ones).
done_checks=$(db "SELECT COUNT(*) FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id
    WHERE t.last_validated_at >= FROM_UNIXTIME($t0) AND i.sub LIKE 'bench.%'")
t1=$(date +%s.%N)
after_cpu=$(for name in siwa appleid-emulato mariadbd; do cpu_ticks "$name"; done)
threads=$(ls "/proc/$(cat "$TMP/jobs.pid")/task" | wc -l)
in_flight=$(mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = 'siwa'")
metrics_after=$(curl -ksf "$URL/metrics" | grep -E '^siwa_apple_validation(s_due|_overdue_seconds) ' | tr '\n' ' ')
stop_pidfile "$TMP/jobs.pid" 30
behave '{}'
cpu=$(paste <(printf 'siwa\nemulator\nmariadbd\n') <(echo "$before_cpu") <(echo "$after_cpu") \
    | awk -v hz="$(getconf CLK_TCK)" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '{ printf "%s %.0f%%  ", $1, ($3 - $2) * 100 / hz / s }')

echo
echo "the daily check of Apple's tokens: $TOKENS due, the emulator answering in 200 ms, siwa jobs with $LANES lanes"
echo "  and rate ceiling ${rate_setting:-the default (150/s)}, for $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
echo "GET /metrics before: $metrics"
echo "GET /metrics after:  $metrics_after"
echo "the metric's statement on $TOKENS tokens: $metric_ms ms"
echo "siwa jobs: $threads threads; connections to the siwa database at the end (serve and jobs): $in_flight"
echo "CPU during the run (of one core; $(nproc) cores): $cpu"
python3 - "$done_checks" "$t0" "$t1" "$NEEDED" "$LANES" "$idle" "$busy" "$FAILED_FRACTION" <<'PY'
import json, sys
done, t0, t1, needed, lanes = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
idle, busy = json.loads(sys.argv[6]), json.loads(sys.argv[7])
rate = done / (t1 - t0)
print(f"validations: {done} in {t1 - t0:.1f} s = {rate:.1f}/s with {lanes} lanes, against {needed}/s for 10 million tokens a day: "
      + ("met" if rate >= needed else "NOT met") + f" ({rate * 86400 / 1e6:.1f} million a day)")
for name, run in (("siwa jobs not running", idle), ("siwa jobs validating", busy)):
    s = run["signIns"]
    print(f"sign-ins with codes at {s['rate']}/s, {name}: statuses {s['statuses']}, p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, "
          f"health p99 {run['health']['p99_ms']} ms")
print(f"sign-in p99 during the validations against idle: {busy['signIns']['p99_ms']} ms vs {idle['signIns']['p99_ms']} ms")
# Failed sign-ins are not measured ones: past FAILED_FRACTION of them the run fails (scripts/bench).
failed = [(name, run["signIns"]) for name, run in (("siwa jobs not running", idle), ("siwa jobs validating", busy))
          if sum(n for status, n in run["signIns"]["statuses"].items() if not status.startswith("2")) > float(sys.argv[8]) * run["signIns"]["count"]]
for name, s in failed:
    print(f"FAILED: sign-ins with codes, {name}: statuses {s['statuses']} of {s['count']}, more than {float(sys.argv[8]) * 100} % not 2xx")
sys.exit(1 if failed else 0)
PY
echo "siwa jobs warnings and errors:"
{ grep -E '(warning|error|critical)' "$TMP/jobs.log" || true; } | sed -E 's/^[^ ]+ //' | sort | uniq -c | sort -rn | head -5
