#!/usr/bin/env bash
# Several siwa hosts on a MariaDB Galera cluster: three nodes on loopback (run as mysql, with the
# provider options of deploy/galera/galera.cnf), two `siwa serve` processes (host A prefers node 1,
# host B node 2) behind one nginx upstream with both sockets, and `siwa jobs`. Both hosts migrate
# at once (the replicated lease lets one run). Then, across both hosts: 50 concurrent syncs of one
# person lose nothing; 20 concurrent replays of one identity token give one sign-in; 20 concurrent
# refreshes of one token leave one live token; 1,000 notifications with 200 duplicates are handled
# once per id. Then, under a sync load through both hosts, GALERA_KILLS times (1 by default): a
# node killed with SIGKILL (node 1, then node 2, in turn) and started again 3 s after its process
# ended; it rejoins by IST and both hosts return to their first nodes (each host's /health, 5
# answers in a row, within 30 s). Each event's failures must span at most 2 s, and no sync answered
# 200 may be missing. Then, under load, the rolling operations of docs/SCALING.md: each database
# node restarted in turn, an upgrade's migration while both hosts serve, and each host restarted
# in turn, without a failed request. Everything it started is stopped.
#   GALERA_KILLS=5 scripts/test --e2e-only 50_galera
#   GALERA_MIGRATE_ROUNDS=100 scripts/test --e2e-only 50_galera
#   GALERA_KEEP=DIR also keeps the hosts' and nodes' logs and the load's failures
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

G=$E2E_TMP/galera
DIR=$E2E_TMP/galera_hosts
rm -rf "$G" "$DIR"
mkdir -p "$DIR"
cleanup() {
    # GALERA_KEEP=DIR keeps the hosts' and nodes' logs and the load's failures there.
    if [ -n "${GALERA_KEEP:-}" ]; then
        mkdir -p "$GALERA_KEEP"
        cp "$DIR"/*.log "$DIR"/*.env "$DIR"/load_* "$DIR/events" "$GALERA_KEEP/" 2>/dev/null || true
        for n in 1 2 3; do cp "$G/node$n/mariadb.log" "$GALERA_KEEP/node$n.log" 2>/dev/null || true; done
    fi
    stop_pidfile "$DIR/jobs.pid" 10
    stop_pidfile "$DIR/a.pid" 30
    stop_pidfile "$DIR/b.pid" 30
    stop_nginx "$DIR/nginx" 2>/dev/null || true
    for n in 3 2 1; do stop_pidfile "$G/node$n/mariadb.pid" 60; done
}
trap cleanup EXIT

# --- The cluster.
start=$(date +%s%N)
galera_start_cluster "$G"
pass "three Galera nodes in one cluster in $(( ($(date +%s%N) - start) / 1000000 )) ms"
create_database "$G/node1" siwa_galera siwa "$DIR/db_password"
galera_sql "$G" 1 "CREATE USER IF NOT EXISTS 'siwa'@'127.0.0.1' IDENTIFIED BY '$(cat "$DIR/db_password")';
    GRANT ALL PRIVILEGES ON siwa_galera.* TO 'siwa'@'127.0.0.1';"
P1=$(cat "$G/node1/port") P2=$(cat "$G/node2/port") P3=$(cat "$G/node3/port")

host_env() { # host_env NAME HOSTS
    grep -vE '^SIWA_(SOCKET_PATH|DB_SOCKET|DB_HOST|DB_NAME|DB_USER|DB_PASSWORD_FILE|DB_TIMEOUT)=' "$E2E_ENV" >"$DIR/$1.env"
    # The default SIWA_DB_TIMEOUT (10 s), not the other checks' 2 s: a request waits out a view
    # change as it would in production, and the load reports the slowest request of each event.
    cat >>"$DIR/$1.env" <<ENV
SIWA_SOCKET_PATH=$DIR/$1.sock
SIWA_DB_HOST=$2
SIWA_DB_NAME=siwa_galera
SIWA_DB_USER=siwa
SIWA_DB_PASSWORD_FILE=$DIR/db_password
ENV
}
host_env a "127.0.0.1:$P1,127.0.0.1:$P2,127.0.0.1:$P3"
host_env b "127.0.0.1:$P2,127.0.0.1:$P3,127.0.0.1:$P1"

# Both hosts migrate at the same moment, through different nodes: one run applies, the other waits
# for the lease and finds nothing left to do. GALERA_MIGRATE_ROUNDS=N repeats it on a new database
# N times (a run's statements aborted by the other's DDL showed in 3 rounds of 100 under load).
files=$(ls "$SIWA_ROOT"/sql/*.sql | wc -l)
for round in $(seq "${GALERA_MIGRATE_ROUNDS:-1}"); do
    [ "$round" = 1 ] || galera_sql "$G" 1 "DROP DATABASE siwa_galera; CREATE DATABASE siwa_galera"
    siwa_with_env "$E2E_BIN" "$DIR/a.env" migrate >"$DIR/migrate_a.log" 2>&1 &
    migrate_a=$!
    siwa_with_env "$E2E_BIN" "$DIR/b.env" migrate >"$DIR/migrate_b.log" 2>&1 || fail "round $round: migrate on B: $(cat "$DIR/migrate_b.log")"
    wait "$migrate_a" || fail "round $round: migrate on A: $(cat "$DIR/migrate_a.log")"
    # A causal read (wsrep_sync_wait): node 3 applies the others' commits after they are
    # acknowledged, and a loaded machine showed it still behind when the runs had returned.
    [ "$(galera_sql "$G" 3 "SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM siwa_galera.schema_migrations")" = "$files" ] \
        || fail "round $round: the migrations recorded on node 3"
    applied=$(cat "$DIR/migrate_a.log" "$DIR/migrate_b.log" | grep -c '^applying' || true)
    [ "$applied" = "$files" ] || fail "round $round: the two runs applied $applied files in all: $(cat "$DIR/migrate_a.log" "$DIR/migrate_b.log")"
done
pass "two concurrent siwa migrate runs through nodes 1 and 2, ${GALERA_MIGRATE_ROUNDS:-1} time(s): each file applied once"

# --- Two hosts behind one upstream, and the jobs.
start_siwa "$E2E_BIN" "$DIR/a.env" "$DIR/a.log" "$DIR/a.pid"
start_siwa "$E2E_BIN" "$DIR/b.env" "$DIR/b.log" "$DIR/b.pid"
(clear_siwa_variables; set -a; . "$DIR/a.env"; set +a; exec "$E2E_BIN" jobs --interval 1) >>"$DIR/jobs.log" 2>&1 &
echo $! >"$DIR/jobs.pid"
PORT=$(free_port)
render_nginx "$DIR/nginx" "$PORT" "$DIR/a.sock" "$E2E_TMP/tls" "1000r/s"
# As docs/SCALING.md says: max_fails=0, so that a host restarting is never marked down (a refused
# connection to a unix socket costs nginx nothing, and it tries the other host at once); with the
# default, the other host's restart a moment later left no host to try (538 answers 503 in 1.3 s).
sed -i "s|server unix:$DIR/a.sock;|server unix:$DIR/a.sock max_fails=0;\n        server unix:$DIR/b.sock max_fails=0;|" "$DIR/nginx/nginx.conf"
grep -q "server unix:$DIR/b.sock max_fails=0;" "$DIR/nginx/nginx.conf" || fail "the upstream does not name host B"
start_nginx "$DIR/nginx"
export E2E_URL=https://localhost:$PORT
wait_for_health 100
expect_status 200 "the hosts' health"
nodes=""
for _ in 1 2 3 4; do request GET /health; nodes="$nodes $(json databaseNode <<<"$BODY")"; done
nodes=$(tr ' ' '\n' <<<"$nodes" | grep . | sort -u | paste -sd' ')
[ "$nodes" = "$(printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$P1" "$P2" | sort | paste -sd' ')" ] || fail "the nodes the hosts use: $nodes"
pass "GET /health through the upstream names node 1 (host A) and node 2 (host B)"

checks() { python3 "$(dirname "$0")/galera_checks.py" "$E2E_URL" "$E2E_APPLE_URL" "$E2E_APPLE_ADMIN_SECRET_FILE" "$DIR" "$@"; }
db() { galera_sql "$G" "${NODE:-3}" "$1" | tr '\t\n' '  ' | sed 's/ $//'; }

# --- Concurrency across both hosts and nodes.
checks syncs || fail "concurrent syncs (above); progress rows on nodes 1-3: $(for n in 1 2 3; do NODE=$n db "SELECT COUNT(*) FROM siwa_galera.progress WHERE user_id = $(cat "$DIR/syncs_user")"; echo -n ' '; done)"
checks replays || fail "concurrent replays (above)"
[ "$(db "SELECT COUNT(*) FROM siwa_galera.sessions WHERE user_id = $(cat "$DIR/replay_user")")" = 1 ] \
    || fail "the replayed token's user has more than one session"
checks refreshes || fail "concurrent refreshes (above)"
live=$(db "SELECT COUNT(*) FROM siwa_galera.refresh_tokens t JOIN siwa_galera.sessions s ON s.id = t.session_id
    WHERE s.user_id = $(cat "$DIR/refresh_user") AND t.spent_at IS NULL AND s.revoked_at IS NULL")
[ "$live" -le 1 ] || fail "the refreshed session has $live live refresh tokens"
checks notifications || fail "notifications (above)"
jtis=$(sed "s/.*/'&'/" "$DIR/notification_jtis" | paste -sd,)
counts=$(db "SELECT (SELECT COUNT(*) FROM siwa_galera.apple_notifications WHERE jti IN ($jtis)),
    (SELECT COUNT(*) FROM siwa_galera.audit_events WHERE event_type = 'apple_notification' AND JSON_VALUE(detail, '$.jti') IN ($jtis))")
[ "$counts" = "800 800" ] || fail "notification rows and audit events: $counts (expected 800 each)"
conflicts=$(for n in 1 2 3; do galera_sql "$G" "$n" "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS
    WHERE VARIABLE_NAME IN ('WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')"; done | awk '{s += $1} END {print s + 0}')
pass "across both hosts: 50 syncs kept, one sign-in of 20 replays, at most one live token after 20 refreshes, 800 notifications handled once each ($conflicts certification conflicts and brute-force aborts on the nodes, each retried)"

# --- Nodes killed under load. The load runs until $DIR/stop exists; each event the script causes
# is written to $EVENTS with its time, and the load's summary gives each event's failures.
EVENTS=$DIR/events
event() { echo "$(date +%s.%N) $*" >>"$EVENTS"; }
load_start() {
    rm -f "$DIR/stop" "$DIR/stop.started"
    : >"$EVENTS"
    checks load "$DIR/stop" "$EVENTS" >"$DIR/load.out" 2>&1 &
    load=$!
    for _ in $(seq 600); do
        [ -s "$DIR/stop.started" ] && return 0
        kill -0 "$load" 2>/dev/null || break
        sleep 0.1
    done
    fail "the load did not start: $(cat "$DIR/load.out")"
}
# Ends the load; every acknowledged sync must be stored, and each event's failures last at most
# MAX seconds: load_stop MAX
load_stop() {
    touch "$DIR/stop"
    wait "$load" || fail "the load: $(cat "$DIR/load.out")"
    cat "$DIR/load.out"
    # Flow control (a node that falls behind pauses every commit): each node's paused time and
    # pauses it asked for since it started.
    echo "  flow control: $(for n in 1 2 3; do galera_sql "$G" "$n" "SELECT CONCAT('node $n paused ',
        ROUND(MAX(IF(VARIABLE_NAME = 'WSREP_FLOW_CONTROL_PAUSED_NS', VARIABLE_VALUE, 0)) / 1e9, 2), ' s, sent ',
        MAX(IF(VARIABLE_NAME = 'WSREP_FLOW_CONTROL_SENT', VARIABLE_VALUE, 0)), ';') FROM information_schema.GLOBAL_STATUS" 2>/dev/null; done | paste -sd' ')"
    python3 - "$DIR/load_summary.json" "$1" <<'PY' || fail "a failure window over $1 s (above)"
import json, sys
summary = json.load(open(sys.argv[1]))
late = [w for w in summary["events"] if w["failureWindowSeconds"] > float(sys.argv[2])]
sys.exit(1 if late or summary["failedBeforeAnyEvent"] or summary["acknowledgedMissing"] else 0)
PY
}
# Each host's own /health, past the shared upstream: a server per host on a port of its own.
HA=$(free_port) HB=$(free_port)
for h in a b; do
    port=$HA
    [ "$h" = b ] && port=$HB
    cat <<NGINX
server {
    listen 127.0.0.1:$port;
    location = /health {
        fastcgi_param REQUEST_METHOD \$request_method;
        fastcgi_param REQUEST_URI \$request_uri;
        fastcgi_param DOCUMENT_URI \$document_uri;
        fastcgi_param QUERY_STRING \$query_string;
        fastcgi_param REMOTE_ADDR \$remote_addr;
        fastcgi_pass unix:$DIR/$h.sock;
    }
}
NGINX
done >"$DIR/nginx/http-extra.conf"
start_nginx "$DIR/nginx"
host_node() { curl -s --max-time 5 "http://127.0.0.1:$1/health" | json databaseNode 2>/dev/null || true; }
# Milliseconds until both hosts' /health name their first nodes, five answers in a row each (fails
# after 45 s: a node that stalled a statement as it stopped or rejoined gets no connection back for
# 30 s, ClusterNodes.stallHoldOff, and then must be seen synced for 3 s; a fresh clone's run once
# saw 30 s pass with host A still away): preferred_ms
preferred_ms() {
    local t0 i
    t0=$(date +%s%N)
    while [ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt 45 ]; do
        for i in 1 2 3 4 5; do
            [ "$(host_node "$HA")" = "127.0.0.1:$P1" ] && [ "$(host_node "$HB")" = "127.0.0.1:$P2" ] || continue 2
        done
        echo $(( ($(date +%s%N) - t0) / 1000000 ))
        return 0
    done
    fail "the hosts are not back on their first nodes after 45 s: A on $(host_node "$HA"), B on $(host_node "$HB")"
}
preferred_ms >/dev/null

# A node killed (SIGKILL) under load through both hosts, GALERA_KILLS times: node 1 (host A's
# first), then node 2 (host B's), in turn. Started again 3 s later, it rejoins by incremental state
# transfer, and both hosts go back to their first nodes.
kills=${GALERA_KILLS:-1}
for run in $(seq "$kills"); do
    node=$(( (run - 1) % 2 + 1 ))
    load_start
    sleep 2
    event "node $node killed"
    killed_at=$(date +%s%N)
    pid=$(cat "$G/node$node/mariadb.pid")
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    event "node $node's process ended"
    sleep 3
    galera_start_node "$G" "$node"
    galera_wait "$G" "$node" 3
    rejoined_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
    event "node $node rejoined"
    back_ms=$(preferred_ms)
    sleep 1
    load_stop 2
    grep -qi 'IST received\|Receiving IST\|IST request' "$G/node$node/mariadb.log" \
        || fail "node $node did not rejoin by IST: $(grep -i 'sst\|ist' "$G/node$node/mariadb.log" | tail -5)"
    pass "kill $run of $kills: node $node killed under load, synced again ${rejoined_ms} ms after the kill, both hosts back on their first nodes ${back_ms} ms after that; $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps({"failed": s["failed"], "acknowledgedMissing": s["acknowledgedMissing"], "windows": [{k: w[k] for k in ("event", "failed", "failureWindowSeconds", "failuresFrom", "slowestSeconds")} for w in s["events"]]}))' "$DIR/load_summary.json")"
done

# What the nodes hold afterwards: the same rows everywhere.
for n in 1 2 3; do
    NODE=$n db "SELECT COUNT(*) FROM siwa_galera.progress" >"$DIR/progress_$n"
done
[ "$(cat "$DIR/progress_1")" = "$(cat "$DIR/progress_2")" ] && [ "$(cat "$DIR/progress_2")" = "$(cat "$DIR/progress_3")" ] \
    || fail "the nodes disagree on progress rows: $(cat "$DIR"/progress_*)"
checks syncs || fail "syncs after the kills (above)"
pass "the three nodes hold the same progress rows, and 50 concurrent syncs are kept after the kills"

# --- Rolling operations under load, as docs/SCALING.md says to do them: each database node in
# turn (SIGTERM: it leaves the cluster, then rejoins by IST), each waited for until synced and both
# hosts are back on their first nodes; then an upgrade: its migration (an added column) applied by
# one host's `siwa migrate` while both hosts serve, then each siwa host restarted on the new
# release (SIGTERM: it stops accepting, finishes its requests in flight, and nginx sends the next
# ones to the other host), each waited for until it answers again.
load_start
for n in 1 2 3; do
    event "node $n restarting"
    stop_pidfile "$G/node$n/mariadb.pid" 60
    galera_start_node "$G" "$n"
    galera_wait "$G" "$n" 3
    preferred_ms >/dev/null
done
NEXT=$DIR/sql-next
mkdir -p "$NEXT"
cp "$SIWA_ROOT"/sql/*.sql "$NEXT/"
next=$(( $(ls "$SIWA_ROOT"/sql/*.sql | wc -l) + 1 ))
printf 'ALTER TABLE users ADD COLUMN IF NOT EXISTS upgrade_probe INT NULL, ALGORITHM=INSTANT, LOCK=NONE;\n' >"$NEXT/$(printf %04d "$next")_upgrade_probe.sql"
event "migration while both hosts serve"
(echo "SIWA_MIGRATIONS_DIR=$NEXT" >>"$DIR/a.env"; siwa_with_env "$E2E_BIN" "$DIR/a.env" migrate) >"$DIR/migrate_next.log" 2>&1 \
    || fail "the upgrade's migration: $(cat "$DIR/migrate_next.log")"
echo "SIWA_MIGRATIONS_DIR=$NEXT" >>"$DIR/b.env"
for h in a b; do
    port=$HA
    [ "$h" = b ] && port=$HB
    event "host $h restarting"
    stop_pidfile "$DIR/$h.pid" 30
    start_siwa "$E2E_BIN" "$DIR/$h.env" "$DIR/$h.log" "$DIR/$h.pid"
    for _ in $(seq 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/health")" = 200 ] && break
        sleep 0.1
    done
done
sleep 1
load_stop 2
[ "$(NODE=3 db "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'siwa_galera' AND COLUMN_NAME = 'upgrade_probe'")" = 1 ] \
    || fail "the upgrade's column is not on node 3"
python3 - "$DIR/load_summary.json" <<'PY' || fail "the migration or a siwa host's restart failed requests (above)"
import json, sys
sys.exit(1 if any(w["failed"] for w in json.load(open(sys.argv[1]))["events"] if not w["event"].startswith("node")) else 0)
PY
pass "rolling operations under load: the three database nodes restarted one after the other, then an upgrade (its migration run while both hosts served, each host restarted in turn); $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps({"requests": s["requests"], "failed": s["failed"], "acknowledgedMissing": s["acknowledgedMissing"], "windows": [{k: w[k] for k in ("event", "failed", "failureWindowSeconds", "slowestSeconds")} for w in s["events"]]}))' "$DIR/load_summary.json")"
