#!/usr/bin/env bash
# An optional component that cannot be built is skipped with a printed
# reason, and everything else still builds and runs.
# usage: optional_driver.sh SOURCE_ROOT
set -euo pipefail
src="$1"
dir=$(mktemp -d /tmp/fabricgen-optional-XXXXXX)
trap 'rm -rf "$dir" "$dir.log"' EXIT
meson setup "$dir" "$src" -Ddisable_drivers=mlx5 -Dtests=disabled > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
grep -q "Message: drivers/mlx5: disabled, disabled by -Ddisable_drivers" "$dir.log" || {
  echo "FAIL: no reason printed for the skipped driver"; cat "$dir.log"; exit 1; }
rm -f "$dir.log"
ninja -C "$dir" app/fabricgen > /dev/null
"$dir/app/fabricgen" version | grep -q "^fabricgen "
echo "ok: drivers/mlx5 skipped with its reason; fabricgen builds and runs without it"
