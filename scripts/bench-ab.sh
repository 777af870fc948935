# The sign-in A/B of `scripts/bench ab`; sourced by scripts/bench once its stack runs. Restarts siwa
# alternately with the binary at BENCH_BASE_BIN ("base") and this tree's release build ("new") in the
# same stack, BENCH_AB_ROUNDS times (3), and prints GET /health, new-user sign-ins and refreshes of
# each, with the CPU per request of siwa, MariaDB and nginx and the statements sent to MariaDB per
# request: a change compared within one phase of the machine. BENCH_AB_SQL_BASE and BENCH_AB_SQL_NEW:
# SQL run on siwa's database before each round of the base and of this tree (a schema change in one run).
[ -x "${BENCH_BASE_BIN:-}" ] || die "set BENCH_BASE_BIN to the siwa binary to compare with"
ROUNDS_AB=${BENCH_AB_ROUNDS:-3}
# Tokens are minted for each run just before it: the emulator's live ten minutes, less than all the
# runs take. Well above any rate seen, so that no wrk thread runs out.
PER_RUN=$((DURATION * 5000 + 200))
mint() { "$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$1"; }
mint 2000 >"$TMP/warmup_tokens"
# The token files written now, not by the kernel's writeback in the middle of a run (see bench-auth.sh).
sync
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/sign_in.lua" "$URL" -- "$TMP/warmup_tokens" 2 >/dev/null 2>&1
echo "in parentheses, per request: CPU microseconds of siwa, MariaDB and nginx, and statements sent to MariaDB"
i=0
for round in $(seq $ROUNDS_AB); do
    for variant in base new; do
        i=$((i + 1))
        mint "$PER_RUN" >"$TMP/tokens"
        head -n 200 "$TMP/tokens" >"$TMP/seed_$i"
        tail -n +201 "$TMP/tokens" >"$TMP/bench_$i"
        rm "$TMP/tokens"
        sync
        stop_pidfile "$TMP/siwa.pid" 30
        # A change of the schema compared in one run: statements that put the base's schema back
        # before its rounds, and this tree's before its own (say, an index a migration drops).
        sql_var=BENCH_AB_SQL_$(echo $variant | tr a-z A-Z)
        if [ -n "${!sql_var:-}" ]; then
            mariadb --no-defaults --socket="$TMP/db/mysql.sock" -uroot siwa -e "${!sql_var}" || die "$sql_var failed"
        fi
        if [ $variant = base ]; then start_siwa "$BENCH_BASE_BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"; else start_siwa "$BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"; fi
        wrk -t2 -c"$CONNECTIONS" -d2s "$URL/health" >/dev/null
        read -r h _ <<<"$(wrk_run "$URL/health")"; hc=$(cat "$TMP/wrk_cpu")
        read -r a _ a99 _ <<<"$(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/bench_$i" 2)"; ac=$(cat "$TMP/wrk_cpu")
        rm "$TMP/bench_$i"
        python3 "$SIWA_ROOT/bench/sign_in_all.py" "$URL" "$TMP/seed_$i" "$TMP/refresh_$i" refreshToken "bench refresh"
        read -r r _ r99 _ <<<"$(wrk_run "$URL" -s "$SIWA_ROOT/bench/refresh.lua" -- "$TMP/refresh_$i" 2 "$CONNECTIONS")"; rc=$(cat "$TMP/wrk_cpu")
        check_runs
        awk -v a="$a" -v h="$h" -v r="$r" -v v=$variant -v hc="$hc" -v ac="$ac" -v rc="$rc" -v p="$a99" -v rp="$r99" \
            'BEGIN { printf "%-4s GET /health %6d/s (%s)  sign-in %5d/s p99 %s ms (%s) = %.3fx  refresh %5d/s p99 %s ms (%s) = %.3fx\n", v, h, hc, a, p, ac, a / h, r, rp, rc, r / h }'
    done
done
