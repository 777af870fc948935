#!/usr/bin/env bash
# A stand-in for systemd for 51_package.sh, which runs where systemd is not PID 1: starts, stops and
# restarts the package's units as systemd would run them, from the unit files as installed
# (/lib/systemd/system/NAME.service): as User= and Group= (with SupplementaryGroups=), in
# WorkingDirectory=, with the EnvironmentFile= and only it, ExecStartPre= to completion first, then
# ExecStart= in the background; stop sends KillSignal=SIGTERM to the main process and waits for it.
# Installed on PATH as deb-systemd-invoke, it is what the package's maintainer scripts call:
#   units.sh start|stop|restart|try-restart UNIT...    (UNIT as siwa.service or siwa)
#   units.sh try-reload-or-restart nginx               (the test's nginx, at $UNITS_NGINX_PREFIX, if it runs)
# State (pid files, logs) is kept in $UNITS_STATE.
set -euo pipefail
: "${UNITS_STATE:?UNITS_STATE names the directory of the pid files and logs of the units}"
mkdir -p "$UNITS_STATE"

value() { sed -n "s/^$2=//p" "/lib/systemd/system/$1.service" | tail -1; }
running() { [ -s "$UNITS_STATE/$1.pid" ] && kill -0 "$(cat "$UNITS_STATE/$1.pid")" 2>/dev/null; }

start() {
    local unit=$1 user group groups env dir
    running "$unit" && return 0
    user=$(value "$unit" User) group=$(value "$unit" Group) groups=$(value "$unit" SupplementaryGroups)
    env=$(value "$unit" EnvironmentFile) dir=$(value "$unit" WorkingDirectory)
    local credentials=(--reuid="$user" --regid="$group")
    if [ -n "$groups" ]; then credentials+=(--groups="$(getent group "$groups" | cut -d: -f3)"); else credentials+=(--init-groups); fi
    # Replaces the calling shell: run it in a subshell, or in the background.
    run_as() {
        cd "$dir" && exec setpriv "${credentials[@]}" env -i PATH=/usr/bin:/bin sh -c 'set -a; . "$0"; set +a; exec "$@"' "$env" "$@"
    }
    local pre
    pre=$(value "$unit" ExecStartPre)
    if [ -n "$pre" ]; then
        # shellcheck disable=SC2086
        (run_as $pre) >>"$UNITS_STATE/$unit.log" 2>&1 || { echo "$unit: ExecStartPre failed: $(tail -3 "$UNITS_STATE/$unit.log")" >&2; return 1; }
    fi
    # shellcheck disable=SC2046
    run_as $(value "$unit" ExecStart) >>"$UNITS_STATE/$unit.log" 2>&1 &
    echo $! >"$UNITS_STATE/$unit.pid"
}

stop() {
    local unit=$1 pid
    running "$unit" || return 0
    pid=$(cat "$UNITS_STATE/$unit.pid")
    kill -TERM "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; echo "$unit: killed after 30 s" >&2; }
    rm -f "$UNITS_STATE/$unit.pid"
}

action=$1
shift
for unit in "$@"; do
    unit=${unit%.service}
    case $action in
    start) start "$unit" ;;
    stop) stop "$unit" ;;
    restart) stop "$unit" && start "$unit" ;;
    try-restart) if running "$unit"; then stop "$unit" && start "$unit"; fi ;;
    try-reload-or-restart)
        [ "$unit" = nginx ] || { echo "units.sh: only nginx is reloaded" >&2; exit 2; }
        if [ -n "${UNITS_NGINX_PREFIX:-}" ] && [ -s "$UNITS_NGINX_PREFIX/nginx.pid" ] && kill -0 "$(cat "$UNITS_NGINX_PREFIX/nginx.pid")" 2>/dev/null; then
            nginx -p "$UNITS_NGINX_PREFIX" -c "$UNITS_NGINX_PREFIX/nginx.conf" -e "$UNITS_NGINX_PREFIX/error.log" -s reload
        fi
        ;;
    *) echo "units.sh: unknown action $action" >&2; exit 2 ;;
    esac
    echo "$action $unit" >>"$UNITS_STATE/calls"
done
