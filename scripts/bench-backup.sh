# `scripts/bench backup [USERS]` (default 200,000): the time of `siwa backup` and `siwa restore` of a
# database of USERS users of realistic shapes (scripts/bench-seed.sh's generator), on a private
# MariaDB that writes a binary log (as a server kept for point-in-time recovery does), against the
# same work done by MariaDB's own tools in the same run: `mariadb-dump` with the same options, to
# /dev/null, and `mariadb` loading the same dump. Sourced by scripts/bench; release build.
# What it keeps at the peak: the database, the dump, a restored copy and the binary log of one load,
# about 20 GB for 1,000,000 users.

backup_main() {
    local users=$1 work bin client started
    [ -f "$SIWA_ROOT/scripts/bench-seed.sh" ] || die "scripts/bench backup needs the generator of scripts/bench seed (scripts/bench-seed.sh)"
    . "$SIWA_ROOT/scripts/bench-seed.sh"
    install_packages
    log "building (release)"
    (cd "$SIWA_ROOT" && swift build -c release --product siwa 2>&1 | tail -1)
    bin=$(cd "$SIWA_ROOT" && swift build -c release --show-bin-path)/siwa
    work=$(mktemp -d /tmp/siwa-bench-backup.XXXXXX)
    BACKUP_WORK=$work
    trap 'stop_pidfile "$BACKUP_WORK/db/mariadb.pid" 60; rm -rf "$BACKUP_WORK"' EXIT
    MARIADB_SERVER_OPTIONS="--log-bin=binlog --server-id=1 --binlog-format=ROW" start_mariadb "$work/db"
    create_database "$work/db" siwa siwa "$work/db_password"
    mariadb_root "$work/db" "GRANT ALL PRIVILEGES ON \`siwa_restored\`.* TO 'siwa'@'localhost'"
    mkdir -m 700 -p "$work/keys/access_keys"
    (umask 077
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/keys/access_keys/20260101T000000Z.pem" 2>/dev/null
        echo "k1 $(openssl rand -base64 32)" >"$work/keys/data_keys"
        openssl rand -hex 16 >"$work/passphrase")
    cat >"$work/siwa.env" <<ENV
SIWA_DB_SOCKET=$work/db/mysql.sock
SIWA_DB_NAME=siwa
SIWA_DB_USER=siwa
SIWA_DB_PASSWORD_FILE=$work/db_password
SIWA_MIGRATIONS_DIR=$SIWA_ROOT/sql
SIWA_PUBLIC_URL=https://localhost:9443
SIWA_ACCESS_KEYS_DIR=$work/keys/access_keys
SIWA_DATA_KEYS_FILE=$work/keys/data_keys
ENV
    sed -e 's/^SIWA_DB_NAME=.*/SIWA_DB_NAME=siwa_restored/' -e "s|$work/keys/|$work/restored_keys/|" "$work/siwa.env" >"$work/restored.env"
    siwa_with_env "$bin" "$work/siwa.env" migrate >/dev/null
    client="mariadb --no-defaults --socket=$work/db/mysql.sock -uroot"
    # The generator's sessions write no binary log (the backup starts after them), and it fills one
    # chunk at a time: two at once waited on each other's locks past innodb_lock_wait_timeout on a
    # busy machine.
    export BENCH_SEED_JOBS=${BENCH_SEED_JOBS:-1}
    printf '[client]\ninit-command=SET SESSION sql_log_bin = 0\n' >"$work/seed.cnf"
    log "seeding $users users"
    seed_database "mariadb --defaults-file=$work/seed.cnf --socket=$work/db/mysql.sock -uroot siwa" "$users"
    # The generator's Apple tokens are random bytes; a restore proves its data key on them, so each
    # client id's tokens get one value really sealed with the data key.
    python3 - "$work/keys/data_keys" $client siwa <<'PY'
import base64, os, subprocess, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
key_id, key = open(sys.argv[1]).read().split()[:2]
sql = []
for client in ("com.example.siwa", "com.example.siwa.web"):
    nonce = os.urandom(12)
    box = nonce + AESGCM(base64.b64decode(key)).encrypt(nonce, b"r.seeded-apple-refresh-token", client.encode())
    sql.append(f"UPDATE apple_tokens SET token = UNHEX('{box.hex()}'), token_key_id = '{key_id}' WHERE client_id = '{client}';")
subprocess.run(sys.argv[2:] + ["-e", " ".join(sql)], check=True)
PY
    $client -e "PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY"
    local size
    size=$($client -N -B -e "SELECT ROUND(SUM(data_length + index_length) / 1048576) FROM information_schema.TABLES WHERE table_schema = 'siwa'")

    log "mariadb-dump alone"
    started=$(date +%s.%N)
    mariadb-dump --no-defaults --socket="$work/db/mysql.sock" -uroot --single-transaction --quick --routines --triggers \
        --hex-blob --no-tablespaces --default-character-set=utf8mb4 --master-data=2 --gtid siwa >/dev/null
    local dump_alone
    dump_alone=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    log "siwa backup"
    started=$(date +%s.%N)
    siwa_with_env "$bin" "$work/siwa.env" backup "$work/backup" --passphrase-file "$work/passphrase" >"$work/backup.log"
    local backup_time
    backup_time=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    cat "$work/backup.log"

    log "mariadb loading the dump alone"
    $client -e "CREATE DATABASE siwa_alone CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
    started=$(date +%s.%N)
    $client --default-character-set=utf8mb4 siwa_alone <"$work/backup/database.sql"
    local load_alone
    load_alone=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    $client -e "DROP DATABASE siwa_alone; PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY"
    log "siwa restore"
    started=$(date +%s.%N)
    siwa_with_env "$bin" "$work/restored.env" restore "$work/backup" --passphrase-file "$work/passphrase" >"$work/restore.log"
    local restore_time
    restore_time=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    cat "$work/restore.log"

    local dump_mb
    dump_mb=$(($(stat -c %s "$work/backup/database.sql") / 1048576))
    echo "$users users seeded ($size MiB of tables; $dump_mb MiB dump), binary log on:"
    echo "  siwa backup:  ${backup_time} s   (mariadb-dump alone, same options: ${dump_alone} s)"
    echo "  siwa restore: ${restore_time} s   (mariadb loading the same dump alone: ${load_alone} s)"
}
