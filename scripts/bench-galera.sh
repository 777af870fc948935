# BENCH_GALERA=1 with `scripts/bench auth` or `scripts/bench sync`: the benchmark runs first against
# the single MariaDB server, then against a three-node Galera cluster on the same machine, with two
# siwa processes (half the threads each) behind the same nginx upstream, A writing through node 1
# and B through node 2 (multi-primary), and prints the cluster's figures as a ratio of the single
# server's, with the certification conflicts (Galera's wsrep_local_cert_failures and
# wsrep_local_bf_aborts on all nodes) and siwa's retried conflicts per thousand requests. Sourced
# by scripts/bench; uses MODE, URL, TMP, BIN, THREADS, and the bench locations /bench/metrics-a|b.
# The nodes run with deploy/galera/galera.cnf's provider options, as 50_galera.sh's do.

# BENCH_PIN=1 (two CPUs or more): the databases run on CPU 1 and everything else (nginx, siwa, the
# load, this script) on CPU 0, for the single server and for the cluster, so that the three nodes
# get the single server's CPU between them and nothing else competes with them: the ratio is then
# what the cluster's own work (every node applying every write, certification, replication) costs.
pin() { # pin CPU PID...
    local cpu=$1 pid
    shift
    for pid in "$@"; do taskset -a -p -c "$cpu" "$pid" >/dev/null || die "taskset $cpu $pid failed"; done
}
nginx_pids() { local master; master=$(cat "$TMP/nginx/nginx.pid"); echo "$master" $(pgrep -P "$master"); }
if [ "${BENCH_PIN:-}" = 1 ]; then
    [ "$(nproc)" -ge 2 ] || die "BENCH_PIN=1 needs two CPUs"
    taskset -p -c 0 $$ >/dev/null
    pin 1 "$(cat "$TMP/db/mariadb.pid")"
    pin 0 "$(cat "$TMP/siwa.pid")" $(nginx_pids)
    log "pinned: MariaDB on CPU 1; nginx, siwa and the load on CPU 0"
fi

# The database's CPU for each request of a run: user and system time of the server processes
# (/proc/PID/stat), against the requests siwa counted.
pid_ticks() { # pid_ticks PID...: each process's user + system clock ticks, on one line
    local pid
    for pid in "$@"; do awk '{ print $14 + $15 }' "/proc/$pid/stat"; done | paste -sd' '
}
counter() { # counter FILE PATTERN: the sum of the matching series
    { grep -E "$2" "$1" || true; } | awk '{ s += $NF } END { printf "%d", s }'
}
# The requests to /auth and /sync in a scrape of siwa's metrics.
REQUESTS='^siwa_http_requests_total\{route="/(auth|sync)'
served() { # served: the requests the single server's siwa (behind /bench/metrics-a) counted
    curl -ks "$URL/bench/metrics-a" >"$TMP/served.prom"
    counter "$TMP/served.prom" "$REQUESTS"
}
cpu_per_request() { # cpu_per_request "TICKS BEFORE" "TICKS AFTER" REQUESTS: milliseconds per request, per process
    python3 -c 'import os, sys
before, after, requests = sys.argv[1].split(), sys.argv[2].split(), int(sys.argv[3])
tick = os.sysconf("SC_CLK_TCK")
print(" ".join(f"{(int(a) - int(b)) * 1000 / tick / max(requests, 1):.3f}" for b, a in zip(before, after)))' "$1" "$2" "$3"
}

log "single server"
single_before=$(pid_ticks "$(cat "$TMP/db/mariadb.pid")") single_served=$(served)
# (`|| true`: the benchmark's last command, a grep for logged errors, fails when there is none.)
. "$SIWA_ROOT/scripts/bench-$MODE.sh" | tee "$TMP/single.out" || true
single_cpu=$(cpu_per_request "$single_before" "$(pid_ticks "$(cat "$TMP/db/mariadb.pid")")" $(( $(served) - single_served )))

log "a three-node Galera cluster"
G=$TMP/galera
galera_start_cluster "$G"
create_database "$G/node1" siwa siwa "$TMP/db_password"
galera_sql "$G" 1 "CREATE USER IF NOT EXISTS 'siwa'@'127.0.0.1' IDENTIFIED BY '$(cat "$TMP/db_password")';
    GRANT ALL PRIVILEGES ON siwa.* TO 'siwa'@'127.0.0.1';"
P1=$(cat "$G/node1/port") P2=$(cat "$G/node2/port") P3=$(cat "$G/node3/port")
if [ "${BENCH_PIN:-}" = 1 ]; then
    pin 1 "$(cat "$G/node1/mariadb.pid")" "$(cat "$G/node2/mariadb.pid")" "$(cat "$G/node3/mariadb.pid")"
    # The single server has done its part: off CPU 1, so that the nodes have it to themselves.
    pin 0 "$(cat "$TMP/db/mariadb.pid")"
    log "pinned: the three nodes on CPU 1"
fi
stop_pidfile "$TMP/siwa.pid" 30
cluster_env() { # cluster_env NAME SOCKET HOSTS
    grep -vE '^SIWA_(SOCKET_PATH|DB_SOCKET|WORKER_THREADS)=' "$TMP/siwa.env" >"$TMP/$1.env"
    printf 'SIWA_SOCKET_PATH=%s\nSIWA_DB_HOST=%s\nSIWA_WORKER_THREADS=%s\n' "$2" "$3" $((THREADS / 2)) >>"$TMP/$1.env"
}
cluster_env siwa-a "$TMP/siwa.sock" "127.0.0.1:$P1,127.0.0.1:$P2,127.0.0.1:$P3"
cluster_env siwa-b "$TMP/siwa-b.sock" "127.0.0.1:$P2,127.0.0.1:$P3,127.0.0.1:$P1"
siwa_with_env "$BIN" "$TMP/siwa-a.env" migrate >/dev/null
start_siwa "$BIN" "$TMP/siwa-a.env" "$TMP/siwa.log" "$TMP/siwa.pid"
start_siwa "$BIN" "$TMP/siwa-b.env" "$TMP/siwa-b.log" "$TMP/siwa-b.pid"
sed -i "s|server unix:$TMP/siwa.sock;|server unix:$TMP/siwa.sock;\n        server unix:$TMP/siwa-b.sock;|" "$TMP/nginx/nginx.conf"
start_nginx "$TMP/nginx"
sleep 1
curl -ksf "$URL/health" >/dev/null || die "the cluster's siwa hosts do not answer"

scrape() { # scrape NAME
    curl -ks "$URL/bench/metrics-a" >"$TMP/$1-a.prom"
    curl -ks "$URL/bench/metrics-b" >"$TMP/$1-b.prom"
    cat "$TMP/$1-a.prom" "$TMP/$1-b.prom" >"$TMP/$1.prom"
    for n in 1 2 3; do
        galera_sql "$G" "$n" "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS
            WHERE VARIABLE_NAME IN ('WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')"
    done | awk '{ s += $1 } END { print s }' >"$TMP/$1.conflicts"
}
scrape before
nodes=("$(cat "$G/node1/mariadb.pid")" "$(cat "$G/node2/mariadb.pid")" "$(cat "$G/node3/mariadb.pid")")
cluster_before=$(pid_ticks "${nodes[@]}")
BENCH_DB_SOCKET=$G/node1/mysql.sock
. "$SIWA_ROOT/scripts/bench-$MODE.sh" | tee "$TMP/cluster.out" || true
scrape after
requests=$(( $(counter "$TMP/after.prom" "$REQUESTS") - $(counter "$TMP/before.prom" "$REQUESTS") ))
retried=$(( $(counter "$TMP/after.prom" '^siwa_database_errors_total\{kind="deadlock"') - $(counter "$TMP/before.prom" '^siwa_database_errors_total\{kind="deadlock"') ))
conflicts=$(( $(cat "$TMP/after.conflicts") - $(cat "$TMP/before.conflicts") ))

echo
echo "single server against the three-node cluster (two siwa processes of $((THREADS / 2)) threads, writing through nodes 1 and 2):"
extract() { # extract FILE: "label req/s" for each measured line of the benchmark's table
    awk '/^(POST|GET|reference)/ { n = split($0, f, /  +/); for (i = 2; i <= n; i++) if (f[i] ~ /^[0-9]+$/) { print f[1] "\t" f[i]; break } }' "$1"
}
join -t$'\t' <(extract "$TMP/single.out" | sort) <(extract "$TMP/cluster.out" | sort) \
    | awk -F'\t' '{ printf "%-44s single %8d/s  cluster %8d/s  ratio %.3fx\n", $1, $2, $3, $3 / $2 }'
cluster_cpu=$(cpu_per_request "$cluster_before" "$(pid_ticks "${nodes[@]}")" "$requests")
echo "database CPU per request to /auth and /sync over each whole run (ms): single server $single_cpu; cluster nodes 1, 2, 3: $cluster_cpu"
awk -v r="$requests" -v c="$conflicts" -v t="$retried" 'BEGIN {
    printf "cluster run: %d requests to /auth and /sync; certification conflicts (cert failures + BF aborts, all nodes) %d = %.2f per 1,000; conflicts siwa retried %d = %.2f per 1,000\n",
        r, c, r ? 1000 * c / r : 0, t, r ? 1000 * t / r : 0 }'
