# The frozen-database check of `scripts/bench dbfreeze`; sourced by scripts/bench once its stack
# (MariaDB, the emulator, nginx, siwa release build with the default SIWA_DB_TIMEOUT of 10 s) runs.
# Uses URL, TMP, BIN_DIR.
# The acceptance point: MariaDB stopped with SIGSTOP for 12 s and for 35 s under load, with the
# default configuration: every request answered within 11 s (503 or success), and no acknowledged
# write lost. The load (bench/freeze_load.py): 16 users each writing a new lesson through POST /sync
# every 20 ms, and GET /health, every request logged as it ends.

USERS=16
FREEZES="12 35"
# Load before, between and after the freezes, in seconds.
SETTLE=10

db() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B siwa -e "$1"; }
db_pid=$(cat "$TMP/db/mariadb.pid")
trap 'kill -CONT "$db_pid" 2>/dev/null || true; cleanup' EXIT

log "signing in $USERS users"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$USERS" >"$TMP/tokens"
python3 "$SIWA_ROOT/bench/sign_in_all.py" "$URL" "$TMP/tokens" "$TMP/access_tokens" accessToken "bench freeze"

total=$SETTLE
for freeze in $FREEZES; do total=$((total + freeze + SETTLE)); done
python3 "$SIWA_ROOT/bench/freeze_load.py" "$URL" "$TMP/access_tokens" "$total" "$TMP/freeze.jsonl" &
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
flowing
for freeze in $FREEZES; do
    log "MariaDB stopped (SIGSTOP) for $freeze s"
    kill -STOP "$db_pid"
    sleep "$freeze"  # the length of the freeze, not a wait for anything
    kill -CONT "$db_pid"
    log "MariaDB continued"
    flowing
    sleep "$SETTLE"  # load after the freeze, as long as before it
done
wait "$load_pid"

db "SELECT lesson_id FROM progress WHERE belief_system_id = 'freeze'" >"$TMP/stored"
echo
python3 - "$TMP/freeze.jsonl" "$TMP/stored" "$FREEZES" <<'PY'
import collections, json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
stored = set(open(sys.argv[2]).read().split())
freezes = sys.argv[3]
print(f"siwa with the default SIWA_DB_TIMEOUT (10 s); MariaDB stopped for {freezes.replace(' ', ' s and ')} s under load")
print(f"{'route':<8} {'requests':>8} {'statuses':<32} {'max_ms':>9} {'over_11s':>8} {'unanswered':>10}")
worst, late_total, unanswered_total = 0.0, 0, 0
for route in ("sync", "health"):
    mine = [e for e in entries if e["route"] == route]
    statuses = dict(sorted(collections.Counter(str(e["status"]) for e in mine).items()))
    late = sum(1 for e in mine if e["ms"] > 11000)
    unanswered = sum(1 for e in mine if e["status"] == 0)
    longest = max((e["ms"] for e in mine), default=0)
    worst, late_total, unanswered_total = max(worst, longest), late_total + late, unanswered_total + unanswered
    print(f"{route:<8} {len(mine):>8} {json.dumps(statuses).replace(' ', ''):<32} {longest:>9.1f} {late:>8} {unanswered:>10}")
acknowledged = [e["item"] for e in entries if e["route"] == "sync" and e["status"] == 200]
lost = [item for item in acknowledged if item not in stored]
print(f"acknowledged writes: {len(acknowledged)}, lost: {len(lost)}{' ' + ' '.join(lost[:5]) if lost else ''}")
met = late_total == 0 and unanswered_total == 0 and not lost
print(f"every request answered within 11 s (longest {worst / 1000:.2f} s), 0 acknowledged writes lost: {'met' if met else 'NOT met'}")
PY
