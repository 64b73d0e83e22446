#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: `unilab doctor` with NVML, the tests that need CUDA or
# NVML (`bin/unilab test` skips them where there is no GPU), then the transport and
# perception benchmarks on the device, then data-parallel training with one rank per GPU
# (NCCL; one rank where there is one GPU).
#   scripts/gpu_checks.sh [OUT_DIR]
# writes OUT_DIR/doctor.json, gpu_tests.log, bench_transport.json, bench_perception.json,
# ranks_nccl.log and the run ranks_nccl/.
# torch must be a CUDA build here (requirements.txt pins the CPU build); the doctor's
# torch_cuda check says so when it is not. cupy (requirements-gpu.txt) is installed when
# missing: from PyPI, or from wheels in $UNILAB_WHEELS on a machine without a network.
# Exit status: the worst of the doctor's (1: a check failed), the tests' and the benches'.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="$(mkdir -p "${1:-$ROOT}" && cd "${1:-$ROOT}" && pwd)"
cd "$ROOT"
PY="${UNILAB_VENV:-$ROOT/.venv}/bin/python"
[ -x "$PY" ] || PY=python3
if ! "$PY" -c 'import cupy' 2>/dev/null; then
  if [ -n "${UNILAB_WHEELS:-}" ]; then
    "$PY" -m pip install -q --no-index --find-links "$UNILAB_WHEELS" -r requirements-gpu.txt
  else
    "$PY" -m pip install -q -r requirements-gpu.txt
  fi || echo "gpu_checks: cupy could not be installed: the CUDA IPC and k-d tree tests skip"
fi
worst=0
note() { local rc=$1; (( rc > worst )) && worst=$rc; }
bin/unilab doctor
bin/unilab doctor --json > "$OUT_DIR/doctor.json"; note $?
bin/unilab test -k 'cuda or nvml or gpu' > "$OUT_DIR/gpu_tests.log" 2>&1; note $?
tail -n 25 "$OUT_DIR/gpu_tests.log"
bin/unilab bench transport --json "$OUT_DIR/bench_transport.json" \
  --png "$OUT_DIR/transport_latency.png"; note $?
bin/unilab bench perception --json "$OUT_DIR/bench_perception.json"; note $?
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$NGPU" -ge 1 ]; then
  rm -rf "$OUT_DIR/ranks_nccl"
  bin/unilab train --direct --nproc-per-node "$NGPU" --device cuda --steps 262144 \
    --run-dir "$OUT_DIR/ranks_nccl" --no-progress > "$OUT_DIR/ranks_nccl.log" 2>&1; note $?
  tail -n 12 "$OUT_DIR/ranks_nccl.log"
fi
echo "gpu_checks: worst exit $worst (logs and figures in $OUT_DIR)"
exit $worst
