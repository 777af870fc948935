#!/usr/bin/env bash
# `siwa migrate` SIGKILLed at many points across every migration file, on a new database and on
# one at the latest release's schema: each next run takes the killed run's lease over at once and
# goes on, and the schema at the end is identical to that of a run never stopped.
# MIGRATION_KILL_SEED=N repeats a run's kill points; MIGRATION_KILL_ROUNDS=N runs N seeds.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

dir=$E2E_TMP/migration-kill
mkdir -p "$dir"
sql_dir=$SIWA_ROOT/sql
read -r release_version release_commit < <(bash "$SIWA_ROOT/scripts/release")
mkdir -p "$dir/release"
git -C "$SIWA_ROOT" archive "$release_commit" sql | tar -x -C "$dir/release"

# database NAME: a new database for the e2e user, and an env file that names it.
database() {
    mariadb_root "$E2E_TMP/db" "DROP DATABASE IF EXISTS \`$1\`"
    create_database "$E2E_TMP/db" "$1" siwa "$E2E_TMP/db_password"
    sed "s/^SIWA_DB_NAME=.*/SIWA_DB_NAME=$1/" "$E2E_ENV" >"$dir/$1.env"
}
# migrate_command NAME SQL_DIR: `siwa migrate` of NAME's env file, as one process to kill (exec).
migrate_command() {
    printf '%q ' bash -c 'set -a; . "$0"; set +a; exec "$1" migrate --dir "$2"' "$dir/$1.env" "$E2E_BIN" "$2"
}
migrate() { eval "$(migrate_command "$1" "$2")"; }
# schema NAME: the tables as SHOW CREATE TABLE gives them (without AUTO_INCREMENT counters), the
# applied versions, and the progress rows left (none when every file completed).
schema() {
    mariadb-dump --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot --no-data --skip-comments --skip-dump-date "$1" \
        | sed -E 's/ AUTO_INCREMENT=[0-9]+//'
    mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B "$1" \
        -e "SELECT version, name FROM schema_migrations ORDER BY version; SELECT 'progress left:', COUNT(*) FROM schema_migrations_progress"
}

# release_schema NAME: the release's files applied as its siwa migrate applied them.
release_schema() {
    local file version name
    {
        echo "CREATE TABLE schema_migrations (version INT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,
            checksum CHAR(64) NOT NULL, applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3))
            ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
        CREATE TABLE schema_migrations_lock (id TINYINT UNSIGNED NOT NULL PRIMARY KEY, holder CHAR(32) NULL,
            expires_at DATETIME(3) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
        INSERT INTO schema_migrations_lock VALUES (1, NULL, UTC_TIMESTAMP(3));"
        for file in "$dir"/release/sql/*.sql; do
            name=$(basename "$file" .sql) version=$((10#${name%%_*}))
            cat "$file"
            echo ";INSERT INTO schema_migrations (version, name, checksum)
                VALUES ($version, '${name#*_}', '$(sha256sum "$file" | cut -c1-64)');"
        done
    } | mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot "$1"
}

database mk_reference
migrate mk_reference "$sql_dir" >/dev/null
schema mk_reference >"$dir/reference.schema"

rounds=${MIGRATION_KILL_ROUNDS:-1}
seed=${MIGRATION_KILL_SEED:-$RANDOM}
for round in $(seq "$rounds"); do
    # From nothing: every file, killed again and again.
    database mk_new
    read -r kills runs < <(eval "python3 '$(dirname "$0")/migration_kill.py' $seed 3 $(migrate_command mk_new "$sql_dir")") \
        || fail "a migration run killed at random points did not finish (seed $seed)"
    [ "$kills" -ge 10 ] || fail "only $kills kills landed across the files (seed $seed)"
    schema mk_new >"$dir/new.schema"
    diff "$dir/reference.schema" "$dir/new.schema" >&2 || fail "killed $kills times, the new database's schema differs from a run never stopped (seed $seed)"
    pass "a new database: siwa migrate killed $kills times in $runs runs (seed $seed), then the same schema as a run never stopped"

    # From the latest release's schema: its files and records as its siwa migrate left them
    # (their checksums, its lease table without the holder's session), then the files since, killed.
    database mk_release
    release_schema mk_release
    read -r kills runs < <(eval "python3 '$(dirname "$0")/migration_kill.py' $((seed + 1)) 1 $(migrate_command mk_release "$sql_dir")") \
        || fail "a migration run from v$release_version's schema, killed at random points, did not finish (seed $((seed + 1)))"
    # Three short statements since that release: a kill lands in them only now and then.
    schema mk_release >"$dir/release.schema"
    diff "$dir/reference.schema" "$dir/release.schema" >&2 \
        || fail "from v$release_version's schema, killed $kills times, the schema differs from a run never stopped (seed $((seed + 1)))"
    pass "v$release_version's schema (its records and lease table): the files since, killed $kills times in $runs runs, then the same schema as a run never stopped"
    seed=$((seed + 2))
done
for name in mk_reference mk_new mk_release; do mariadb_root "$E2E_TMP/db" "DROP DATABASE \`$name\`"; done
