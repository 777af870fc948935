# The frozen-database check of `scripts/bench dbfreeze`; sourced by scripts/bench once its stack
# (MariaDB, the emulator, nginx, siwa release build with the default SIWA_DB_TIMEOUT of 10 s) runs.
# Uses URL, TMP, BIN_DIR.
# The acceptance point: MariaDB stopped with SIGSTOP for 12 s and for 35 s under load, with the
# default configuration: every request answered within 10.5 s (503 or success), and no acknowledged
# write lost. The load (bench/freeze_load.py): 64 users each writing a new lesson through POST /sync
# every 20 ms, 8 sessions refreshed in turn, sign-ins with new identity tokens on two threads, and
# GET /health, every request logged as it ends with its start: 75 clients, more than the 64 worker
# threads, so that some wait in the queue for a thread. The first wave, the requests in flight when
# MariaDB stopped, is printed apart, against the requests begun while it was stopped (the
# reference: each has SIWA_DB_TIMEOUT from its start). A refresh answered 503 whose rotation
# MariaDB still commits when it wakes, retried after the reuse interval (10 s), ends its session
# (401, and its last acknowledged token no longer refreshes): counted apart, not as a lost write.
# BENCH_FREEZES: the freezes' lengths in seconds ("12 35"); BENCH_FREEZE_USERS: the syncing users (64).

USERS=${BENCH_FREEZE_USERS:-64}
REFRESHERS=8
FREEZES=${BENCH_FREEZES:-12 35}
# Load before, between and after the freezes, in seconds.
SETTLE=10
# The longest a request may take: SIWA_DB_TIMEOUT (the default, 10 s) and the stated margin.
LIMIT_MS=10500

db() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B siwa -e "$1"; }
db_pid=$(cat "$TMP/db/mariadb.pid")
trap 'kill -CONT "$db_pid" 2>/dev/null || true; cleanup' EXIT
# Sends SIGNAL to MariaDB and prints the time it was sent, on the load's clock (CLOCK_MONOTONIC).
signal_db() { python3 -c 'import os, sys, time; os.kill(int(sys.argv[1]), int(sys.argv[2])); print(time.monotonic())' "$db_pid" "$1"; }

log "signing in $USERS users and $REFRESHERS sessions"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$USERS" >"$TMP/tokens"
python3 "$SIWA_ROOT/bench/sign_in_all.py" "$URL" "$TMP/tokens" "$TMP/access_tokens" accessToken "bench freeze"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$REFRESHERS" >"$TMP/tokens"
python3 "$SIWA_ROOT/bench/sign_in_all.py" "$URL" "$TMP/tokens" "$TMP/refresh_tokens" refreshToken "bench freeze"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count 4000 >"$TMP/identity_tokens"

total=$SETTLE
for freeze in $FREEZES; do total=$((total + freeze + SETTLE)); done
python3 "$SIWA_ROOT/bench/freeze_load.py" "$URL" "$TMP/access_tokens" "$total" "$TMP/freeze.jsonl" \
    "$TMP/refresh_tokens" "$TMP/identity_tokens" &
load_pid=$!
answered() { local n; n=$(grep -c '"status": 200' "$TMP/freeze.jsonl" 2>/dev/null) || true; echo "${n:-0}"; }
# Waits (at most 30 s) for 100 more successful requests than now: the load runs, or runs again.
flowing() {
    local target=$(($(answered) + 100)) deadline=$((SECONDS + 30))
    until [ "$(answered)" -ge $target ]; do
        [ $SECONDS -lt $deadline ] || die "the load does not get answers: $(tail -3 "$TMP/freeze.jsonl")"
        sleep 0.1
    done
}
: >"$TMP/freezes"
flowing
for freeze in $FREEZES; do
    log "MariaDB stopped (SIGSTOP) for $freeze s"
    stopped=$(signal_db "$(kill -l STOP)")
    sleep "$freeze"  # the length of the freeze, not a wait for anything
    echo "$stopped $(signal_db "$(kill -l CONT)")" >>"$TMP/freezes"
    log "MariaDB continued"
    flowing
    sleep "$SETTLE"  # load after the freeze, as long as before it
done
wait "$load_pid"

db "SELECT lesson_id FROM progress WHERE belief_system_id = 'freeze'" >"$TMP/stored"
# Every session's refresh token last acknowledged still refreshes: an acknowledged rotation was kept.
refresh_lost=0
while read -r token; do
    status=$(curl -ks -o /dev/null -w '%{http_code}' -X POST "$URL/auth/refresh" -H 'Content-Type: application/json' \
        -d "{\"refreshToken\":\"$token\"}")
    [ "$status" = 200 ] || refresh_lost=$((refresh_lost + 1))
done <"$TMP/freeze.jsonl.refresh"
echo
python3 - "$TMP/freeze.jsonl" "$TMP/stored" "$TMP/freezes" "$LIMIT_MS" "$refresh_lost" <<'PY'
import collections, json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
stored = set(open(sys.argv[2]).read().split())
freezes = [tuple(map(float, line.split())) for line in open(sys.argv[3])]
limit, refresh_lost = float(sys.argv[4]), int(sys.argv[5])
routes = ("sync", "refresh", "signIn", "health")
print(f"siwa with the default SIWA_DB_TIMEOUT (10 s); MariaDB stopped for "
      f"{' s and '.join(f'{end - start:.0f}' for start, end in freezes)} s under load")
print(f"{'route':<8} {'requests':>8} {'statuses':<40} {'max_ms':>9} {'over':>5} {'unanswered':>10}")
worst, late_total, unanswered_total = 0.0, 0, 0
for route in routes:
    mine = [e for e in entries if e["route"] == route]
    statuses = dict(sorted(collections.Counter(str(e["status"]) for e in mine).items()))
    late = sum(1 for e in mine if e["ms"] > limit)
    unanswered = sum(1 for e in mine if e["status"] == 0)
    longest = max((e["ms"] for e in mine), default=0)
    worst, late_total, unanswered_total = max(worst, longest), late_total + late, unanswered_total + unanswered
    print(f"{route:<8} {len(mine):>8} {json.dumps(statuses).replace(' ', ''):<40} {longest:>9.1f} {late:>5} {unanswered:>10}")
# Per freeze: the first wave (begun before MariaDB stopped, answered after) against the requests
# begun while it was stopped (the reference: each waits out SIWA_DB_TIMEOUT from its start).
def seconds(values):
    return f"{min(values) / 1000:.2f}-{max(values) / 1000:.2f} s" if values else "-"
for start, end in freezes:
    wave = [e for e in entries if e["start"] < start < e["start"] + e["ms"] / 1000]
    during = [e for e in entries if start <= e["start"] < end]
    print(f"freeze of {end - start:.0f} s: first wave {len(wave)} requests "
          f"({', '.join(f'{r} {n}' for r, n in collections.Counter(e['route'] for e in wave).items())}), "
          f"answered in {seconds([e['ms'] for e in wave])}, statuses "
          f"{dict(collections.Counter(e['status'] for e in wave))}; begun during it: {len(during)}, "
          f"answered in {seconds([e['ms'] for e in during])}")
acknowledged = [e["item"] for e in entries if e["route"] == "sync" and e["status"] == 200]
lost = [item for item in acknowledged if item not in stored]
print(f"acknowledged sync writes: {len(acknowledged)}, lost: {len(lost)}{' ' + ' '.join(lost[:5]) if lost else ''}; "
      f"sessions whose last acknowledged refresh token no longer refreshes (ended by reuse detection): {refresh_lost}")
met = late_total == 0 and unanswered_total == 0 and not lost
print(f"every request answered within {limit / 1000:.1f} s (longest {worst / 1000:.2f} s), "
      f"0 acknowledged writes lost: {'met' if met else 'NOT met'}")
PY
