# Shared shell functions of scripts/run, scripts/test and scripts/bench: packages, build, and
# starting and stopping MariaDB, siwa and nginx. Sourced, not executed.

SIWA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIWA_APT_PACKAGES=(libfcgi-dev libssl-dev libmariadb-dev libcurl4-openssl-dev pkg-config
    mariadb-server nginx openssl curl wrk gcc)
[ -d /opt/swift/usr/bin ] && PATH=/opt/swift/usr/bin:$PATH

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Installs the Debian packages that are missing (needs root).
install_packages() {
    local missing=()
    for package in "${SIWA_APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "missing packages (run as root, or apt-get install them): ${missing[*]}"
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # Keep the distribution's own nginx and MariaDB services from starting: we run private instances.
    local policy=/usr/sbin/policy-rc.d created=""
    if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' >$policy; chmod +x $policy; created=1; fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    [ -n "$created" ] && rm -f $policy
    command -v swift >/dev/null || die "Swift 6 is not installed (expected at /opt/swift; see https://swift.org/install)"
}

# Prints a free TCP port on the loopback interface.
free_port() {
    local port
    while :; do
        port=$((20000 + RANDOM % 40000))
        (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null || { echo "$port"; return; }
    done
}

# Stops the process whose pid is in FILE with SIGTERM (SIGKILL after TIMEOUT seconds).
stop_pidfile() {
    local file=$1 timeout=${2:-20} pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq $((timeout * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && { log "pid $pid did not stop; killing it"; kill -KILL "$pid"; }
    fi
    rm -f "$file"
}

# True when the process whose pid is in FILE runs.
pidfile_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Starts a private MariaDB on a unix socket only: start_mariadb DIR. Creates DIR/data once.
# Leaves DIR/mysql.sock, DIR/mariadb.pid, DIR/mariadb.log.
start_mariadb() {
    local dir user
    dir=$(realpath -m "$1")
    user=$(id -un)
    mkdir -p "$dir"
    if [ ! -d "$dir/data/mysql" ]; then
        mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" \
            --auth-root-authentication-method=socket --skip-test-db >"$dir/install.log" 2>&1 \
            || { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
    fi
    pidfile_alive "$dir/mariadb.pid" && return 0
    mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/mysql.sock" --skip-networking \
        --pid-file="$dir/mariadb.pid" --log-error="$dir/mariadb.log" --user="$user" \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
        --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=1 --max-connections=500 \
        ${SIWA_MARIADB_OPTIONS:-} >/dev/null 2>&1 &
    for _ in $(seq 300); do
        mariadb-admin --no-defaults --socket="$dir/mysql.sock" -uroot ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$dir/mariadb.log" >&2
    die "MariaDB did not start"
}

# Runs SQL as MariaDB's root user over the socket: mariadb_root DIR SQL.
mariadb_root() { mariadb --no-defaults --socket="$1/mysql.sock" -uroot -e "$2"; }

# Creates (or updates) a database and its user with a password from a 0600 file:
# create_database DIR NAME USER PASSWORD_FILE
create_database() {
    local dir=$1 name=$2 user=$3 password_file=$4
    if [ ! -s "$password_file" ]; then
        (umask 077; openssl rand -hex 24 >"$password_file")
    fi
    mariadb_root "$dir" "CREATE DATABASE IF NOT EXISTS \`$name\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
        CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$(cat "$password_file")';
        ALTER USER '$user'@'localhost' IDENTIFIED BY '$(cat "$password_file")';
        GRANT ALL PRIVILEGES ON \`$name\`.* TO '$user'@'localhost';"
}

# Creates a self-signed certificate for localhost once: make_certificate DIR -> DIR/cert.pem, DIR/key.pem
make_certificate() {
    local dir=$1
    [ -s "$dir/cert.pem" ] && [ -s "$dir/key.pem" ] && return 0
    mkdir -p "$dir"
    (umask 077; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null) || die "openssl req failed"
}

# Prepares Sign in with Apple settings for a local stack in DIR: a P-256 key as Apple's .p8 would
# be, and until the Apple ID emulator exists, a stand-in key-set endpoint served by nginx with a
# copy of Apple's real signing keys (Tests/Fixtures). Prints the nginx location for render_nginx's
# EXTRA file and the SIWA_APPLE_* lines: apple_stand_in DIR HTTPS_PORT EXTRA_CONF ENV_FILE
apple_stand_in() {
    local dir=$1 port=$2 extra=$3 env_file=$4
    mkdir -p "$dir"
    [ -s "$dir/apple_key.p8" ] || (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -out "$dir/apple_key.p8" 2>/dev/null) || die "openssl genpkey failed"
    python3 -c 'import json,sys; print(json.dumps({"keys": json.load(open(sys.argv[1]))["keys"]}))' \
        "$SIWA_ROOT/Tests/Fixtures/vectors/apple/apple_public_keys.json" >"$dir/apple_keys.json"
    cat >"$extra" <<CONF
location = /apple-stand-in/auth/keys {
    alias $dir/apple_keys.json;
    default_type application/json;
    add_header Cache-Control "max-age=86400" always;
}
CONF
    cat >>"$env_file" <<ENV
SIWA_APPLE_TEAM_ID=TEAMID0001
SIWA_APPLE_KEY_ID=KEYID00001
SIWA_APPLE_PRIVATE_KEY_FILE=$dir/apple_key.p8
SIWA_APPLE_BUNDLE_IDS=com.example.siwa
SIWA_APPLE_SERVICES_ID=com.example.siwa.web
SIWA_APPLE_BASE_URL=https://localhost:$port/apple-stand-in
SIWA_APPLE_CA_FILE=$(dirname "$extra")/../tls/cert.pem
ENV
}

# Writes an nginx configuration from nginx/dev.conf.template:
# render_nginx PREFIX HTTPS_PORT SOCKET CERT_DIR AUTH_RATE [EXTRA_CONF]
render_nginx() {
    local prefix=$1 port=$2 socket=$3 certs=$4 rate=$5 extra=${6:-}
    mkdir -p "$prefix"
    [ -n "$extra" ] || { extra=$prefix/extra.conf; : >"$extra"; }
    local user_line=""
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    sed -e "s|@USER_LINE@|$user_line|" -e "s|@PREFIX@|$prefix|g" -e "s|@HTTPS_PORT@|$port|g" \
        -e "s|@SOCKET@|$socket|g" -e "s|@CERT@|$certs/cert.pem|" -e "s|@KEY@|$certs/key.pem|" \
        -e "s|@AUTH_RATE@|$rate|" -e "s|@PUBLIC@|$SIWA_ROOT/public|" \
        -e "s|@LOCATIONS@|$SIWA_ROOT/nginx/siwa-locations.conf|" -e "s|@EXTRA@|$extra|" \
        "$SIWA_ROOT/nginx/dev.conf.template" >"$prefix/nginx.conf"
    nginx -t -q -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" || die "nginx configuration is invalid"
}

# Starts nginx with PREFIX/nginx.conf, or reloads it when it already runs: start_nginx PREFIX
start_nginx() {
    local prefix=$1
    if pidfile_alive "$prefix/nginx.pid"; then
        nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" -s reload
    else
        nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log"
    fi
}

# Stops nginx gracefully: stop_nginx PREFIX
stop_nginx() { stop_pidfile "$1/nginx.pid" 10; }

# Starts `siwa serve` in the background with the SIWA_* lines of ENV_FILE:
# start_siwa BINARY ENV_FILE LOG_FILE PID_FILE
start_siwa() {
    local binary=$1 env_file=$2 log_file=$3 pid_file=$4 socket
    (set -a; . "$env_file"; set +a; exec "$binary" serve) >>"$log_file" 2>&1 &
    echo $! >"$pid_file"
    socket=$(sed -n 's/^SIWA_SOCKET_PATH=//p' "$env_file")
    for _ in $(seq 100); do
        [ -S "$socket" ] && return 0
        kill -0 "$(cat "$pid_file")" 2>/dev/null || break
        sleep 0.1
    done
    tail -20 "$log_file" >&2
    die "siwa did not start"
}

# Runs a siwa subcommand with the SIWA_* lines of ENV_FILE: siwa_with_env BINARY ENV_FILE ARGS...
siwa_with_env() {
    local binary=$1 env_file=$2
    shift 2
    (set -a; . "$env_file"; set +a; exec "$binary" "$@")
}
