#!/usr/bin/env bash
# Runs ours (nn.BenchmarkResNet18Step) and PyTorch's twin
# (torch_resnet18_step.py) back to back, ROUNDS times for each W, and
# prints images/s for both and the ratio ours/torch of each round. The
# machine may be shared: only same-round ratios mean anything.
#
#   bench/peers/resnet18_compare.sh [ROUNDS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
steps=${2:-2}
go test -c -o /tmp/nn-bench.test ./nn
for w in 1 8; do
  for r in $(seq "$rounds"); do
    ours=$(/tmp/nn-bench.test -test.run '^$' -test.bench "ResNet18Step/W=$w\$" -test.benchtime "${steps}x" |
      awk '/images\/s/ { for (i = 1; i < NF; i++) if ($(i+1) == "images/s") print $i }')
    torch=$(/usr/bin/python3 bench/peers/torch_resnet18_step.py "$steps" "$w" |
      sed -n 's/.* \([0-9.]*\) images\/s.*/\1/p')
    ratio=$(awk -v a="$ours" -v b="$torch" 'BEGIN { printf "%.2f", a / b }')
    echo "W=$w round $r: ours $ours images/s, torch $torch images/s, ours/torch $ratio"
  done
done
