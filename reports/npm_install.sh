#!/bin/sh
# npm_install.sh PREFIX PACKAGE@VERSION...: installs the report's npm packages into PREFIX
# (a build folder), once: a package already there at its version is not fetched again.
# Exits 77 (skipped) when npm is absent.
set -eu
prefix=$1
shift
command -v npm >/dev/null 2>&1 || { echo "npm is not installed: skipped"; exit 77; }
missing=""
for spec in "$@"; do
  name=${spec%@*}
  version=${spec##*@}
  have=$(node -p "require('$prefix/node_modules/$name/package.json').version" 2>/dev/null || true)
  [ "$have" = "$version" ] || missing="$missing $spec"
done
if [ -z "$missing" ]; then
  echo "npm packages present in $prefix"
  exit 0
fi
mkdir -p "$prefix"
# shellcheck disable=SC2086
npm install --no-audit --no-fund --no-save --prefix "$prefix" $missing
