# The migration benchmark of `scripts/bench migration`; sourced by scripts/bench once its stack
# (MariaDB with an fsync per commit, the emulator, nginx, siwa release build) runs. Uses URL, TMP,
# BIN_DIR, BIN, DURATION, CONNECTIONS and wrk_run.
#
# A migration that adds an index to a large table, run while siwa serves, on a copy of the kept
# database of `scripts/bench seed` (scripts/bench makes it): MIGRATION_ROWS more audit events (a year
# of them), the index of 0023 (audit_events by time) dropped and its record removed, then
# sign-ins (POST /auth/apple, new users, each writing audit events) for DURATION seconds with nothing
# else running (the reference), and again while `siwa migrate` builds the index in place
# (ALGORITHM=INPLACE, LOCK=NONE; with 0024 and 0025, two small tables' indexes). Prints both p99s, the failed requests, and the migration's time.
MIGRATION_ROWS=${MIGRATION_ROWS:-5000000}
db() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B siwa -e "$1"; }

two_sign_in_runs

log "filling $MIGRATION_ROWS audit events over the last year, without the index of 0023"
start=$SECONDS
# The files from 0023 on run again (a pending file older than an applied one is refused): each
# after 0023 makes what it makes only if missing, and the indexes of 0024 and 0025 are rebuilt too.
db "ALTER TABLE audit_events DROP INDEX IF EXISTS audit_events_time; ALTER TABLE sessions DROP INDEX IF EXISTS sessions_expiry;
    ALTER TABLE refresh_tokens DROP INDEX IF EXISTS refresh_tokens_spent; DELETE FROM schema_migrations WHERE version >= 23"
db "INSERT INTO audit_events (occurred_at, event_type, user_id, remote_address)
    SELECT CURRENT_TIMESTAMP(3) - INTERVAL 365 DAY + INTERVAL (seq * 31536 DIV ($MIGRATION_ROWS DIV 1000)) SECOND, 'sign_in', seq % 100000,
        '127.0.0.1'
    FROM seq_1_to_$MIGRATION_ROWS"
db "ANALYZE TABLE audit_events" >/dev/null
log "filled in $((SECONDS - start)) s ($(db "SELECT ROUND((data_length + index_length) / 1048576) FROM information_schema.tables WHERE table_schema = 'siwa' AND table_name = 'audit_events'") MiB); flushing to disk"
sync

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s POST /auth/apple (new users) through nginx, siwa release with $THREADS threads; $MIGRATION_ROWS audit events"
printf '%-52s %10s %9s %9s %9s %7s\n' run req/s p50_ms p99_ms max_ms failed
read -r a_rps a_p50 a_p99 a_max a_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/reference_tokens" 2)
printf '%-52s %10s %9s %9s %9s %7s\n' "reference: sign-ins, no migration" "$a_rps" "$a_p50" "$a_p99" "$a_max" "$a_err"
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -3
# The migration starts with the run and is timed to its end.
(
    start=$(date +%s.%N)
    status=0
    siwa_with_env "$BIN" "$TMP/siwa.env" migrate >"$TMP/migrate.log" 2>&1 || status=$?
    echo "$status $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" >"$TMP/migrate.result"
) &
migrate_pid=$!
read -r b_rps b_p50 b_p99 b_max b_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/tested_tokens" 2)
wait "$migrate_pid"
printf '%-52s %10s %9s %9s %9s %7s\n' "sign-ins while siwa migrate adds the index" "$b_rps" "$b_p50" "$b_p99" "$b_max" "$b_err"
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -3
read -r status seconds <"$TMP/migrate.result"
[ "$status" = 0 ] || { cat "$TMP/migrate.log"; die "siwa migrate failed"; }
[ "$(db "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = 'siwa' AND table_name = 'audit_events' AND index_name = 'audit_events_time'")" -gt 0 ] \
    || die "the index was not built"
check_runs
echo
awk -v a="$a_p99" -v b="$b_p99" -v ra="$a_rps" -v rb="$b_rps" -v e="$b_err" -v s="$seconds" -v d="$DURATION" 'BEGIN {
    printf "sign-in p99 while migrating: %.2f ms against %.2f ms (%.2fx; target: within the noise), throughput %.2fx, %d failed (target 0)\n",
        b, a, b / a, rb / ra, e
    printf "siwa migrate (0023, ALGORITHM=INPLACE, LOCK=NONE) took %.1f s%s\n", s, (s > d) ? " (longer than the run: raise SECONDS to cover it)" : "" }'
