#!/usr/bin/env bash
# Our access tokens with a standard JWT library (PyJWT, pinned in requirements.txt), the way an
# app's own backend verifies them: see Tests/EndToEnd/jwt_libraries.py.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

TOOLS=$(python_tools)
out=$(cd "$(dirname "$0")" && "$TOOLS/python" jwt_libraries.py 2>&1) || fail "$out"
pass "$out"
