# Helpers for the checks that play Apple's part through the emulator's admin API and sign in to
# siwa. Sourced after assert.sh; E2E_APPLE_URL and E2E_APPLE_ADMIN_SECRET_FILE come from scripts/test.

ADMIN="Authorization: Bearer $(cat "$E2E_APPLE_ADMIN_SECRET_FILE")"
apple() { # apple METHOD PATH [curl args...]: sets APPLE_STATUS and APPLE_BODY
    local method=$1 path=$2
    shift 2
    APPLE_STATUS=$(curl -ks -X "$method" -o "$E2E_TMP/apple_body" -w '%{http_code}' "$@" "$E2E_APPLE_URL$path") || true
    APPLE_BODY=$(cat "$E2E_TMP/apple_body")
}
# json PATH: a member of the JSON on standard input, dotted (list indexes as numbers); objects as JSON.
json() { python3 -c 'import json,sys
v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[int(k)] if isinstance(v,list) else v.get(k)
print("" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1"; }
sql() { mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B siwa_e2e -e "$1"; }
siwa() { siwa_with_env "$E2E_BIN" "$E2E_ENV" "$@"; }
bearer() { echo "Authorization: Bearer $1"; }
# Every secret the checks see, for 41_logs_without_secrets.sh to look for in the logs.
SECRETS=$E2E_TMP/secrets_seen
remember() { printf '%s\n' "$@" >>"$SECRETS"; }

new_apple_user() { # new_apple_user EMAIL FIRST LAST: sets APPLE_USER
    apple POST /admin/users -H "$ADMIN" -d "{\"email\":\"$1\",\"firstName\":\"$2\",\"lastName\":\"$3\"}"
    [ "$APPLE_STATUS" = 201 ] || fail "emulator user: $APPLE_STATUS $APPLE_BODY"
    APPLE_USER=$(json id <<<"$APPLE_BODY")
    remember "$1"
}
apple_sign_in() { # apple_sign_in USER CLIENT NONCE [EXTRA_JSON]: sets TOKEN CODE SUB USER_JSON
    apple POST /admin/sign-in -H "$ADMIN" -d "{\"userId\":\"$1\",\"clientId\":\"$2\",\"nonce\":\"$3\"${4:+,$4}}"
    [ "$APPLE_STATUS" = 200 ] || fail "emulator sign-in: $APPLE_STATUS $APPLE_BODY"
    TOKEN=$(json identityToken <<<"$APPLE_BODY")
    CODE=$(json authorizationCode <<<"$APPLE_BODY")
    SUB=$(json sub <<<"$APPLE_BODY")
    USER_JSON=$(json user <<<"$APPLE_BODY")
    remember "$TOKEN" "$CODE" "$3"
}
sign_in() { # sign_in BODY_JSON: POST /auth/apple; sets ACCESS and REFRESH on 200
    request POST /auth/apple -H 'Content-Type: application/json' -d "$1"
    if [ "$STATUS" = 200 ]; then
        ACCESS=$(json accessToken <<<"$BODY")
        REFRESH=$(json refreshToken <<<"$BODY")
        remember "$ACCESS" "$REFRESH"
    fi
}

notify() { # notify TYPE APPLE_USER [EXTRA_JSON]: the emulator signs and delivers; sets JTI
    apple POST /admin/notifications -H "$ADMIN" -d "{\"type\":\"$1\",\"userId\":\"$2\"${3:+,$3}}"
    [ "$APPLE_STATUS" = 200 ] || fail "emulator notification: $APPLE_STATUS $APPLE_BODY"
    [ "$(json deliveredStatus <<<"$APPLE_BODY")" = 200 ] || fail "$1 was not answered 200: $APPLE_BODY"
    JTI=$(json jti <<<"$APPLE_BODY")
}
signed_in_user() { # signed_in_user NAME [EXTRA_JSON]: a new Apple user signed in to siwa; sets APPLE_USER USER_ID ACCESS REFRESH
    local nonce="nonce-$1-$RANDOM$RANDOM"
    new_apple_user "$1.notify@example.com" "$1" Tester
    apple_sign_in "$APPLE_USER" com.example.siwa "$nonce" "${2:-}"
    sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$nonce\"}"
    expect_status 200 "signing in $1"
    USER_ID=$(json user.id <<<"$BODY")
}
# browser_callback START_URL APPLE_USER [JAR]: a browser, as curl, that opens siwa's START_URL (the
# web's or an app's start; its cookies in JAR), consents at the emulator as APPLE_USER and posts
# Apple's answer to siwa's callback; sets COMPLETE, where the callback sent it.
browser_callback() {
    local jar=${3:-$E2E_TMP/browser_jar} location form fields
    rm -f "$jar"
    location=$(curl -ks -c "$jar" -o /dev/null -w '%header{location}' "$1")
    [[ "$location" == "$E2E_APPLE_URL/auth/authorize?"* ]] || fail "the start $1: $location"
    form=$(curl -ks -X POST --data "${location#*\?}&user_id=$2&email_choice=share&action=continue" "$E2E_APPLE_URL/auth/authorize")
    fields=$(python3 -c 'import html,re,sys,urllib.parse
pairs=re.findall(r"name=\"([^\"]+)\" value=\"([^\"]*)\"", sys.stdin.read())
print(urllib.parse.urlencode([(n, html.unescape(v)) for n, v in pairs]))' <<<"$form")
    grep -q 'id_token=' <<<"$fields" || fail "the emulator's form post: $form"
    COMPLETE=$(curl -ks -o /dev/null -w '%header{location}' -X POST --data "$fields" "$E2E_URL/auth/callback")
    [[ "$COMPLETE" == "$E2E_URL/auth/web/complete?handle="* ]] || fail "the callback's redirect: $COMPLETE"
}

# browser_sign_in START_URL APPLE_USER: browser_callback, then the completion with the start's
# cookie; sets BROWSER_LOCATION, where the completion sent the browser.
browser_sign_in() {
    browser_callback "$1" "$2"
    BROWSER_LOCATION=$(curl -ks -b "$E2E_TMP/browser_jar" -o /dev/null -w '%header{location}' "$COMPLETE")
}
