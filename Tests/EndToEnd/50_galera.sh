#!/usr/bin/env bash
# Several siwa hosts on a MariaDB Galera cluster: three nodes on loopback (run as mysql), two
# `siwa serve` processes (host A prefers node 1, host B node 2) behind one nginx upstream with both
# sockets, and `siwa jobs`. Both hosts migrate at once (the replicated lease lets one run). Then,
# across both hosts: 50 concurrent syncs of one person lose nothing; 20 concurrent replays of one
# identity token give one sign-in; 20 concurrent refreshes of one token leave one live token;
# 1,000 notifications with 200 duplicates are handled once per id. Then node 1 is killed with
# SIGKILL under a sync load through both hosts: no sync answered 200 is missing afterwards, the
# failures and their window are reported, node 1 rejoins by incremental state transfer and the
# cluster serves on. Everything it started is stopped.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

G=$E2E_TMP/galera
DIR=$E2E_TMP/galera_hosts
rm -rf "$G" "$DIR"
mkdir -p "$DIR"
cleanup() {
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
    grep -vE '^SIWA_(SOCKET_PATH|DB_SOCKET|DB_HOST|DB_NAME|DB_USER|DB_PASSWORD_FILE)=' "$E2E_ENV" >"$DIR/$1.env"
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
# for the lease and finds nothing left to do.
siwa_with_env "$E2E_BIN" "$DIR/a.env" migrate >"$DIR/migrate_a.log" 2>&1 &
migrate_a=$!
siwa_with_env "$E2E_BIN" "$DIR/b.env" migrate >"$DIR/migrate_b.log" 2>&1 || fail "migrate on B: $(cat "$DIR/migrate_b.log")"
wait "$migrate_a" || fail "migrate on A: $(cat "$DIR/migrate_a.log")"
[ "$(galera_sql "$G" 3 "SELECT COUNT(*) FROM siwa_galera.schema_migrations")" = "$(ls "$SIWA_ROOT"/sql/*.sql | wc -l)" ] \
    || fail "the migrations recorded on node 3"
applied=$(cat "$DIR/migrate_a.log" "$DIR/migrate_b.log" | grep -c '^applying' || true)
[ "$applied" = "$(ls "$SIWA_ROOT"/sql/*.sql | wc -l)" ] || fail "the two runs applied $applied files in all: $(cat "$DIR/migrate_a.log" "$DIR/migrate_b.log")"
pass "two concurrent siwa migrate runs through nodes 1 and 2: each file applied once"

# --- Two hosts behind one upstream, and the jobs.
start_siwa "$E2E_BIN" "$DIR/a.env" "$DIR/a.log" "$DIR/a.pid"
start_siwa "$E2E_BIN" "$DIR/b.env" "$DIR/b.log" "$DIR/b.pid"
(clear_siwa_variables; set -a; . "$DIR/a.env"; set +a; exec "$E2E_BIN" jobs --interval 1) >>"$DIR/jobs.log" 2>&1 &
echo $! >"$DIR/jobs.pid"
PORT=$(free_port)
render_nginx "$DIR/nginx" "$PORT" "$DIR/a.sock" "$E2E_TMP/tls" "1000r/s"
sed -i "s|server unix:$DIR/a.sock;|server unix:$DIR/a.sock;\n        server unix:$DIR/b.sock;|" "$DIR/nginx/nginx.conf"
grep -q "server unix:$DIR/b.sock;" "$DIR/nginx/nginx.conf" || fail "the upstream does not name host B"
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

# --- A node killed under load.
checks load 18 >"$DIR/load.out" 2>&1 &
load=$!
sleep 6
kill -KILL "$(cat "$G/node1/mariadb.pid")"
killed_at=$(date +%s%N)
sleep 4
galera_start_node "$G" 1
galera_wait "$G" 1 3
rejoined_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
wait "$load" || fail "the load: $(cat "$DIR/load.out")"
cat "$DIR/load.out"
grep -qi 'IST received\|Receiving IST\|IST request' "$G/node1/mariadb.log" || fail "node 1 did not rejoin by IST: $(grep -i 'sst\|ist' "$G/node1/mariadb.log" | tail -5)"
missing=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["acknowledgedMissing"])' "$DIR/load_summary.json")
[ "$missing" = 0 ] || fail "$missing acknowledged syncs are missing"
# What node 1 holds after rejoining: every lesson the others hold.
for n in 1 2 3; do
    NODE=$n db "SELECT COUNT(*) FROM siwa_galera.progress" >"$DIR/progress_$n"
done
[ "$(cat "$DIR/progress_1")" = "$(cat "$DIR/progress_2")" ] && [ "$(cat "$DIR/progress_2")" = "$(cat "$DIR/progress_3")" ] \
    || fail "the nodes disagree on progress rows: $(cat "$DIR"/progress_*)"
checks syncs || fail "syncs after node 1 rejoined (above)"
pass "node 1 killed under load and back in the cluster by IST after ${rejoined_ms} ms; $(cat "$DIR/load_summary.json")"
