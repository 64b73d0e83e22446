#!/usr/bin/env bash
# On a machine with cores to spare (4 or more; no GPU needed): what the live view costs the
# control loop and training, the claim docs/view.md could not settle on a 2-core machine.
#   scripts/view_latency.sh [OUT_DIR]
# writes OUT_DIR/deploy_view.json (`bench deploy --view`: control p99 with and without
# `unilab view` / `--foxglove`, in alternated rounds; the claim: within 0.2 ms) and
# OUT_DIR/graph_view.json (`bench graph --view`: training's control rate with and without
# `unilab view --training`). CYCLES (default 6000, in 6 rounds: about 9 minutes at 50 Hz)
# sets `bench deploy`'s cycles per case; the graph bench takes about 5 minutes more.
# Exit status: the worst of the two benches'.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="$(mkdir -p "${1:-$ROOT}" && cd "${1:-$ROOT}" && pwd)"
cd "$ROOT"
echo "view_latency: $(nproc) cores"
worst=0
note() { local rc=$1; (( rc > worst )) && worst=$rc; }
bin/unilab bench deploy --view --steps "${CYCLES:-6000}" --json "$OUT_DIR/deploy_view.json"; note $?
bin/unilab bench graph --view --steps 1000 --json "$OUT_DIR/graph_view.json"; note $?
echo "view_latency: worst exit $worst (figures in $OUT_DIR)"
exit $worst
