#!/usr/bin/env bash
# From a fresh Debian 12 checkout to a Linux guest shell: install the
# dependencies, build, build the guest kit and boot the default guest.
# Run as root (it installs packages).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/install-deps.sh"
make -C "$here/.."
"$here/build-guest-kit.sh"
exec "$here/boot-guest.sh" "$@"
