#!/usr/bin/env bash
# Runs ours (nn.BenchmarkResNet18Step) and PyTorch's twin
# (torch_resnet18_step.py) back to back, ROUNDS times for each W, and
# prints for each round images/s of both, the ratio ours/torch, and the
# CPU seconds (user+sys) each process used, warm-up step and start-up
# included, with their ratio torch/ours (the per-core comparison when other
# work shares the cores). Only same-round ratios mean anything on a shared
# machine.
#
#   bench/peers/resnet18_compare.sh [ROUNDS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
steps=${2:-2}
bin=$(mktemp -d)/nn.test
go test -c -o "$bin" ./nn
cpu() { awk '/^cpu / { print $2 + $3 }' "$1"; }
for w in 1 8; do
  for r in $(seq "$rounds"); do
    ours=$(/usr/bin/time -f "cpu %U %S" -o "$bin.ours" "$bin" -test.run '^$' -test.bench "ResNet18Step/W=$w\$" -test.benchtime "${steps}x" |
      awk '/images\/s/ { for (i = 1; i < NF; i++) if ($(i+1) == "images/s") print $i }')
    torch=$(/usr/bin/time -f "cpu %U %S" -o "$bin.torch" /usr/bin/python3 bench/peers/torch_resnet18_step.py "$steps" "$w" |
      sed -n 's/.* \([0-9.]*\) images\/s.*/\1/p')
    awk -v w="$w" -v r="$r" -v a="$ours" -v b="$torch" -v ca="$(cpu "$bin.ours")" -v cb="$(cpu "$bin.torch")" 'BEGIN {
      printf "W=%s round %s: ours %.2f images/s, torch %.2f images/s, ours/torch %.2f; CPU s ours %.1f, torch %.1f, torch/ours %.2f\n",
        w, r, a, b, a / b, ca, cb, cb / ca }'
  done
done
