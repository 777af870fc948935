# The metrics' cost, for `scripts/bench metrics`; sourced by scripts/bench once its stack runs. GET
# /health through nginx with siwa restarted with SIWA_METRICS=false and true in turn, ROUNDS times
# each (alternating, so that the machine's drift falls on both), at SIWA_LOG_LEVEL=warning. Uses URL,
# TMP, BIN, DURATION, CONNECTIONS, ROUNDS.

restart_with_metrics() { # restart_with_metrics true|false
    stop_pidfile "$TMP/siwa.pid" 30
    grep -v '^SIWA_METRICS=' "$TMP/siwa.env" >"$TMP/siwa-metrics.env"
    echo "SIWA_METRICS=$1" >>"$TMP/siwa-metrics.env"
    start_siwa "$BIN" "$TMP/siwa-metrics.env" "$TMP/siwa.log" "$TMP/siwa.pid"
    curl -ksf "$URL/health" >/dev/null || die "siwa is not answering"
    local metrics
    metrics=$(curl -ks -o /dev/null -w '%{http_code}' "$URL/metrics")
    [ "$metrics" = "$([ "$1" = true ] && echo 200 || echo 404)" ] || die "GET /metrics with SIWA_METRICS=$1: $metrics"
    wrk -t2 -c"$CONNECTIONS" -d2s "$URL/health" >/dev/null
}

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s GET /health through nginx (TLS, 2 workers), $THREADS threads, metrics off and on in turn"
printf '%-6s %-20s %10s %9s %9s %7s\n' round metrics req/s p50_ms p99_ms failed
off_total=0 on_total=0
for round in $(seq "$ROUNDS"); do
    for setting in false true; do
        restart_with_metrics "$setting"
        read -r rps p50 p99 _max errors < <(wrk_run "$URL/health")
        printf '%-6s %-20s %10s %9s %9s %7s\n' "$round" "SIWA_METRICS=$setting" "$rps" "$p50" "$p99" "$errors"
        if [ "$setting" = true ]; then on_total=$((on_total + rps)); else off_total=$((off_total + rps)); fi
    done
done
check_runs
echo "the scrape after the last round:"
curl -ks "$URL/metrics" | grep -E '^siwa_http_requests_total\{route="/health"|^siwa_workers|^process_resident_memory_bytes'
awk -v on="$on_total" -v off="$off_total" -v r="$ROUNDS" 'BEGIN {
    printf "mean over %d rounds: off %d/s, on %d/s: on/off = %.3fx, %.1f%% fewer requests per second with metrics (target <= 3%%): %s\n",
        r, off / r, on / r, on / off, (1 - on / off) * 100, (1 - on / off <= 0.03) ? "met" : "NOT met" }'
