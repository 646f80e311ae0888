#!/usr/bin/env bash
# chromium.sh — Debian's Chromium, for the browser test of `simulate --report`.
#
# Prints the path of the chromium binary on stdout. When it is absent and
# this user may install system packages (root, or sudo without a password),
# it runs apt-get install chromium (no recommends: a headless browser needs
# none of them). Otherwise it says how to install it and exits 3, which the
# Makefile's report-test turns into a skip (a failure under CI=true).
# Nothing is cached outside the system's packages.
#
#   scripts/chromium.sh        # /usr/bin/chromium
set -euo pipefail
PACKAGE=chromium

find_chromium() {
  local c
  for c in chromium /usr/bin/chromium; do
    if command -v "$c" >/dev/null 2>&1; then command -v "$c"; return 0; fi
  done
  return 1
}

if path=$(find_chromium); then
  echo "$path"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "chromium.sh: Chromium is not installed and this user cannot install it (not root, no password-less sudo);" >&2
    echo "chromium.sh: install it with: sudo apt-get install --no-install-recommends $PACKAGE" >&2
    exit 3
  fi
fi

echo "chromium.sh: apt-get install $PACKAGE (Debian's Chromium, about 100 MB)" >&2
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$PACKAGE" >/dev/null
path=$(find_chromium) || { echo "chromium.sh: apt-get installed $PACKAGE but no chromium binary is on PATH" >&2; exit 1; }
echo "$path"
