#!/usr/bin/env bash
# Runs `conan create` on the recipe in a private Conan home (default profile from
# `conan profile detect`), with no remote: the recipe needs nothing from the network.
# Exit 77 (a skip for CTest) when Conan is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v conan >/dev/null 2>&1; then
  echo "conan is not installed (pip install conan): skipping"
  exit 77
fi
export CONAN_HOME
CONAN_HOME=$(mktemp -d)
trap 'rm -rf "$CONAN_HOME" "$here/test_package/build" "$here/test_package/CMakeUserPresets.json"' EXIT
conan profile detect --exist-ok
conan create "$here" --build=missing -nr
