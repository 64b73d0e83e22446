#!/usr/bin/env bash
# Re-measure the benchmarks behind the figures README.md and docs/ quote, each into its JSON
# under docs/bench (and its picture under docs/img where the docs show one), then regenerate
# the generated tables (scripts/figures.py). Run it from a checkout of the code to be
# measured, on a quiet machine, after `bin/unilab tasks` (set-up) and
# `pip install -r requirements-bench.txt` (SB3 and Open3D for the `train` / `perception`
# baselines):
#
#   scripts/benches.sh               # the hour: every bench that fits an hour on 2 cores
#   scripts/benches.sh learn         # the learning benches README.md quotes (about 45 min)
#   scripts/benches.sh go2           # the Go2 beside rsl_rl (about 1.5 h: two 5 M-step runs)
#   scripts/benches.sh gae bridge    # only these (names as in CMD below)
#
# Not here (hours each on 2 cores): the gymnasium tasks against SB3, sim2real, transfer,
# adapt, factory, the 16-robot stress run; docs/benchmarks.md says which code each ran on
# (`python3 scripts/figures.py --stale`). A bench that fails is reported and the others
# still run; the exit status is the number of failures.
set -uo pipefail
cd "$(dirname "$0")/.."
B=docs/bench
I=docs/img
declare -A CMD=(
  [gae]="bench gae --json $B/gae.json"
  [bridge]="bench bridge --json $B/bridge.json"
  [transport]="bench transport --json $B/transport.json --png $I/transport_latency.png"
  [safety]="bench safety --json $B/safety.json --png $I/safety_latency.png"
  [perception]="bench perception --json $B/perception.json"
  [graph]="bench graph --json $B/graph.json"
  [graph_256]="bench graph --num-envs 256 --json $B/graph_256.json"
  [graph_quad12]="bench graph --task quad12_walk --json $B/graph_quad12.json"
  [graph_humanoid]="bench graph --task Humanoid-v5 --json $B/graph_humanoid.json"
  [graph_humanoid_1]="bench graph --task Humanoid-v5 --num-envs 1 --steps 1000 --json $B/graph_humanoid_1.json"
  [scale]="bench scale --json $B/scale.json --png $I/scaling.png"
  [train]="bench train --task Hopper-v5 --steps 100000 --json $B/train_hopper.json"
  [stress]="bench stress --robots 4 --duration 60 --json $B/stress_4.json"
  [robot]="bench robot --robot ur5e --json $B/robot_ur5e.json"
  [deploy]="bench deploy --steps 5000 --json $B/deploy_quiet.json"
  [learn_arm6]="bench learn --subset arm6 --seeds 0,1,2 --json $B/learn_arm6.json --png $I/learn_arm6.png"
  [rsl_rl_arm6]="bench learn --peer rsl_rl --subset arm6 --seeds 0,1,2 --json $B/learn_rsl_rl_arm6.json"
  [rsl_rl_quad]="bench learn --peer rsl_rl --subset quad --seeds 0 --json $B/learn_rsl_rl_quad.json"
  [rsl_rl_go2]="bench learn --peer rsl_rl --subset go2 --seeds 0 --run-root runs/bench-go2 --json $B/learn_rsl_rl_go2.json"
  [learn_go2]="bench learn --subset go2 --seeds 0 --run-root runs/bench-go2 --json $B/learn_go2.json --png $I/learn_go2.png"
)
HOUR=(bridge deploy safety robot gae transport graph graph_256 graph_quad12 graph_humanoid
      graph_humanoid_1 scale perception train stress)
LEARN=(learn_arm6 rsl_rl_arm6 rsl_rl_quad)
# The Go2 (docs/go2.md): ours and rsl_rl's trained side by side first (about 45 min each on
# 2 cores), then scored; learn_go2 scores the run rsl_rl_go2 trained (one --run-root).
GO2=(rsl_rl_go2 learn_go2)
case "${1:-}" in
  "") ORDER=("${HOUR[@]}") ;;
  learn) ORDER=("${LEARN[@]}") ;;
  go2) ORDER=("${GO2[@]}") ;;
  *) ORDER=("$@") ;;
esac
# The baselines some benches measure beside ours (requirements-bench.txt). Without one a
# bench still writes its JSON, without the side-by-side figure: refuse that here.
declare -A NEEDS=([perception]=open3d [bridge]=envpool [train]=stable_baselines3)
failed=0
mkdir -p log
bin/unilab tasks > /dev/null   # the venv the benches run in
for name in "${ORDER[@]}"; do
  if [ -z "${CMD[$name]:-}" ]; then
    echo "benches: unknown bench '$name' (known: ${!CMD[*]})" >&2
    exit 2
  fi
  module=${NEEDS[$name]:-}
  if [ -n "$module" ] && ! why=$("${UNILAB_VENV:-.venv}/bin/python" -c "import $module" 2>&1); then
    echo "benches: $name FAILED: its baseline '$module' does not import ($(tail -n 1 <<< "$why")):" \
         "pip install -r requirements-bench.txt (Open3D also needs libusb-1.0:" \
         "apt-get install libusb-1.0-0)" >&2
    failed=$((failed + 1))
    continue
  fi
  start=$(date +%s)
  echo "benches: $name: bin/unilab ${CMD[$name]}" >&2
  json=$(sed -E 's/.*--json ([^ ]+).*/\1/' <<< "${CMD[$name]}")
  # shellcheck disable=SC2086  # the command line is split on purpose
  bin/unilab ${CMD[$name]} > "log/bench_$name.out" 2>&1
  rc=$?
  # stress exits 1 when a seed threshold is exceeded (its JSON says which): the figure
  # is still measured. A bench failed when its JSON was not written by this run.
  if [ ! -f "$json" ] || [ "$(stat -c %Y "$json")" -lt "$start" ]; then
    echo "benches: $name FAILED, exit $rc, no JSON (log/bench_$name.out)" >&2
    failed=$((failed + 1))
  fi
  echo "benches: $name took $(( $(date +%s) - start )) s" >&2
done
python3 scripts/figures.py
exit "$failed"
