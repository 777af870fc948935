# The lifecycle-webhook benchmark of `scripts/bench webhooks`; sourced by scripts/bench once its
# stack (MariaDB, the emulator, nginx, siwa release build) runs. Uses URL, TMP, BIN, BIN_DIR.
# The acceptance point: 1,000 sign-ups with two webhook endpoints, every delivery done within 30 s
# of the last sign-up, each signed, in per-user order. Each new user also signs out at once, so that
# every user has two events (user.created, session.revoked) whose order can be checked. siwa is restarted with two endpoints, each a
# receiver that verifies the signature of every delivery (Tests/EndToEnd/webhook_receiver.py) and
# logs it, and `siwa jobs` runs as in production (its delivery lanes send continuously).

SIGNUPS=1000
SIGNUP_CONNECTIONS=32
# How long after the last sign-up the deliveries are waited for (the target is 30 s).
WAIT_LIMIT=120

db() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B siwa -e "$1"; }

# Stops what this mode started, then the stack (scripts/bench's cleanup); siwa jobs first, while
# MariaDB still runs.
stop_webhook_bench() {
    stop_pidfile "$TMP/jobs.pid" 30 2>/dev/null || true
    stop_pidfile "$TMP/receiver-1.pid" 5 2>/dev/null || true
    stop_pidfile "$TMP/receiver-2.pid" 5 2>/dev/null || true
}
trap 'stop_webhook_bench; cleanup' EXIT

# The receivers: one secret for both (siwa signs every delivery with each secret of the file), no
# outage (FAIL_SECONDS 0), each logging every attempt as a JSON line to $TMP/receiver-N.jsonl.
(umask 077; openssl rand -hex 32 >"$TMP/webhook_secret")
ENDPOINTS=()
for n in 1 2; do
    port=$(free_port)
    python3 "$SIWA_ROOT/Tests/EndToEnd/webhook_receiver.py" "$port" "$TMP/webhook_secret" 0 "$TMP/receiver-$n.jsonl" &
    echo $! >"$TMP/receiver-$n.pid"
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || die "webhook receiver $n did not start"
    ENDPOINTS+=("http://127.0.0.1:$port/siwa-events")
done

# siwa restarted with the two endpoints: each sign-up and sign-out writes its event and one delivery
# per endpoint in its transaction.
cp "$TMP/siwa.env" "$TMP/siwa-webhooks.env"
cat >>"$TMP/siwa-webhooks.env" <<ENV
SIWA_WEBHOOK_URLS=${ENDPOINTS[0]},${ENDPOINTS[1]}
SIWA_WEBHOOK_SECRET_FILE=$TMP/webhook_secret
ENV
stop_pidfile "$TMP/siwa.pid" 30
start_siwa "$BIN" "$TMP/siwa-webhooks.env" "$TMP/siwa.log" "$TMP/siwa.pid"
curl -ksf "$URL/health" >/dev/null || die "siwa is not answering after the restart"
# The background job becomes siwa (exec), so that the pid file names it. Default --interval (30 s):
# the delivery lanes do not depend on it.
(clear_siwa_variables; set -a; . "$TMP/siwa-webhooks.env"; set +a; exec "$BIN" jobs) >>"$TMP/jobs.log" 2>&1 &
echo $! >"$TMP/jobs.pid"

log "minting $SIGNUPS identity tokens at the emulator (its current key)"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$SIGNUPS" >"$TMP/tokens"
# Written now rather than by the kernel's writeback during the burst (see bench-auth.sh).
sync
# siwa's worker threads open their database connections on their first requests: not in the burst.
wrk -t2 -c"$SIGNUP_CONNECTIONS" -d1s "$URL/health" >/dev/null
pidfile_alive "$TMP/jobs.pid" || die "siwa jobs ended: $(tail -5 "$TMP/jobs.log")"

log "$SIGNUPS sign-ups, each followed by its sign-out, from $SIGNUP_CONNECTIONS connections"
read -r signed_up signup_failures signup_start last_signup < <(python3 "$SIWA_ROOT/bench/sign_up_burst.py" \
    "$URL" "$TMP/tokens" "$SIGNUP_CONNECTIONS" 2>"$TMP/signup_failures")
[ -n "${last_signup:-}" ] || die "the sign-up client failed: $(tail -5 "$TMP/signup_failures")"
# What siwa recorded to deliver, in the order it created the events: id, user, type.
db "SELECT public_id, user_id, event_type FROM webhook_events ORDER BY id" >"$TMP/expected.tsv"
EVENTS=$(wc -l <"$TMP/expected.tsv")

# Distinct events a receiver accepted (answered 200, so signed): delivered_events LOG
delivered_events() {
    [ -f "$1" ] || { echo 0; return; }
    { grep -F '"status": 200' "$1" || true; } | grep -oE '"id": "[^"]+"' | sort -u | wc -l
}
log "waiting (at most $WAIT_LIMIT s after the last sign-up) for $EVENTS events at each of 2 endpoints"
complete=0
while :; do
    if [ "$(delivered_events "$TMP/receiver-1.jsonl")" -ge "$EVENTS" ] && [ "$(delivered_events "$TMP/receiver-2.jsonl")" -ge "$EVENTS" ]; then
        complete=1
        break
    fi
    pidfile_alive "$TMP/jobs.pid" || { log "siwa jobs ended: $(tail -5 "$TMP/jobs.log")"; break; }
    awk -v s="$last_signup" -v n="$(date +%s.%N)" -v l="$WAIT_LIMIT" 'BEGIN { exit !(n - s < l) }' || break
    sleep 0.2
done
# A receiver appends each attempt's line before it answers: its log's modification time is the
# arrival of the last delivery (taken now, before a late duplicate could move it).
arrivals=$(for n in 1 2; do stat -c %.6Y "$TMP/receiver-$n.jsonl" 2>/dev/null || echo nan; done | tr '\n' ' ')

echo
python3 - "$TMP/expected.tsv" "$signed_up" "$signup_failures" "$signup_start" "$last_signup" "$complete" \
    "${ENDPOINTS[0]}" "$TMP/receiver-1.jsonl" "${ENDPOINTS[1]}" "$TMP/receiver-2.jsonl" $arrivals <<'PY'
import collections, json, os, sys
expected_file, signed_up, failed, start, last_signup, complete = sys.argv[1:7]
signed_up, failed, start, last_signup = int(signed_up), int(failed), float(start), float(last_signup)
endpoints = [(sys.argv[7], sys.argv[8]), (sys.argv[9], sys.argv[10])]
arrivals = [float(t) for t in sys.argv[11:13]]
expected = [line.split("\t") for line in open(expected_file).read().splitlines() if line]
order = collections.defaultdict(list)  # user -> event ids in the order siwa created them
for event, user, _ in expected:
    order[user].append(event)
types = collections.Counter(kind for _, _, kind in expected)
print(f"sign-ups: {signed_up} new users in {last_signup - start:.2f} s ({signed_up / (last_signup - start):.0f}/s), "
      f"{failed} failed; events: {len(expected)} ({', '.join(f'{n} {k}' for k, n in types.items())})")
print(f"{'endpoint':<36} {'delivered':>9} {'attempts':>8} {'bad_sig':>7} {'dups':>5} {'order':>5} {'missing':>7} {'last_s':>7}")
worst, bad_total, order_total, missing_total = 0.0, 0, 0, 0
for (endpoint, log), arrival in zip(endpoints, arrivals):
    lines = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    bad = sum(1 for line in lines if not line["verified"])
    accepted = [line for line in lines if line["status"] == 200]
    counts = collections.Counter(line["id"] for line in accepted)
    duplicates = sum(n - 1 for n in counts.values())
    received = collections.defaultdict(list)  # user -> event ids in the order they arrived (first time)
    seen = set()
    for line in accepted:
        if line["id"] not in seen:
            seen.add(line["id"])
            received[line["user"]].append(line["id"])
    # A user whose events arrived in another order than siwa created them (missing ones aside).
    violations = sum(1 for user, ids in order.items() if received[user] != [i for i in ids if i in seen])
    missing = sum(1 for event, _, _ in expected if event not in seen)
    since = arrival - last_signup
    worst = max(worst, since)
    bad_total, order_total, missing_total = bad_total + bad, order_total + violations, missing_total + missing
    print(f"{endpoint:<36} {len(seen):>9} {len(lines):>8} {bad:>7} {duplicates:>5} {violations:>5} {missing:>7} {since:>7.2f}")
met = complete == "1" and failed == 0 and missing_total == 0 and worst < 30 and bad_total == 0 and order_total == 0
print(f"every delivery {worst:.2f} s after the last sign-up (target < 30 s), {bad_total} bad signatures, "
      f"{order_total} per-user order violations, {missing_total} missing: {'met' if met else 'NOT met'}")
PY
if [ -s "$TMP/signup_failures" ]; then echo "failed sign-ups (count, status, body start):"; cat "$TMP/signup_failures"; fi
if grep -qE ' (warning|error|critical) ' "$TMP/jobs.log" "$TMP/siwa.log"; then
    echo "siwa and siwa jobs warnings and errors:"
    grep -hE ' (warning|error|critical) ' "$TMP/jobs.log" "$TMP/siwa.log" | sed -E 's/^[^ ]+ //; s/request\.id=[^ ]+ //' | sort | uniq -c | sort -rn | head -5
fi
# A sign-up that failed is not a sign-up: past FAILED_FRACTION of them the run fails (scripts/bench).
if awk -v f="$signup_failures" -v n="$((signed_up + signup_failures))" -v x="$FAILED_FRACTION" 'BEGIN { exit !(f > x * n) }'; then
    echo "FAILED: $signup_failures of $((signed_up + signup_failures)) sign-ups failed, more than $(awk -v x="$FAILED_FRACTION" 'BEGIN { print x * 100 }') %: no figure of this run stands"
    exit 1
fi
