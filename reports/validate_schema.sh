#!/bin/sh
# validate_schema.sh NPM_PREFIX REPORT.json...: validates mutation reports against the JSON
# schema of the npm package mutation-testing-report-schema, with ajv. Exits 77 when node is absent.
set -eu
command -v node >/dev/null 2>&1 || { echo "node is not installed: skipped"; exit 77; }
exec node "$(dirname "$0")/validate_schema.cjs" "$@"
