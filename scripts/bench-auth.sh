# The sign-in and refresh benchmarks of `scripts/bench auth`; sourced by scripts/bench once its stack
# (MariaDB, the emulator, nginx, siwa release build) runs. Uses URL, TMP, BIN_DIR, DURATION, CONNECTIONS.

# Tokens for the whole run: well above the target rate, so that no thread runs out.
COUNT=$(( DURATION * 5000 + 20000 ))
log "minting $COUNT identity tokens at the emulator (its current key)"
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$COUNT" >"$TMP/tokens"
head -n 2000 "$TMP/tokens" >"$TMP/warmup_tokens"
sed -n 2001,2200p "$TMP/tokens" >"$TMP/seed_tokens"
tail -n +2201 "$TMP/tokens" >"$TMP/bench_tokens"
# About 90 MB of token files just written: left to the kernel's writeback, they reach the disk
# some 30 s later, in the middle of a run, and stall MariaDB's commit fsyncs for 100 ms and more
# (wrk_run syncs too, before each run).
sync

log "warm-up"
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/sign_in.lua" "$URL" -- "$TMP/warmup_tokens" 2 >/dev/null 2>&1
wrk -t2 -c"$CONNECTIONS" -d2s "$URL/health" >/dev/null

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s through nginx (TLS, 2 workers), siwa release with $THREADS threads, MariaDB with fsync per commit"
echo "CPU per request, in microseconds, of siwa, MariaDB and nginx during each run (user + system), and statements sent to MariaDB per request (db_rt, round trips):"
printf '%-44s %10s %9s %9s %9s %7s %8s %8s %8s %6s\n' target req/s p50_ms p99_ms max_ms non2xx siwa_us db_us nginx_us db_rt
read -r h_rps h_p50 h_p99 h_max h_err < <(wrk_run "$URL/health")
printf '%-44s %10s %9s %9s %9s %7s %8s %8s %8s %6s\n' "reference: GET /health (DB ping)" "$h_rps" "$h_p50" "$h_p99" "$h_max" "$h_err" $(cat "$TMP/wrk_cpu")
read -r a_rps a_p50 a_p99 a_max a_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/bench_tokens" 2)
printf '%-44s %10s %9s %9s %9s %7s %8s %8s %8s %6s\n' "POST /auth/apple (new user, fresh token)" "$a_rps" "$a_p50" "$a_p99" "$a_max" "$a_err" $(cat "$TMP/wrk_cpu")
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -5 >"$TMP/sign_in_failures"

# Refresh tokens to start from: sessions opened with the sign-ins' answers (100 per wrk thread).
python3 "$SIWA_ROOT/bench/sign_in_all.py" "$URL" "$TMP/seed_tokens" "$TMP/refresh_tokens" refreshToken "bench refresh"
read -r r_rps r_p50 r_p99 r_max r_err < <(wrk_run "$URL" -s "$SIWA_ROOT/bench/refresh.lua" -- "$TMP/refresh_tokens" 2)
printf '%-44s %10s %9s %9s %9s %7s %8s %8s %8s %6s\n' "POST /auth/refresh (rotation)" "$r_rps" "$r_p50" "$r_p99" "$r_max" "$r_err" $(cat "$TMP/wrk_cpu")
echo
awk -v a="$a_rps" -v ap="$a_p99" -v r="$r_rps" -v rp="$r_p99" -v h="$h_rps" -v c="$CONNECTIONS" 'BEGIN {
    printf "sign-in: %d/s = %.3fx GET /health (target >= 0.18x), p99 %.2f ms (target <= 50 ms) at %d connections: %s\n", a, a / h, ap, c, (a / h >= 0.18 && ap <= 50) ? "met" : "NOT met"
    printf "refresh: %d/s = %.3fx GET /health (target >= 0.23x), p99 %.2f ms (target <= 50 ms) at %d connections: %s\n", r, r / h, rp, c, (r / h >= 0.23 && rp <= 50) ? "met" : "NOT met" }'
echo "non-2xx answers of the sign-in run (status, body start):"
cat "$TMP/sign_in_failures"
echo "non-2xx answers of the refresh run (status, body start):"
sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -5
echo "siwa errors logged during the run:"
grep -E ' (error|critical) ' "$TMP/siwa.log" | sed -E 's/^[^ ]+ //; s/request\.id=[^ ]+ //' | sort | uniq -c | sort -rn | head -5
