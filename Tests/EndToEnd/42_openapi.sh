#!/usr/bin/env bash
# docs/openapi.yaml against the running server through nginx: the document validates as OpenAPI 3.1
# and nginx serves it; schemathesis runs every operation (the document's examples, the coverage of
# each schema's edges, generated cases, and the stateful sequences along the document's links) with a
# real access token (Tests/EndToEnd/schemathesis_hooks.py): no 5xx, and every status, content type,
# header and body as documented. Requests stay under nginx's rate limit of /auth/.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

TOOLS=$(python_tools)
"$TOOLS/openapi-spec-validator" "$SIWA_ROOT/docs/openapi.yaml" >/dev/null || fail "docs/openapi.yaml is not valid OpenAPI 3.1"
request GET /openapi.yaml
expect_status 200 "the document through nginx"
cmp -s "$E2E_TMP/body" "$SIWA_ROOT/docs/openapi.yaml" || fail "nginx serves another document"
pass "docs/openapi.yaml validates as OpenAPI 3.1 and nginx serves it at /openapi.yaml"

report=$E2E_TMP/schemathesis
status=0
(cd "$(dirname "$0")" && SCHEMATHESIS_HOOKS=schemathesis_hooks "$TOOLS/schemathesis" --config-file schemathesis.toml run "$SIWA_ROOT/docs/openapi.yaml" \
    --url "$E2E_URL" --tls-verify false --workers 1 --rate-limit 40/s --max-time "${SIWA_TEST_SCHEMATHESIS_SECONDS:-28}" \
    --phases examples,coverage,fuzzing,stateful --suppress-health-check all --no-color >"$report.txt" 2>&1) || status=$?
sed -n '/Examples (in/,$p' "$report.txt" | grep -v '^ *$' | sed 's/^/    /'
[ "$status" -eq 0 ] || { tail -80 "$report.txt"; fail "schemathesis found failures (report: $report.txt)"; }
pass "schemathesis: every operation of docs/openapi.yaml as documented, no server error"

(cd "$(dirname "$0")" && "$TOOLS/python" openapi_examples.py "$SIWA_ROOT/docs/openapi.yaml" ${SIWA_TEST_PRINT_EXAMPLES:+--print}) >"$report.examples" 2>&1 \
    || { cat "$report.examples"; fail "docs/openapi.yaml's examples differ from real answers"; }
[ -z "${SIWA_TEST_PRINT_EXAMPLES:-}" ] || cat "$report.examples"
pass "$(tail -1 "$report.examples")"
