#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: `unilab doctor` with NVML, then the tests that need
# CUDA or NVML (`./unilab test` skips them where there is no GPU).
#   scripts/gpu_checks.sh [OUT_DIR]    writes OUT_DIR/doctor.json and OUT_DIR/gpu_tests.log
# torch must be a CUDA build here (requirements.txt pins the CPU build); the doctor's
# torch_cuda check says so when it is not. Exit status: the worse of the doctor's
# (1: a check failed) and the tests'.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="$(mkdir -p "${1:-$ROOT}" && cd "${1:-$ROOT}" && pwd)"
cd "$ROOT"
./unilab doctor
./unilab doctor --json > "$OUT_DIR/doctor.json"
doctor_rc=$?
./unilab test -k 'cuda or nvml' > "$OUT_DIR/gpu_tests.log" 2>&1
test_rc=$?
tail -n 25 "$OUT_DIR/gpu_tests.log"
echo "gpu_checks: doctor exit $doctor_rc, tests exit $test_rc (log: $OUT_DIR/gpu_tests.log)"
exit $(( doctor_rc > test_rc ? doctor_rc : test_rc ))
