#!/usr/bin/env bash
# The hook's GPU checks in one run (under 8 minutes on one to eight GPUs):
#   1. the lowbit kernels' CPU-vs-CUDA bit-exactness (python/tests, the
#      tests that need CUDA);
#   2. the DDP hook and FSDP2 on NCCL, one process per GPU, against the
#      virtual workers on the CPU, bit for bit (one GPU: the virtual workers
#      on the GPU against the CPU);
#   3. ResNet-18 step time: allreduce_hook, PowerSGD, G-Binary, layer-aware,
#      no communication.
# Usage: python/benchmarks/device_check.sh [--dry-run] [OUT_DIR]
#   --dry-run: the same script on the CPU (gloo, 2 ranks, tiny images), what
#   CI runs so the script cannot rot on machines without a GPU.
# Results: OUT_DIR/device_check.json (default ./device-check), and the
# printed lines. Exit 1 if a check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
out=${1:-device-check}
mkdir -p "$out"
py=${PYTHON:-python3}
start=$(date +%s)
if [ "$dry" = 0 ] && ! "$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
  echo "skipped: no CUDA device on this machine (run with --dry-run for the CPU version)"; exit 0
fi
# The package as the docs install it, into a scratch target.
target=$(mktemp -d); trap 'rm -rf "$target"' EXIT
"$py" -m pip install --quiet --no-deps --no-compile --target "$target" ./python
export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}"
if [ "$dry" = 1 ]; then
  echo "== dry run: CPU, gloo, 2 ranks"
  timeout 420 "$py" python/benchmarks/device_check.py --device cpu --ranks 2 --steps 2 --batch 2 --image 8 \
    --json "$out/device_check.json"
else
  echo "== 1. CPU vs CUDA kernels (pytest -k cuda)"
  (cd "$target" && timeout 120 "$py" -m pytest -q -rs -p no:cacheprovider -k "cuda" "$OLDPWD/python/tests/test_lowbit.py")
  echo "== 2-3. NCCL hook and FSDP2 against the virtual workers; step time"
  timeout 300 "$py" python/benchmarks/device_check.py --device cuda --json "$out/device_check.json"
fi
echo "== done in $(( $(date +%s) - start )) s; $out/device_check.json"
