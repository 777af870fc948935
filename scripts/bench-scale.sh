# The benchmarks at scale of `scripts/bench scale`; sourced by scripts/bench once its stack runs on
# a copy of the kept database of `scripts/bench seed` (SCALE_USERS users, database siwa; MariaDB with
# a buffer pool of BENCH_SCALE_POOL). Uses URL, TMP, BIN, BIN_DIR, DURATION, CONNECTIONS, wrk_run.
#
# A small database of 1,000 users made by the same generator (database siwa_small, the same MariaDB)
# is the reference: each round serves the small one, then the large one (siwa restarted on each, its
# caches empty, a warm-up first), and runs on each, with inputs of its own (users drawn anew, so
# that the large database's tail is read from disk, not from what the round before read):
#   sign-in, new users           POST /auth/apple, a fresh emulator-minted token per request
#   sign-in, returning users     POST /auth/apple for seeded people (appleid-emulator mint --user-ids)
#   refresh                      POST /auth/refresh of seeded sessions, each user once (then rotated)
#   /auth/check                  the protected location /example/whoami (nginx auth_request)
#   /auth/me                     GET /auth/me
#   /sync built in               POST /sync, ~5 lessons and an achievement changing (bench/sync.lua zipf)
#   /sync declared               POST /sync, 2 workouts of examples/sync/collections.json changing
# The users of the returning sign-ins, /auth/check, /auth/me and /sync are drawn in the Zipf law of
# activity of bench/scale.py (the same mix of users in both databases); each drawn user signs in
# first (as an app does when it opens), for its access token.

SMALL_USERS=1000
SCALE_ROUNDS=${BENCH_SCALE_ROUNDS:-2}
# Draws of users per round: more requests than a run makes at these rates.
SCALE_DRAWS=${BENCH_SCALE_DRAWS:-20000}
# Refresh tokens per round: each user once in the large database (up to 20,000, a fiftieth of its
# users); in the small one, 80 of its about 200 users with an active seeded session (then each
# rotated again and again).
declare -A DB_NAME=([small]=siwa_small [large]=siwa) DB_USERS=([small]=$SMALL_USERS [large]=$SCALE_USERS)
large_refresh=$((SCALE_USERS / 50 < 20000 ? SCALE_USERS / 50 : 20000))
declare -A REFRESH_COUNT=([small]=80 [large]=$((large_refresh > 80 ? large_refresh : 80)))

scale_client() { echo "mariadb --no-defaults --socket=$TMP/db/mysql.sock -uroot -N -B $1"; }

log "the reference database: $SMALL_USERS users made by the same generator"
create_database "$TMP/db" siwa_small siwa "$TMP/db_password"
sed 's/^SIWA_DB_NAME=.*/SIWA_DB_NAME=siwa_small/' "$TMP/siwa.env" >"$TMP/siwa-small.env"
cp "$TMP/siwa.env" "$TMP/siwa-large.env"
siwa_with_env "$BIN" "$TMP/siwa-small.env" migrate >/dev/null
seed_database "$(scale_client siwa_small)" "$SMALL_USERS"
declare -A STRIDE=([small]=$(seed_stride "$SMALL_USERS" | cut -d' ' -f1) [large]=$(cat "$(seed_directory "$SCALE_USERS")/stride"))
: >"$TMP/refreshed.small"
: >"$TMP/refreshed.large"

# serve DB: siwa restarted on the small or the large database.
serve() {
    stop_pidfile "$TMP/siwa.pid" 30
    start_siwa "$BIN" "$TMP/siwa-$1.env" "$TMP/siwa.log" "$TMP/siwa.pid"
    curl -ksf "$URL/health" >/dev/null || die "siwa is not answering on the $1 database"
}

# metric NAME_AND_LABELS: its value in siwa's GET /metrics (0 when absent).
metric() { curl -ksf "$URL/bench/metrics-a" | awk -v m="$1" '$1 == m { v = $2 } END { printf "%.0f", v + 0 }'; }

# prepare DB ROUND: the inputs of a round in $TMP/in.DB: users drawn, their identity tokens, their
# sign-ins (access tokens), the sync users file, the refresh tokens, new people's tokens.
prepare() {
    local db=$1 round=$2 dir=$TMP/in.$1 users=${DB_USERS[$1]} stride=${STRIDE[$1]} seed=$((round * 100))
    rm -rf "$dir"
    mkdir -p "$dir"
    python3 "$SIWA_ROOT/bench/scale.py" sample "$users" "$stride" "$SCALE_DRAWS" $seed >"$dir/draws"
    sort -un "$dir/draws" >"$dir/distinct"
    sed 's/^/seed-/' "$dir/distinct" >"$dir/people"
    "$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --user-ids "$dir/people" >"$dir/access_identity"
    python3 "$SIWA_ROOT/bench/scale.py" sign-in "$URL" "$dir/access_identity" "$dir/signed_in"
    # The requests' order is the draws': each line the access token of the user drawn.
    awk 'NR == FNR { token[$2] = $1; next } { print token[$1] }' "$dir/signed_in" "$dir/draws" >"$dir/access_tokens"
    $(scale_client "${DB_NAME[$db]}") -e "SELECT id, sync_version FROM users WHERE id IN ($(paste -sd, "$dir/distinct"))" >"$dir/versions"
    python3 "$SIWA_ROOT/bench/scale.py" sync-users "$dir/signed_in" "$dir/versions" "$TMP/secrets/data_keys" "$dir/sync_by_user"
    awk 'NR == FNR { line[$4] = $1 " " $2 " " $3; next } { print line[$1] }' "$dir/sync_by_user" "$dir/draws" >"$dir/sync_users"
    # Returning sign-ins: other draws of the same law.
    python3 "$SIWA_ROOT/bench/scale.py" sample "$users" "$stride" "$SCALE_DRAWS" $((seed + 1)) | sed 's/^/seed-/' >"$dir/returning_people"
    "$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --user-ids "$dir/returning_people" >"$dir/returning"
    "$BIN_DIR/appleid-emulator" mint --config "$TMP/apple/emulator.json" --client-id com.example.siwa --count "$SCALE_DRAWS" >"$dir/new"
    python3 "$SIWA_ROOT/bench/scale.py" sample "$users" "$stride" "${REFRESH_COUNT[$db]}" $((seed + 2)) --live --distinct \
        --exclude "$TMP/refreshed.$db" >"$dir/refresh_users"
    [ "$(wc -l <"$dir/refresh_users")" -ge $((2 * CONNECTIONS)) ] || die "too few seeded sessions left to refresh in the $db database"
    cat "$dir/refresh_users" >>"$TMP/refreshed.$db"
    python3 "$SIWA_ROOT/bench/scale.py" refresh-tokens "$dir/refresh_users" >"$dir/refresh_tokens"
    sync
}

CASES=(check me sync declared refresh returning new)
declare -A LABEL=([new]="POST /auth/apple, new user" [returning]="POST /auth/apple, returning (Zipf)"
    [refresh]="POST /auth/refresh, seeded sessions" [check]="/auth/check (auth_request, Zipf)" [me]="GET /auth/me (Zipf)"
    [sync]="POST /sync built in (Zipf)" [declared]="POST /sync workouts (Zipf)")
declare -A RPS P99 HITS LOOKUPS RSS
# run_case DB CASE: one measured run; prints its row.
run_case() {
    local db=$1 case=$2 dir=$TMP/in.$1 hits=0 lookups=0 result
    if [ "$case" = sync ] || [ "$case" = declared ]; then
        hits=$(metric 'siwa_sync_cache_lookups_total{result="hit"}')
        lookups=$((hits + $(metric 'siwa_sync_cache_lookups_total{result="miss"}')))
    fi
    case $case in
        new) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$dir/new" 2) ;;
        returning) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/sign_in.lua" -- "$dir/returning" 2) ;;
        refresh) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/refresh.lua" -- "$dir/refresh_tokens" 2 "$CONNECTIONS") ;;
        check) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/bearer.lua" -- "$dir/access_tokens" /example/whoami) ;;
        me) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/bearer.lua" -- "$dir/access_tokens" /auth/me) ;;
        sync) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/sync.lua" -- "$dir/sync_users" 2 zipf) ;;
        declared) result=$(wrk_run "$URL" -s "$SIWA_ROOT/bench/sync.lua" -- "$dir/sync_users" 2 workouts) ;;
    esac
    local rps p50 p99 max errors hit_rate=-
    read -r rps p50 p99 max errors <<<"$result"
    RPS[$db.$case]="${RPS[$db.$case]:-} $rps"
    P99[$db.$case]="${P99[$db.$case]:-} $p99"
    if [ "$case" = sync ] || [ "$case" = declared ]; then
        hits=$(($(metric 'siwa_sync_cache_lookups_total{result="hit"}') - hits))
        lookups=$(($(metric 'siwa_sync_cache_lookups_total{result="hit"}') + $(metric 'siwa_sync_cache_lookups_total{result="miss"}') - lookups))
        HITS[$db.$case]=$((${HITS[$db.$case]:-0} + hits))
        LOOKUPS[$db.$case]=$((${LOOKUPS[$db.$case]:-0} + lookups))
        hit_rate=$(awk -v h="$hits" -v l="$lookups" 'BEGIN { printf "%.2f", (l > 0 ? h / l : 0) }')
    fi
    printf '%-5s %-6s %-38s %9s %8s %8s %8s %7s %6s  %s\n' "$round" "$db" "${LABEL[$case]}" "$rps" "$p50" "$p99" "$max" "$errors" "$hit_rate" \
        "$(cat "$TMP/wrk_cpu")"
    if [ "$errors" != 0 ]; then sort "$TMP/wrk_failures" | uniq -c | sort -rn | head -3 | sed 's/^/      /'; fi
}

rss_mib() { awk '/^VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$(cat "$TMP/siwa.pid")/status"; }

echo
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s through nginx (TLS, 2 workers), siwa release with $THREADS threads; MariaDB with a"
echo "${BENCH_SCALE_POOL:-1G} buffer pool and an fsync per commit; $SCALE_USERS users (large) against $SMALL_USERS (small), $SCALE_ROUNDS rounds"
echo "hit: the sync cache's hit rate in the run (siwa_sync_cache_lookups_total); last column: CPU us per request of siwa, MariaDB, nginx, statements"
printf '%-5s %-6s %-38s %9s %8s %8s %8s %7s %6s  %s\n' round db case req/s p50_ms p99_ms max_ms failed hit "cpu"
for round in $(seq "$SCALE_ROUNDS"); do
    for db in small large; do
        serve "$db"
        log "round $round, $db: drawing users, minting their tokens, signing them in"
        prepare "$db" "$round"
        start_rss=$(rss_mib)
        wrk -t2 -c"$CONNECTIONS" -d2s -s "$SIWA_ROOT/bench/bearer.lua" "$URL" -- "$TMP/in.$db/access_tokens" /auth/me >/dev/null 2>&1
        for case in "${CASES[@]}"; do
            run_case "$db" "$case"
            if [ "$case" = declared ]; then
                RSS[$db]="${RSS[$db]:-} $start_rss:$(rss_mib)"
            fi
        done
    done
done

check_runs
echo
echo "means over the rounds; targets: large/small req/s >= 0.9x, p99 <= 1.5x"
printf '%-38s %10s %10s %8s %9s %9s %8s  %s\n' case small_rps large_rps ratio small_p99 large_p99 ratio verdict
mean() { awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.2f", NF ? s / NF : 0 }' <<<"$1"; }
for case in "${CASES[@]}"; do
    awk -v l="${LABEL[$case]}" -v sr="$(mean "${RPS[small.$case]}")" -v lr="$(mean "${RPS[large.$case]}")" \
        -v sp="$(mean "${P99[small.$case]}")" -v lp="$(mean "${P99[large.$case]}")" 'BEGIN {
        r = (sr > 0 ? lr / sr : 0); p = (sp > 0 ? lp / sp : 0)
        printf "%-38s %10.0f %10.0f %7.2fx %9.2f %9.2f %7.2fx  %s\n", l, sr, lr, r, sp, lp, p, (r >= 0.9 && p <= 1.5) ? "met" : "NOT met" }'
done
for db in small large; do
    for case in sync declared; do
        awk -v d=$db -v l="${LABEL[$case]}" -v h="${HITS[$db.$case]}" -v n="${LOOKUPS[$db.$case]}" 'BEGIN {
            printf "sync cache hit rate, %s, %s: %.3f of %d lookups\n", d, l, (n > 0 ? h / n : 0), n }'
    done
done
# The sync cache's bound (SyncCache.defaultCapacity) and the growth scripts/bench cache accepts.
CACHE_BOUND_MIB=160
for db in small large; do
    for pair in ${RSS[$db]}; do
        awk -v d=$db -v s="${pair%%:*}" -v e="${pair##*:}" -v b=$CACHE_BOUND_MIB 'BEGIN {
            printf "siwa resident memory, %s: %d MiB after its start and sign-ins, %d MiB after the Zipf syncs: growth %d MiB = %.2fx the sync cache bound of %d MiB (target <= 1.2x): %s\n",
                d, s, e, e - s, (e - s) / b, b, ((e - s) / b <= 1.2) ? "met" : "NOT met" }'
    done
done
echo "siwa errors logged during the run:"
{ grep -E ' (error|critical) ' "$TMP/siwa.log" || true; } | sed -E 's/^[^ ]+ //; s/request\.id=[^ ]+ //' | sort | uniq -c | sort -rn | head -5
