# The SIWAKit test app (Tests/SIWAKitConsumer's siwakit-e2e, built by scripts/test as an app builds
# SIWAKit), for the checks that launch it: sourced after assert.sh; defines launch and kit.
KIT=${E2E_KIT:-}
[ -x "$KIT" ] || fail "siwakit-e2e is not built (run through scripts/test, which builds it): $KIT"
export E2E_CLIENT_ID=com.example.siwa
# URLSession on Linux trusts the system's CA bundle only. Each launch runs in its own mount
# namespace (unshare -rm works for root and, where user namespaces are allowed, for others) in
# which that bundle has the stack's self-signed certificate appended: TLS is verified for real
# and nothing on the machine changes.
SYSTEM_CA=/etc/ssl/certs/ca-certificates.crt
mkdir -p "$E2E_TMP/siwakit"
cat "$SYSTEM_CA" "$E2E_TMP/tls/cert.pem" >"$E2E_TMP/siwakit/ca.pem"
# launch DIR COMMAND [ARGS]: one launch of the app, its output and errors as they are.
launch() { unshare -rm sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$E2E_TMP/siwakit/ca.pem" "$SYSTEM_CA" "$KIT" "$@"; }
# kit DIR COMMAND [ARGS]: a launch that must succeed; its output.
kit() { launch "$@" 2>"$E2E_TMP/siwakit.err" || fail "siwakit-e2e $*: $(cat "$E2E_TMP/siwakit.err")"; }
