# The sync benchmark of `scripts/bench sync`; sourced by scripts/bench once its stack (MariaDB with
# an fsync per commit, the emulator, nginx, siwa release build) runs. Uses URL, TMP, BIN_DIR,
# DURATION, CONNECTIONS, THREADS and wrk_run.
USERS=1000
# A/B against another siwa (BENCH_BASE_BIN, with its migrations in BENCH_BASE_SQL): the database is
# made anew with the base's migrations, the base signs the users in and gives them their items, then
# this tree's migrations bring the schema (and the rows) to this siwa's; the cases then run with
# each binary in turn, on one stack, in one run.
if [ -n "${BENCH_BASE_BIN:-}" ]; then
    [ -x "$BENCH_BASE_BIN" ] && [ -d "${BENCH_BASE_SQL:-}" ] || die "BENCH_BASE_BIN needs BENCH_BASE_SQL, the base's migrations"
    stop_pidfile "$TMP/siwa.pid" 30
    mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -e "DROP DATABASE siwa; CREATE DATABASE siwa CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
    siwa_with_env "$BENCH_BASE_BIN" "$TMP/siwa.env" migrate --dir "$BENCH_BASE_SQL" >/dev/null
    start_siwa "$BENCH_BASE_BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"
fi
log "signing in $USERS users and giving each 20 lessons and 5 achievements, built in and declared"
# MariaDB's general log of the set-up, while siwa's connections are new (each prepares a statement the
# first time it sends it): the floor's statements are checked against it.
[ -z "${BENCH_BASE_BIN:-}" ] && general_log "$TMP/general.log"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$USERS" >"$TMP/sync_tokens"
python3 - "$URL" "$TMP/sync_tokens" "$TMP/sync_users" <<'PY'
import json, os, ssl, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, tokens, out = sys.argv[1:]
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
def post(path, body, token=None):
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, context=tls, timeout=30) as response:
        return json.load(response)
baseline = {"cursor": None,
            "progress": [{"beliefSystemId": "bench", "lessonId": f"l{i}", "status": "in_progress", "score": 10, "earnedXp": 5} for i in range(1, 21)],
            "achievements": [{"achievementId": f"a{i}", "progress": 1} for i in range(1, 6)]}
# The same items in the declared collections that declare them (bench/collections.json).
if os.environ.get("BENCH_SYNC_DECLARED", "1") == "1":
    baseline["collections"] = {"lessons": baseline["progress"], "badges": baseline["achievements"]}
def user(line):
    token, nonce = line.split()
    signed_in = post("/auth/apple", {"identityToken": token, "nonce": nonce, "device": "bench"})
    post("/sync", baseline, signed_in["accessToken"])
    return f'{signed_in["accessToken"]} {signed_in["user"]["id"]}'
with ThreadPoolExecutor(8) as pool:
    lines = list(pool.map(user, open(tokens).read().splitlines()))
open(out, "w").write("\n".join(lines) + "\n")
PY
[ -z "${BENCH_BASE_BIN:-}" ] && general_log off
# users_file: "<token> <sync version> <cursor tags>" from the database, so each run starts from the
# right cursors, each with its tag: the tags of the 400 versions from there (a run of 30 s at 5,000
# syncs a second reaches 150), so that the server answers each sync with what changed since the
# device's cursor, as it answers a device, not with the whole state.
users_file() {
    mariadb --no-defaults --socket="${BENCH_DB_SOCKET:-$TMP/db/mysql.sock}" -uroot -N -B siwa -e "SELECT id, sync_version FROM users" >"$TMP/versions"
    python3 "$SIWA_ROOT/bench/scale.py" sync-users "$TMP/sync_users" "$TMP/versions" "$TMP/secrets/data_keys" "$TMP/sync_run_users" \
        --versions 400
}
# Row writes to tables (Handler_write, Handler_update, Handler_delete: an upsert that updates counts
# twice; temporary tables are not counted), from the server's counters.
writes() { mariadb --no-defaults --socket="${BENCH_DB_SOCKET:-$TMP/db/mysql.sock}" -uroot -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_write', 'Handler_update', 'Handler_delete')" \
    | awk '{ n += $2 } END { print n + 0 }'; }

if [ -n "${BENCH_HOLD:-}" ]; then
    # Keeps the stack up for profiling: the variables a wrk or perf run needs go to the named file.
    printf 'URL=%s\nTMP=%s\n' "$URL" "$TMP" >"$BENCH_HOLD"
    log "holding the stack (see $BENCH_HOLD); stop with Ctrl-C"
    sleep infinity
fi
if [ -n "${BENCH_BASE_BIN:-}" ]; then
    stop_pidfile "$TMP/siwa.pid" 30
    siwa_with_env "$BIN" "$TMP/siwa.env" migrate >/dev/null
    log "flushing the set-up's writes to disk"
    sync
    ROUNDS_AB=${BENCH_AB_ROUNDS:-2}
    echo
    echo "A/B, $ROUNDS_AB rounds: base $BENCH_BASE_BIN, new $BIN; wrk -t2 -c$CONNECTIONS -d${DURATION}s through nginx, $USERS users,"
    echo "each POST /sync 20 progress and 5 achievement items (the built-in model) and the device's cursor"
    printf '%-4s %-34s %10s %9s %7s %s\n' "" case req/s p99_ms failed "(CPU us per request: siwa MariaDB nginx, statements)"
    declare -A total
    for round in $(seq "$ROUNDS_AB"); do
        for variant in base new; do
            stop_pidfile "$TMP/siwa.pid" 30
            if [ $variant = base ]; then start_siwa "$BENCH_BASE_BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"
            else start_siwa "$BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"; fi
            users_file
            wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/sync.lua" "$URL" -- "$TMP/sync_run_users" 2 unchanged >/dev/null 2>&1
            read -r c_rps _ <<<"$(wrk_run "$URL/bench/c-responder")"
            for mode in mixed unchanged; do
                users_file
                read -r s_rps s_p50 s_p99 s_max s_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sync.lua" -- "$TMP/sync_run_users" 2 $mode)
                total[$variant.$mode]=$(awk -v t="${total[$variant.$mode]:-0}" -v r="$s_rps" -v c="$c_rps" 'BEGIN { print t + r / c }')
                printf '%-4s %-34s %10s %9s %7s (%s)\n' $variant "POST /sync, $mode" "$s_rps" "$s_p99" "$s_err" "$(cat "$TMP/wrk_cpu")"
            done
        done
    done
    check_runs
    for mode in mixed unchanged; do
        awk -v b="${total[base.$mode]}" -v n="${total[new.$mode]}" -v r="$ROUNDS_AB" -v m=$mode 'BEGIN {
            printf "%s: new %.3fx the C responder, base %.3fx (means of %d rounds): new/base %.2fx\n", m, n / r, b / r, r, n / b }'
    done
    exit 0
fi
# The set-up leaves tens of megabytes of dirty pages (the new database's files, its redo log): written
# back by the kernel during the first runs, they slow the durable commits of whichever case runs first.
log "flushing the set-up's writes to disk"
sync
log "warm-up"
users_file
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/sync.lua" "$URL" -- "$TMP/sync_run_users" 2 unchanged >/dev/null 2>&1
wrk -t2 -c"$CONNECTIONS" -d2s "$URL/bench/c-responder" >/dev/null

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s through nginx (TLS, 2 workers), siwa release with $THREADS threads, MariaDB innodb_flush_log_at_trx_commit=1"
echo "$USERS users; each POST /sync carries 20 progress and 5 achievement items and the device's cursor"
printf '%-40s %10s %9s %9s %9s %7s %12s  %s\n' target req/s p50_ms p99_ms max_ms failed "row writes" "CPU us per request: siwa MariaDB nginx, statements"
read -r c_rps c_p50 c_p99 c_max c_err < <(wrk_run "$URL/bench/c-responder")
printf '%-40s %10s %9s %9s %9s %7s %12s  %s\n' "reference: C libfcgi responder" "$c_rps" "$c_p50" "$c_p99" "$c_max" "$c_err" "-" "$(cat "$TMP/wrk_cpu")"
declare -A rps p99
# The declared collections right after the built-in model's same load, then its reverse order (ABBA):
# each case that writes grows the database, which slows the cases after it.
modes="mixed declared declared2 mixed2 unchanged new"
[ "${BENCH_SYNC_DECLARED:-1}" = 1 ] || modes="mixed unchanged new"
for mode in $modes; do
    users_file
    before=$(writes)
    read -r s_rps s_p50 s_p99 s_max s_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sync.lua" -- "$TMP/sync_run_users" 2 "${mode%2}")
    written=$(( $(writes) - before ))
    rps[$mode]=$s_rps p99[$mode]=$s_p99
    case $mode in
        mixed) label="POST /sync, ~5 of 25 items change" ;;
        unchanged) label="POST /sync, all 25 unchanged" ;;
        new) label="POST /sync, all 25 new" ;;
        declared | declared2) label="declared collections, ~5 of 25 change" ;;
        mixed2) label="POST /sync, ~5 of 25 items change" ;;
    esac
    printf '%-40s %10s %9s %9s %9s %7s %12s  %s\n' "$label" "$s_rps" "$s_p50" "$s_p99" "$s_max" "$s_err" "$written" "$(cat "$TMP/wrk_cpu")"
    if [ "$s_err" != 0 ]; then
        # The measured run does not read answers' bodies: a short run of the same case shows them.
        users_file
        SYNC_BENCH_FAILURES=1 wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/sync.lua" "$URL" -- "$TMP/sync_run_users" 2 "${mode%2}" \
            2>&1 >/dev/null | sort | uniq -c | sort -rn | head -3
    fi
done
check_runs
# The floors: a changing sync's statements alone (bench/floor_db.c), one user per transaction on as
# many connections as wrk's, and as siwa's sync committer batches them: its 2 connections, each
# transaction the syncs of FLOOR_BATCH users (half the connections, so that every client waits in a
# batch). CPU per sync: the floor's own process, MariaDB.
f1_rps=0 fb_rps=0 FLOOR_BATCH=1
if [ "$FLOORS" = 1 ]; then
    while [ $((FLOOR_BATCH * 2)) -le $((CONNECTIONS / 2)) ] && [ $((FLOOR_BATCH * 2)) -le 64 ]; do FLOOR_BATCH=$((FLOOR_BATCH * 2)); done
    floor=$(floor_run sync "$CONNECTIONS" 1)
    read -r f1_rps f1_client f1_db <<<"$floor"
    floor=$(floor_run sync 2 "$FLOOR_BATCH")
    read -r fb_rps fb_client fb_db <<<"$floor"
    printf '%-40s %10s %s\n' "floor: one user per transaction" "$f1_rps" "(CPU us per sync: floor_db $f1_client, MariaDB $f1_db; $CONNECTIONS connections)"
    printf '%-40s %10s %s\n' "floor: $FLOOR_BATCH users per transaction" "$fb_rps" "(CPU us per sync: floor_db $fb_client, MariaDB $fb_db; 2 connections)"
    echo
    floor_statements "$TMP/general.log" 1 6 7 8
    echo
fi
awk -v s="${rps[mixed]}" -v p="${p99[mixed]}" -v u="${rps[unchanged]}" -v up="${p99[unchanged]}" -v c="$c_rps" -v n="$CONNECTIONS" -v f1="$f1_rps" -v fb="$fb_rps" -v b="$FLOOR_BATCH" -v d="$FLOOR_DIFFERS" 'BEGIN {
    printf "sync (~5 changes): %.2fx the C responder (target >= 0.5x), p99 %.2f ms (target <= 20 ms) at %d connections: %s\n",
        s / c, p, n, (s / c >= 0.5 && p <= 20) ? "met" : "NOT met"
    printf "sync (all unchanged): %.2fx the C responder (target >= 0.6x), p99 %.2f ms (target <= 20 ms): %s\n",
        u / c, up, (u / c >= 0.6 && up <= 20) ? "met" : "NOT met"
    if (f1 > 0) printf "sync (~5 changes) against its database floor: %.3fx one user per transaction (%d/s), %.3fx %d users per transaction (%d/s)%s\n",
        s / f1, f1, s / fb, b, fb, d }'
[ "${BENCH_SYNC_DECLARED:-1}" = 1 ] && awk -v d="${rps[declared]}" -v e="${rps[declared2]}" -v s="${rps[mixed]}" -v t="${rps[mixed2]}" -v c="$c_rps" 'BEGIN {
    d = (d + e) / 2; s = (s + t) / 2
    printf "declared collections (~5 changes, mean of two runs each): %.2fx the built-in model (target >= 0.9x): %s; built-in %.2fx C, declared %.2fx C\n",
        d / s, (d / s >= 0.9) ? "met" : "NOT met", s / c, d / c }'
echo "row writes: the server's Handler_write + Handler_update + Handler_delete during the run (an upsert counts 2; the unchanged case must show 0)"
echo "siwa errors logged during the run:"
grep -E ' (error|critical) ' "$TMP/siwa.log" | sed -E 's/^[^ ]+ //; s/request\.id=[^ ]+ //' | sort | uniq -c | sort -rn | head -5 || true
