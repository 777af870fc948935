# The retention benchmark of `scripts/bench purge`; sourced by scripts/bench once its stack (MariaDB
# with an fsync per commit, the emulator, nginx, siwa release build) runs. Uses URL, TMP, BIN_DIR, BIN,
# DURATION, CONNECTIONS and wrk_run.
#
# Fills the database with rows past their retention (PURGE_ROWS audit events 400 days old, and a
# fifth as many sessions that ended 40 days ago, each with two spent refresh tokens), then times
# sign-ins (POST /auth/apple, new users) for DURATION seconds twice: with nothing else running (the
# reference), and while `siwa jobs` purges those rows. Prints both p99s and their ratio (target:
# within the noise), the rows purged and their rate, and InnoDB's row lock waits during the purge
# run (target: none over 100 ms).
PURGE_ROWS=${PURGE_ROWS:-1000000}
SESSIONS=$((PURGE_ROWS / 5))
db() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B siwa -e "$1"; }
status() { mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -N -B -e "SHOW GLOBAL STATUS LIKE '$1'" | awk '{print $2}'; }

two_sign_in_runs

# The rows past retention, in SQL (MariaDB's Sequence engine), for the warm-up's users. Their ids
# are far above those siwa reserves for its own sessions.
log "filling $PURGE_ROWS audit events 400 days old and $SESSIONS sessions ended 40 days ago, with $((SESSIONS * 2)) spent refresh tokens"
start=$SECONDS
db "INSERT INTO audit_events (occurred_at, event_type, user_id, remote_address)
    SELECT CURRENT_TIMESTAMP(3) - INTERVAL 400 DAY + INTERVAL seq SECOND, 'bench_old', seq % 1000, '127.0.0.1' FROM seq_1_to_$PURGE_ROWS"
db "CREATE TEMPORARY TABLE bench_users (n INT PRIMARY KEY, id BIGINT UNSIGNED) ENGINE=MEMORY;
    INSERT INTO bench_users SELECT ROW_NUMBER() OVER (ORDER BY id) - 1, id FROM users LIMIT 1000;
    INSERT INTO sessions (id, user_id, device, created_at, last_used_at, expires_at, revoked_at, revoke_reason)
    SELECT 1000000000000 + seq, u.id, 'bench-ended', UTC_TIMESTAMP(3) - INTERVAL 100 DAY, UTC_TIMESTAMP(3) - INTERVAL 50 DAY,
        UTC_TIMESTAMP(3) - INTERVAL 40 DAY, UTC_TIMESTAMP(3) - INTERVAL 40 DAY, 'sign_out'
    FROM seq_1_to_$SESSIONS s JOIN bench_users u ON u.n = s.seq % (SELECT COUNT(*) FROM bench_users);
    INSERT INTO refresh_tokens (token_hash, session_id, issued_at, spent_at)
    SELECT UNHEX(SHA2(CONCAT(seq, '-', k), 256)), 1000000000000 + seq, UTC_TIMESTAMP(3) - INTERVAL 60 DAY, UTC_TIMESTAMP(3) - INTERVAL 45 DAY
    FROM seq_1_to_$SESSIONS, (SELECT 1 AS k UNION ALL SELECT 2) two"
log "filled in $((SECONDS - start)) s; ANALYZE and flushing to disk"
db "ANALYZE TABLE audit_events, sessions, refresh_tokens" >/dev/null
sync
rows_before=$(db "SELECT (SELECT COUNT(*) FROM audit_events WHERE event_type = 'bench_old') + (SELECT COUNT(*) FROM sessions WHERE device = 'bench-ended')")

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s POST /auth/apple (new users) through nginx, siwa release with $THREADS threads; MariaDB with fsync per commit"
printf '%-52s %10s %9s %9s %9s %7s %14s %12s\n' run req/s p50_ms p99_ms max_ms failed row_lock_waits max_wait_ms
mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -e "FLUSH STATUS"
waits=$(status Innodb_row_lock_waits)
read -r a_rps a_p50 a_p99 a_max a_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/reference_tokens" 2)
printf '%-52s %10s %9s %9s %9s %7s %14s %12s\n' "reference: sign-ins, nothing purged" "$a_rps" "$a_p50" "$a_p99" "$a_max" "$a_err" \
    "$(($(status Innodb_row_lock_waits) - waits))" "$(status Innodb_row_lock_time_max)"
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -3

# `siwa jobs` with a pass every second: each pass purges in batches of 1,000 rows for up to 10 s.
mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot -e "FLUSH STATUS"
waits=$(status Innodb_row_lock_waits)
siwa_with_env "$BIN" "$TMP/siwa.env" jobs --interval 1 >"$TMP/jobs.log" 2>&1 &
jobs_pid=$!
purge_start=$SECONDS
read -r b_rps b_p50 b_p99 b_max b_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/tested_tokens" 2)
rows_after=$(db "SELECT (SELECT COUNT(*) FROM audit_events WHERE event_type = 'bench_old') + (SELECT COUNT(*) FROM sessions WHERE device = 'bench-ended')")
printf '%-52s %10s %9s %9s %9s %7s %14s %12s\n' "sign-ins while siwa jobs purges" "$b_rps" "$b_p50" "$b_p99" "$b_max" "$b_err" \
    "$(($(status Innodb_row_lock_waits) - waits))" "$(status Innodb_row_lock_time_max)"
lock_max=$(status Innodb_row_lock_time_max)
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -3
# The rest of the purge, timed to its end (bounded: a tenth of the rows a second at least).
deadline=$((SECONDS + PURGE_ROWS / 10000 + 60))
remaining() { db "SELECT (SELECT COUNT(*) FROM audit_events WHERE event_type = 'bench_old') + (SELECT COUNT(*) FROM sessions WHERE device = 'bench-ended')
    + (SELECT COUNT(*) FROM refresh_tokens WHERE spent_at < UTC_TIMESTAMP(3) - INTERVAL 40 DAY)"; }
while [ "$(remaining)" != 0 ] && [ $SECONDS -lt $deadline ]; do
    sleep 1
done
purge_seconds=$((SECONDS - purge_start))
# siwa_with_env runs siwa in a subshell of its own: the signal goes to the process itself.
pkill -TERM -f -- "$BIN jobs --interval 1" || true
wait "$jobs_pid" || true
left=$(remaining)
[ "$left" = 0 ] || db "SELECT 'left: audit events', COUNT(*) FROM audit_events WHERE event_type = 'bench_old'
    UNION ALL SELECT 'sessions', COUNT(*) FROM sessions WHERE device = 'bench-ended'
    UNION ALL SELECT 'spent refresh tokens', COUNT(*) FROM refresh_tokens WHERE spent_at < UTC_TIMESTAMP(3) - INTERVAL 40 DAY"
check_runs
echo
awk -v a="$a_p99" -v b="$b_p99" -v ra="$a_rps" -v rb="$b_rps" -v during=$((rows_before - rows_after)) -v d="$DURATION" \
    -v all="$rows_before" -v s="$purge_seconds" -v left="$left" -v m="$lock_max" 'BEGIN {
    printf "sign-in p99 while purging: %.2f ms against %.2f ms (%.2fx; target: within the noise), throughput %.2fx\n", b, a, b / a, rb / ra
    printf "purged %d of %d audit events and sessions during the %d s run (%.0f rows/s); all %d (and their refresh tokens) in %d s; %d left\n",
        during, all, d, during / d, all, s, left
    printf "longest row lock wait during the purge run: %d ms (target <= 100 ms): %s\n", m, (m <= 100) ? "met" : "NOT met" }'
grep -E 'purge|failed' "$TMP/jobs.log" | cut -c1-300 | tail -3 || true
