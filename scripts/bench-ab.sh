# The sign-in A/B of `scripts/bench ab`; sourced by scripts/bench once its stack runs. Restarts siwa
# alternately with the binary at BENCH_BASE_BIN ("base") and this tree's release build ("new") in the
# same stack, BENCH_AB_ROUNDS times (3), and prints GET /health and new-user sign-ins of each, with
# the CPU per request of siwa, MariaDB and nginx: a change compared within one phase of the machine.
[ -x "${BENCH_BASE_BIN:-}" ] || die "set BENCH_BASE_BIN to the siwa binary to compare with"
ROUNDS_AB=${BENCH_AB_ROUNDS:-3}
RUNS=$((ROUNDS_AB * 2))
"$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count $((RUNS * 25000 + 2000)) >"$TMP/tokens"
head -n 2000 "$TMP/tokens" >"$TMP/warmup_tokens"
for i in $(seq $RUNS); do
    sed -n "$((2001 + (i - 1) * 25000)),$((2000 + i * 25000))p" "$TMP/tokens" >"$TMP/bench_$i"
done
wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/sign_in.lua" "$URL" -- "$TMP/warmup_tokens" 2 >/dev/null 2>&1
i=0
for round in $(seq $ROUNDS_AB); do
    for variant in base new; do
        i=$((i + 1))
        stop_pidfile "$TMP/siwa.pid" 30
        if [ $variant = base ]; then start_siwa "$BENCH_BASE_BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"; else start_siwa "$BIN" "$TMP/siwa.env" "$TMP/siwa.log" "$TMP/siwa.pid"; fi
        wrk -t2 -c"$CONNECTIONS" -d2s "$URL/health" >/dev/null
        read -r h _ <<<"$(wrk_run "$URL/health")"; hc=$(cat "$TMP/wrk_cpu")
        read -r a _ a99 _ <<<"$(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$TMP/bench_$i" 2)"; ac=$(cat "$TMP/wrk_cpu")
        awk -v a="$a" -v h="$h" -v v=$variant -v hc="$hc" -v ac="$ac" -v p="$a99" \
            'BEGIN { printf "%-4s GET /health %6d/s (CPU us: %s)  sign-in %5d/s p99 %s ms (CPU us: %s) = %.3fx\n", v, h, hc, a, p, ac, a / h }'
    done
done
