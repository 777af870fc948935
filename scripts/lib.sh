# Shared shell functions of scripts/run, scripts/test and scripts/bench: packages, build, and
# starting and stopping MariaDB, siwa and nginx. Sourced, not executed.

SIWA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The Debian packages a build needs besides the Swift toolchain (the C libraries' headers), and those
# the tests, the local stack and the benchmarks need too (servers, a browser, the tools of the
# checks): scripts/package installs the first alone, scripts/run, test, bench and fuzz both.
SIWA_BUILD_PACKAGES=(libfcgi-dev libssl-dev libmariadb-dev libcurl4-openssl-dev pkg-config gcc)
SIWA_TEST_PACKAGES=(mariadb-server galera-4 rsync iproute2 nginx openssl curl ca-certificates wrk chromium python3-venv
    nodejs php-cli prometheus)
SIWA_APT_PACKAGES=("${SIWA_BUILD_PACKAGES[@]}" "${SIWA_TEST_PACKAGES[@]}")
[ -d /opt/swift/usr/bin ] && PATH=/opt/swift/usr/bin:$PATH

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Installs the Debian packages that are missing (needs root): install_packages [PACKAGE...], by
# default SIWA_APT_PACKAGES.
install_packages() {
    local missing=() wanted=("$@")
    [ $# -gt 0 ] || wanted=("${SIWA_APT_PACKAGES[@]}")
    for package in "${wanted[@]}"; do
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

# The project's Python tools (Tests/EndToEnd/requirements.txt, versions pinned) in .venv, installed
# from PyPI when missing or when the requirements changed. Prints the environment's bin directory.
# python_tools sslyze: the TLS scanner instead, from requirements-sslyze.txt into .venv-sslyze (it
# pins a cryptography the other tools cannot share).
python_tools() {
    local suffix=${1:+-$1}
    local venv=$SIWA_ROOT/.venv$suffix requirements=$SIWA_ROOT/Tests/EndToEnd/requirements$suffix.txt
    # Made again when its requirements changed, or when its interpreter is gone.
    if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null || ! "$venv/bin/python" -c '' 2>/dev/null; then
        log "installing the Python tools into $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2 || die "pip install failed"
        cp "$requirements" "$venv/requirements.txt"
    fi
    echo "$venv/bin"
}

# Prints a free TCP port on the loopback interface.
free_port() {
    local port low
    # Below the kernel's range of ephemeral ports, which outgoing connections take without
    # listening: a port chosen there can be taken between this check and the bind.
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    while :; do
        port=$((10000 + RANDOM % (low - 10000)))
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
        mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" ${MARIADB_SERVER_OPTIONS:-} \
            --auth-root-authentication-method=socket --skip-test-db >"$dir/install.log" 2>&1 \
            || { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
        # The new redo log is one allocated but unwritten extent: until InnoDB has written all of
        # it once, each durable commit's fdatasync also commits ext4's journal (the extent changes
        # to written). Measured here: 107 against 77 us per fdatasync on a quiet disk, 254 against
        # 87 us on a busy one. Rewritten in place with its own bytes (zeros past the header), it is
        # the log of a server that has run a while.
        dd if="$dir/data/ib_logfile0" of="$dir/data/ib_logfile0" bs=1M conv=notrunc,fsync status=none
    fi
    pidfile_alive "$dir/mariadb.pid" && return 0
    mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/mysql.sock" --skip-networking \
        --pid-file="$dir/mariadb.pid" --log-error="$dir/mariadb.log" --user="$user" \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
        --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=1 --max-connections=500 \
        ${MARIADB_SERVER_OPTIONS:-} >/dev/null 2>&1 &
    for _ in $(seq 300); do
        mariadb-admin --no-defaults --socket="$dir/mysql.sock" -uroot ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$dir/mariadb.log" >&2
    die "MariaDB did not start"
}

# A three-node MariaDB Galera cluster on loopback, for 50_galera.sh and scripts/bench's cluster
# runs. Each node has DIR/nodeN (data, mysql.sock, mariadb.pid, mariadb.log) and listens for SQL on
# 127.0.0.1:$(cat DIR/nodeN/port). The nodes run as the mysql user: rsync state transfer into a
# joiner fails for root-owned data directories.
#   galera_init DIR            allocates the ports and installs the three data directories
#   galera_start_node DIR N    starts node N (node 1 bootstraps the cluster when no node runs)
#   galera_wait DIR N SIZE     waits until node N is ready in a cluster of SIZE nodes
#   galera_sql DIR N SQL       runs SQL as root on node N
#   galera_start_cluster DIR   all of it: installs, starts the three nodes, waits until all are ready
galera_init() {
    local dir=$1 n
    mkdir -p "$dir"
    dir=$(realpath "$dir")
    chmod 755 "$dir"
    for n in 1 2 3; do
        mkdir -p "$dir/node$n"
        for kind in port gcomm ist sst; do free_port >"$dir/node$n/$kind"; done
        chown -R mysql:mysql "$dir/node$n"
        mariadb-install-db --no-defaults --datadir="$dir/node$n/data" --user=mysql \
            --auth-root-authentication-method=socket --skip-test-db >"$dir/node$n/install.log" 2>&1 \
            || { cat "$dir/node$n/install.log" >&2; die "mariadb-install-db failed for node $n"; }
    done
}
galera_start_node() {
    local dir n peers="" bootstrap="" i options
    dir=$(realpath "$1")
    n=$2
    for i in 1 2 3; do peers="$peers${peers:+,}127.0.0.1:$(cat "$dir/node$i/gcomm")"; done
    # The documented provider options (deploy/galera/galera.cnf), or GALERA_PROVIDER_OPTIONS
    # (Galera's defaults: "gcache.size=64M" alone) to measure another choice.
    options=${GALERA_PROVIDER_OPTIONS:-$(sed -n 's/^wsrep_provider_options = "\(.*\)"$/\1/p' "$SIWA_ROOT/deploy/galera/galera.cnf")}
    [ -n "$options" ] || die "no wsrep_provider_options in deploy/galera/galera.cnf"
    # The first node starts a new cluster, unless another node runs (then it rejoins).
    if [ "$n" = 1 ] && ! pidfile_alive "$dir/node2/mariadb.pid" && ! pidfile_alive "$dir/node3/mariadb.pid"; then
        bootstrap=--wsrep-new-cluster
    fi
    local args=(--no-defaults --datadir="$dir/node$n/data" --socket="$dir/node$n/mysql.sock"
        --port="$(cat "$dir/node$n/port")" --bind-address=127.0.0.1 --pid-file="$dir/node$n/mariadb.pid"
        --user=mysql --character-set-server=utf8mb4
        --collation-server=utf8mb4_unicode_ci --innodb-buffer-pool-size=128M --max-connections=500
        --binlog-format=ROW --default-storage-engine=InnoDB --innodb-autoinc-lock-mode=2
        --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so --wsrep-cluster-name=siwa
        --wsrep-cluster-address="gcomm://$peers" --wsrep-node-address="127.0.0.1:$(cat "$dir/node$n/gcomm")"
        --wsrep-provider-options="$options;gmcast.listen_addr=tcp://127.0.0.1:$(cat "$dir/node$n/gcomm");ist.recv_addr=127.0.0.1:$(cat "$dir/node$n/ist")"
        --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$(cat "$dir/node$n/sst")")
    # A node that was killed left no position in grastate.dat (seqno -1): without one it would ask
    # for a whole copy of the data (rsync, which locks the donor's writes for seconds). As the
    # packaged service does (galera_recovery), the position is read from InnoDB first
    # (--wsrep-recover), so that the node asks only for what it missed (IST).
    local position=""
    if grep -q '^seqno: *-1' "$dir/node$n/data/grastate.dat" 2>/dev/null; then
        mariadbd "${args[@]}" --log-error="$dir/node$n/recover.log" --wsrep-recover >/dev/null 2>&1 || true
        position=$(sed -n 's/.*WSREP: Recovered position: \([0-9a-f-]*:[0-9-]*\).*/\1/p' "$dir/node$n/recover.log" | tail -1)
        rm -f "$dir/node$n/recover.log"
    fi
    # In a subshell, so that the caller's shell does not report the node's end (50_galera kills one).
    (mariadbd "${args[@]}" --log-error="$dir/node$n/mariadb.log" ${position:+--wsrep-start-position="$position"} \
        $bootstrap >/dev/null 2>&1 &)
}
galera_start_cluster() {
    local n
    galera_init "$1"
    galera_start_node "$1" 1
    galera_wait "$1" 1 1
    galera_start_node "$1" 2
    galera_start_node "$1" 3
    for n in 1 2 3; do galera_wait "$1" "$n" 3; done
}
galera_sql() { mariadb --no-defaults --socket="$1/node$2/mysql.sock" -uroot -N -B -e "$3"; }
galera_wait() {
    local dir=$1 n=$2 size=$3 state
    for _ in $(seq 600); do
        state=$(galera_sql "$dir" "$n" "SELECT CONCAT(MAX(IF(VARIABLE_NAME = 'WSREP_READY', VARIABLE_VALUE, '')), ' ',
            MAX(IF(VARIABLE_NAME = 'WSREP_CLUSTER_SIZE', VARIABLE_VALUE, ''))) FROM information_schema.GLOBAL_STATUS
            WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_CLUSTER_SIZE')" 2>/dev/null || true)
        [ "$state" = "ON $size" ] && return 0
        sleep 0.1
    done
    tail -20 "$dir/node$n/mariadb.log" >&2
    die "Galera node $n did not become ready in a cluster of $size (last: $state)"
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
    # A certificate without the serverAuth extended key usage (made before it was added) is made
    # again: Apple's platforms refuse a server certificate without it when it is an app's anchor.
    [ -s "$dir/cert.pem" ] && ! openssl x509 -in "$dir/cert.pem" -noout -ext extendedKeyUsage 2>/dev/null | grep -q "Server Authentication" \
        && rm -f "$dir/cert.pem" "$dir/key.pem"
    [ -s "$dir/cert.pem" ] && [ -s "$dir/key.pem" ] && return 0
    mkdir -p "$dir"
    (umask 077; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "extendedKeyUsage=serverAuth" \
        -addext "keyUsage=critical,digitalSignature,keyCertSign" \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null) || die "openssl req failed"
}

# Prepares the Apple ID emulator for a local stack in DIR and points siwa at it: a P-256 team key
# as Apple's .p8 would be, an admin secret, the emulator's configuration (clients com.example.siwa
# and com.example.siwa.web returning to https://localhost:SIWA_PORT/auth/callback, the apps'
# Services ID com.example.siwa.app returning to the example single-page app and to the app
# callbacks of an example Flutter app and an App Link, and
# com.example.other and com.example.moving, which siwa does not accept, for tests; a second team
# TEAMID0002 to transfer clients to), notifications to /webhook/apple), an nginx server on
# EMULATOR_PORT for it, and the SIWA_APPLE_* lines. With OTHER_PORT and UNLISTED_PORT, the example
# single-page app is also served from two other origins, as a web app on another site would be:
# https://localhost:OTHER_PORT, listed in SIWA_CORS_ORIGINS and a redirect URI of the app flow's
# client `web`, and https://localhost:UNLISTED_PORT, listed nowhere:
# apple_emulator DIR EMULATOR_PORT SIWA_PORT CERT_DIR HTTP_EXTRA_CONF ENV_FILE [OTHER_PORT UNLISTED_PORT]
apple_emulator() {
    local dir=$1 port=$2 siwa_port=$3 certs=$4 extra=$5 env_file=$6 other_port=${7:-} unlisted_port=${8:-}
    local other_client="" cors_line=""
    mkdir -p "$dir"
    [ -s "$dir/apple_key.p8" ] || (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -out "$dir/apple_key.p8" 2>/dev/null) || die "openssl genpkey failed"
    # A second team's key, for team transfers (otherTeams below).
    [ -s "$dir/apple_key_b.p8" ] || (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -out "$dir/apple_key_b.p8" 2>/dev/null) || die "openssl genpkey failed"
    [ -s "$dir/admin_secret" ] || (umask 077; openssl rand -hex 24 >"$dir/admin_secret")
    cat >"$dir/emulator.json" <<JSON
{"socket": "$dir/emulator.sock", "stateFile": "$dir/state.json",
 "teamId": "TEAMID0001", "keyId": "KEYID00001", "teamKeyFile": "$dir/apple_key.p8",
 "clients": [{"id": "com.example.siwa"},
             {"id": "com.example.siwa.web", "redirectURIs": ["https://localhost:$siwa_port/auth/callback"]},
             {"id": "com.example.siwa.app", "redirectURIs": ["https://localhost:$siwa_port/example/spa/",
                 "https://localhost:$siwa_port/auth/app-callback/flutter", "https://localhost:$siwa_port/auth/app-callback/links"]},
             {"id": "com.example.other"}, {"id": "com.example.moving"}],
 "otherTeams": [{"teamId": "TEAMID0002", "keyId": "KEYID00002", "teamKeyFile": "$dir/apple_key_b.p8"}],
 "adminSecretFile": "$dir/admin_secret", "notificationURL": "https://localhost:$siwa_port/webhook/apple",
 "caFile": "$certs/cert.pem", "threads": 32}
JSON
    cat >"$extra" <<CONF
# The Apple ID emulator, on its own TLS port, as appleid.apple.com would be.
server {
    listen 127.0.0.1:$port ssl;
    server_name localhost;
    ssl_certificate $certs/cert.pem;
    ssl_certificate_key $certs/key.pem;
    client_max_body_size 64k;
    location / {
        include /etc/nginx/fastcgi_params;
        fastcgi_pass unix:$dir/emulator.sock;
    }
}
CONF
    if [ -n "$other_port" ]; then
        other_client=",web=https://localhost:$other_port/example/spa/"
        cors_line="SIWA_CORS_ORIGINS=https://localhost:$other_port"
        # The same page and siwa.js, with siwa at SIWA_PORT (`server`), from the other origins.
        cat >>"$extra" <<CONF
# The example single-page app on two other origins, calling siwa at https://localhost:$siwa_port.
server {
    listen 127.0.0.1:$other_port ssl;
    listen 127.0.0.1:$unlisted_port ssl;
    server_name localhost;
    ssl_certificate $certs/cert.pem;
    ssl_certificate_key $certs/key.pem;
    add_header X-Content-Type-Options "nosniff" always;
    add_header Referrer-Policy "no-referrer" always;
    add_header Content-Security-Policy "default-src 'self'; script-src 'self' https://localhost:$port; connect-src 'self' https://localhost:$siwa_port; frame-ancestors 'none'; base-uri 'none'" always;
    location = /example/spa/config.js {
        default_type application/javascript;
        add_header Cache-Control no-store always;
        return 200 'window.SPA_CONFIG = {"appleScript": "https://localhost:$port/appleauth/static/jsapi/appleid/1/en_US/appleid.auth.js", "clientId": "com.example.siwa.app", "appClientId": "web", "server": "https://localhost:$siwa_port"};';
    }
    location = /siwa.js { alias $SIWA_ROOT/public/siwa.js; }
    location = /app.css { alias $SIWA_ROOT/public/app.css; }
    location /example/spa/ { alias $SIWA_ROOT/examples/spa/; }
}
CONF
    fi
    # The example single-page app (examples/spa) on siwa's site, with Apple's script from the
    # emulator: its page may load scripts from there (and nothing else from anywhere else).
    cat >"$(dirname "$extra")/example-spa.conf" <<CONF
location = /example/spa/config.js {
    default_type application/javascript;
    add_header Cache-Control no-store always;
    return 200 'window.SPA_CONFIG = {"appleScript": "https://localhost:$port/appleauth/static/jsapi/appleid/1/en_US/appleid.auth.js", "clientId": "com.example.siwa.app", "appClientId": "web"};';
}
location /example/spa/ {
    alias $SIWA_ROOT/examples/spa/;
    add_header Strict-Transport-Security "max-age=31536000; includeSubDomains" always;
    add_header X-Content-Type-Options "nosniff" always;
    add_header Referrer-Policy "no-referrer" always;
    add_header Content-Security-Policy "default-src 'self'; script-src 'self' https://localhost:$port; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'" always;
}
CONF
    cat >>"$env_file" <<ENV
SIWA_APPLE_TEAM_ID=TEAMID0001
SIWA_APPLE_KEY_ID=KEYID00001
SIWA_APPLE_PRIVATE_KEY_FILE=$dir/apple_key.p8
SIWA_APPLE_BUNDLE_IDS=com.example.siwa
SIWA_APPLE_SERVICES_ID=com.example.siwa.web
SIWA_APPLE_REDIRECT_URIS=com.example.siwa.app=https://localhost:$siwa_port/example/spa/,com.example.siwa.app=https://localhost:$siwa_port/auth/app-callback/flutter,com.example.siwa.app=https://localhost:$siwa_port/auth/app-callback/links
SIWA_APPLE_APP_CALLBACKS=flutter=intent:com.example.siwa.flutter,links=https://app.example.com/apple?from=siwa,desktop=com.example.siwa:/apple
SIWA_APP_CLIENTS=web=https://localhost:$siwa_port/example/spa/$other_client,desktop=http://127.0.0.1/callback,desktop=com.example.siwa.desktop:/apple,cli=http://[::1]/done
$cors_line
SIWA_APPLE_BASE_URL=https://localhost:$port
SIWA_APPLE_CA_FILE=$certs/cert.pem
ENV
}

# Creates the app's own secrets once in DIR (an access-token signing key, the data key that encrypts
# Apple's refresh tokens, a link secret for an older backend) and writes the session lines, with
# guest accounts on and the account page of an example app that syncs progress:
# session_keys DIR PUBLIC_URL ENV_FILE
session_keys() {
    local dir=$1 url=$2 env_file=$3
    mkdir -p "$dir/access_keys"
    chmod 700 "$dir" "$dir/access_keys"
    if ! ls "$dir/access_keys"/*.pem >/dev/null 2>&1; then
        (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
            -out "$dir/access_keys/$(date -u +%Y%m%dT%H%M%SZ).pem" 2>/dev/null) || die "openssl genpkey failed"
    fi
    [ -s "$dir/data_keys" ] || (umask 077; echo "k1 $(openssl rand -base64 32)" >"$dir/data_keys")
    [ -s "$dir/link_secret" ] || (umask 077; openssl rand -hex 32 >"$dir/link_secret")
    cat >>"$env_file" <<ENV
SIWA_GUEST_ACCOUNTS=true
SIWA_LINK_SECRET_FILE=$dir/link_secret
SIWA_PUBLIC_URL=$url
SIWA_ACCESS_KEYS_DIR=$dir/access_keys
SIWA_DATA_KEYS_FILE=$dir/data_keys
SIWA_APP_NAME="Example Lessons"
SIWA_PAGE_PROGRESS=true
ENV
}

# Starts the Apple ID emulator in the background: start_emulator BINARY CONFIG LOG_FILE PID_FILE
start_emulator() {
    local binary=$1 config=$2 log_file=$3 pid_file=$4 socket
    socket=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["socket"])' "$config")
    rm -f "$socket"
    "$binary" --config "$config" >>"$log_file" 2>&1 &
    echo $! >"$pid_file"
    wait_for_socket "$socket" "$pid_file" "$log_file" appleid-emulator
}

# Waits until SOCKET exists, or dies with the end of LOG_FILE when the process of PID_FILE ends or
# 10 s pass: wait_for_socket SOCKET PID_FILE LOG_FILE NAME
wait_for_socket() {
    local socket=$1 pid_file=$2 log_file=$3 name=$4
    for _ in $(seq 100); do
        [ -S "$socket" ] && return 0
        kill -0 "$(cat "$pid_file")" 2>/dev/null || break
        sleep 0.1
    done
    tail -20 "$log_file" >&2
    die "$name did not start"
}

# Writes an nginx configuration from nginx/dev.conf.template; EXTRA_CONF is included in the siwa
# server, HTTP_EXTRA_CONF (other servers) in the http block; NGINX_LOCATIONS_FILE, when set, instead
# of nginx/siwa-locations.conf; NGINX_UNLIMITED, addresses (space-separated) that no request limit
# counts (a benchmark's load generator):
# render_nginx PREFIX HTTPS_PORT SOCKET CERT_DIR AUTH_RATE [EXTRA_CONF [HTTP_EXTRA_CONF]]
render_nginx() {
    local prefix=$1 port=$2 socket=$3 certs=$4 rate=$5 extra=${6:-} http_extra=${7:-}
    mkdir -p "$prefix"
    [ -n "$extra" ] || { extra=$prefix/extra.conf; : >"$extra"; }
    [ -n "$http_extra" ] || { http_extra=$prefix/http-extra.conf; : >"$http_extra"; }
    local user_line="" unlimited="" address
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    for address in ${NGINX_UNLIMITED:-}; do unlimited="$unlimited $address 1;"; done
    sed -e "s|@USER_LINE@|$user_line|" -e "s|@PREFIX@|$prefix|g" -e "s|@HTTPS_PORT@|$port|g" \
        -e "s|@SOCKET@|$socket|g" -e "s|@CERT@|$certs/cert.pem|" -e "s|@KEY@|$certs/key.pem|" \
        -e "s|@AUTH_RATE@|$rate|" -e "s|@UNLIMITED@|$unlimited|" -e "s|@PUBLIC@|$SIWA_ROOT/public|" -e "s|@DOCS@|$SIWA_ROOT/docs|" -e "s|@PROTECT@|$SIWA_ROOT/nginx/siwa-protect.conf|" \
        -e "s|@LOCATIONS@|${NGINX_LOCATIONS_FILE:-$SIWA_ROOT/nginx/siwa-locations.conf}|" -e "s|@EXTRA@|$extra|" -e "s|@HTTP_EXTRA@|$http_extra|" \
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
    # The subshell is the background job and becomes siwa (exec), so the pid file names siwa.
    (clear_siwa_variables; set -a; . "$env_file"; set +a; exec "$binary" serve) >>"$log_file" 2>&1 &
    echo $! >"$pid_file"
    socket=$(sed -n 's/^SIWA_SOCKET_PATH=//p' "$env_file")
    wait_for_socket "$socket" "$pid_file" "$log_file" siwa
}

# Runs a siwa subcommand with the SIWA_* lines of ENV_FILE: siwa_with_env BINARY ENV_FILE ARGS...
siwa_with_env() {
    local binary=$1 env_file=$2
    shift 2
    (clear_siwa_variables; set -a; . "$env_file"; set +a; exec "$binary" "$@")
}

# Unsets the scripts' own settings (SIWA_RUN_PORT, SIWA_RUN_EMULATOR_PORT, ...), which siwa would
# refuse as unknown keys; another SIWA_* variable exported on purpose still reaches siwa.
clear_siwa_variables() {
    local name
    for name in $(compgen -e); do
        case $name in SIWA_RUN_*) unset "$name" ;; esac
    done
}
