#!/usr/bin/env bash
# No public header outside lib/port includes a DPDK header (rte_*.h): DPDK
# types stay behind the port layer (and even it forward-declares instead).
# usage: public_headers_no_rte.sh SOURCE_ROOT
set -euo pipefail
cd "$1"
bad=$(grep -lE '#include\s*[<"]rte_' $(find lib drivers -name '*.h' -not -path '*/internal/*') || true)
if [ -n "$bad" ]; then
  echo "public headers including rte_*.h:"; echo "$bad"; exit 1
fi
echo "ok: $(find lib drivers -name '*.h' -not -path '*/internal/*' | wc -l) public headers, none includes rte_*.h"
