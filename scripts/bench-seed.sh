# A product's data for the benchmarks at scale: `scripts/bench seed [USERS]` (default 1,000,000)
# fills a siwa database, made by the real migrations, with USERS users of realistic shapes (the SQL
# of bench/seed/, which describes them), and keeps it as a stopped MariaDB data directory under
# BENCH_SEED_DIR (/tmp/siwa-seed) for `scripts/bench scale` to copy; a directory already made for
# that many users is reported and kept (BENCH_SEED_FORCE=1 makes it again). Sourced by scripts/bench;
# scripts/bench-scale.sh uses seed_database for its small database. Small sizes are quick (20,000
# users in seconds), for statistics of representative size:
#   seed_database "mariadb --no-defaults --socket=SOCKET -uroot DATABASE" USERS
# (the database made by `siwa migrate` first; the client command runs the SQL in it).

# The rank stride: a number coprime to USERS, and its inverse modulo USERS: "STRIDE INVERSE".
# A user's rank in the Zipf law of activity is ((id - 1) * INVERSE mod USERS) + 1, so the user of
# rank r has the id ((r - 1) * STRIDE mod USERS) + 1 (bench/seed/prepare.sql): the stride is about
# USERS times the golden ratio's fraction, so that users of neighbouring ranks are far apart and
# every part of the id range holds users of every activity.
seed_stride() {
    python3 -c '
import math, sys
n = int(sys.argv[1])
stride = max(int(n * 0.6180339887), 1)
while math.gcd(stride, n) != 1: stride += 1
print(stride % n if n > 1 else 0, pow(stride, -1, n) if n > 1 else 0)' "$1"
}

# Fills the migrated, empty database the client command CLIENT runs SQL in with USERS users;
# chunks of BENCH_SEED_CHUNK users (100,000), BENCH_SEED_JOBS of them at once (2):
# seed_database CLIENT USERS
seed_database() {
    local client=$1 users=$2 chunk=${BENCH_SEED_CHUNK:-100000} jobs=${BENCH_SEED_JOBS:-2} stride inverse now lo hi
    read -r stride inverse < <(seed_stride "$users")
    now=$($client -N -B -e "SELECT UTC_TIMESTAMP(3)")
    local variables="SET @n = $users, @pinv = $inverse, @now = '$now';"
    { echo "$variables"; sed "s/seed_all/seq_1_to_$users/" "$SIWA_ROOT/bench/seed/prepare.sql"; } | $client || die "bench/seed/prepare.sql failed"
    local -a running=()
    for ((lo = 1; lo <= users; lo += chunk)); do
        hi=$((lo + chunk - 1 < users ? lo + chunk - 1 : users))
        { echo "$variables SET @lo = $lo, @hi = $hi;"; sed "s/seed_chunk/seq_${lo}_to_$hi/g" "$SIWA_ROOT/bench/seed/chunk.sql"; } \
            | $client &
        running+=($!)
        if [ ${#running[@]} -ge "$jobs" ]; then
            wait "${running[0]}" || die "bench/seed/chunk.sql failed"
            running=("${running[@]:1}")
            log "seeded users up to $hi"
        fi
    done
    for pid in "${running[@]}"; do wait "$pid" || die "bench/seed/chunk.sql failed"; done
    $client <"$SIWA_ROOT/bench/seed/finish.sql" || die "bench/seed/finish.sql failed"
    echo "$stride" >"${SEED_STRIDE_FILE:-/dev/null}"
}

# Rows and bytes of every table of the database, after ANALYZE TABLE: InnoDB's estimate of rows
# (information_schema), the exact count, and data and index bytes; and their totals:
# seed_report CLIENT
seed_report() {
    local client=$1 tables
    tables=$($client -N -B -e "SELECT GROUP_CONCAT(table_name) FROM information_schema.TABLES WHERE table_schema = DATABASE()")
    $client -N -B -e "ANALYZE TABLE $tables" >/dev/null
    local counts
    counts=$($client -N -B -e "$(for t in ${tables//,/ }; do echo "SELECT '$t', COUNT(*) FROM \`$t\`;"; done)")
    printf '%-22s %12s %12s %10s %10s %10s %9s\n' table rows_estimate rows data_MiB index_MiB total_MiB bytes/row
    $client -N -B -e "SELECT table_name, table_rows, data_length, index_length FROM information_schema.TABLES
            WHERE table_schema = DATABASE() ORDER BY data_length + index_length DESC" \
        | awk -v counts="$counts" 'BEGIN { n = split(counts, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, "\t"); rows[f[1]] = f[2] } }
            { r = rows[$1]; d += $3; x += $4; total += r
              printf "%-22s %12d %12d %10.1f %10.1f %10.1f %9s\n", $1, $2, r, $3 / 1048576, $4 / 1048576, ($3 + $4) / 1048576, (r > 0 ? sprintf("%.0f", ($3 + $4) / r) : "-") }
            END { printf "%-22s %12s %12d %10.1f %10.1f %10.1f\n", "all tables", "", total, d / 1048576, x / 1048576, (d + x) / 1048576 }'
}

# The kept data directory of USERS users: BENCH_SEED_DIR/users-USERS (its MariaDB in db/, the
# report in report.txt, the rank stride in stride).
seed_directory() { echo "${BENCH_SEED_DIR:-/tmp/siwa-seed}/users-$1"; }

# scripts/bench seed USERS: makes (or reports) the kept data directory of USERS users. MariaDB runs
# for the load with a 2 GiB buffer pool, no doublewrite and no flush per commit (a crash would
# leave nothing worth keeping: the directory is made again), and stops cleanly before it is kept.
seed_main() {
    local users=$1 dir started
    dir=$(seed_directory "$users")
    if [ -s "$dir/report.txt" ] && [ "${BENCH_SEED_FORCE:-}" != 1 ]; then
        log "$dir holds $users users already (BENCH_SEED_FORCE=1 makes it again)"
        cat "$dir/report.txt"
        return 0
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    log "disk: $(df -h --output=avail "$dir" | tail -1 | tr -d ' ') free where $dir goes"
    started=$(date +%s.%N)
    MARIADB_SERVER_OPTIONS="--innodb-buffer-pool-size=2G --innodb-log-file-size=1G --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0" \
        start_mariadb "$dir/db"
    trap 'stop_pidfile "$dir/db/mariadb.pid" 120' EXIT
    create_database "$dir/db" siwa siwa "$dir/db_password"
    printf 'SIWA_DB_SOCKET=%s\nSIWA_DB_NAME=siwa\nSIWA_DB_USER=siwa\nSIWA_DB_PASSWORD_FILE=%s\nSIWA_MIGRATIONS_DIR=%s\n' \
        "$dir/db/mysql.sock" "$dir/db_password" "$SIWA_ROOT/sql" >"$dir/migrate.env"
    siwa_with_env "$BIN" "$dir/migrate.env" migrate >/dev/null
    local client="mariadb --no-defaults --socket=$dir/db/mysql.sock -uroot siwa"
    log "seeding $users users"
    SEED_STRIDE_FILE=$dir/stride seed_database "$client" "$users"
    local seeded
    seeded=$(date +%s.%N)
    {
        echo "scripts/bench seed $users: $(awk -v a="$started" -v b="$seeded" 'BEGIN { printf "%.0f", b - a }') s to generate (MariaDB started, migrated, filled), on $(nproc) cores"
        seed_report "$client"
    } >"$dir/report.txt.new"
    stop_pidfile "$dir/db/mariadb.pid" 300
    trap - EXIT
    echo "data directory: $(du -sh "$dir/db/data" | cut -f1) on disk; wall time with the report and the shutdown: $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s" >>"$dir/report.txt.new"
    mv "$dir/report.txt.new" "$dir/report.txt"
    cat "$dir/report.txt"
}
