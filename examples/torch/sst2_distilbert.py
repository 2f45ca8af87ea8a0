#!/usr/bin/env python3
"""SST-2 fine-tuning of DistilBERT under NEURON-Fabric aggregation: the
paper's Sec. 8 SST-2 pilot ("all-G-Binary reaches 90.71%", 8 workers).

What it reproduces: the final dev accuracy of a policy (default
g-binary everywhere) with its measured traffic, beside the paper's figure
(labelled "paper"). Needs Hugging Face `transformers` (the pretrained
distilbert-base-uncased, downloaded by transformers on first use) and the
GLUE SST-2 files train.tsv and dev.tsv in --data-dir:

    python3 examples/torch/sst2_distilbert.py --data-dir glue/SST-2 --device cuda --policy g-binary
    torchrun --nproc-per-node 8 examples/torch/sst2_distilbert.py --data-dir glue/SST-2

With --synthetic it trains a small random-init transformer encoder
(torch.nn only, no transformers, no data) on synthetic token sequences:
what the tests run. Default groups: the model's last Linear ("classifier")
is the head. Time on one GPU: not measured (no GPU in the session that
wrote this); the script prints its wall time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import sys
import time
from typing import List, Optional, Tuple

import torch

import nfabric.torch as nt
from nfabric.policy import Policy

PAPER_ALL_GBINARY = 90.71  # the paper's SST-2/DistilBERT all-G-Binary accuracy (%)


class TinyEncoder(torch.nn.Module):
    """A small random-init transformer classifier (the synthetic stand-in)."""

    def __init__(self, vocab: int = 64, dim: int = 32, layers: int = 2, classes: int = 2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers)
        self.classifier = torch.nn.Linear(dim, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self.classifier(self.encoder(self.embed(input_ids)).mean(1))


def synthetic(n: int, seq: int, vocab: int, seed: int):
    """Label 1 when token 1 outnumbers token 2: learnable from the tokens."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(vocab, (n, seq), generator=g)
    y = ((x == 1).sum(1) > (x == 2).sum(1)).long()
    return {"input_ids": x, "attention_mask": torch.ones_like(x)}, y


def load_sst2(path: pathlib.Path, tokenizer, max_len: int):
    if not path.is_file():
        raise SystemExit(f"sst2_distilbert: {path} not found: put GLUE SST-2's train.tsv and dev.tsv in --data-dir")
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    enc = tokenizer([r["sentence"] for r in rows], padding="max_length", truncation=True, max_length=max_len,
                    return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}, \
        torch.tensor([int(r["label"]) for r in rows])


def logits(model: torch.nn.Module, batch) -> torch.Tensor:
    out = model(**batch)
    return out.logits if hasattr(out, "logits") else out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir")
    ap.add_argument("--synthetic", type=int, default=0, metavar="N")
    ap.add_argument("--policy", default="g-binary")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-5, help="FP32 groups' rate (AdamW)")
    ap.add_argument("--sign-lr", type=float, default=2e-5, help="low-bit groups' rate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    dist_info: Optional[Tuple[int, int]] = None
    if "WORLD_SIZE" in os.environ:
        torch.distributed.init_process_group("nccl" if args.device.startswith("cuda") else "gloo")
        dist_info = (torch.distributed.get_rank(), torch.distributed.get_world_size())
        args.workers = dist_info[1]
        if args.device.startswith("cuda"):
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', dist_info[0]))}"
            torch.cuda.set_device(args.device)
    if args.synthetic:
        model = TinyEncoder()
        train = synthetic(args.synthetic, 16, 64, args.seed)
        dev = synthetic(max(args.synthetic // 4, 16), 16, 64, args.seed + 1)
    else:
        if not args.data_dir:
            ap.error("--data-dir is required without --synthetic")
        try:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise SystemExit("sst2_distilbert: needs Hugging Face transformers (pip install transformers)") from None
        tok = AutoTokenizer.from_pretrained("distilbert-base-uncased")
        model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
        d = pathlib.Path(args.data_dir)
        train, dev = load_sst2(d / "train.tsv", tok, args.max_len), load_sst2(d / "dev.tsv", tok, args.max_len)
    model.to(args.device)
    policy = Policy.parse(args.policy, lr=args.lr, sign_lr=args.sign_lr)

    def loss_fn(m, shard):
        x, y = shard
        return torch.nn.functional.cross_entropy(logits(m, x), y)

    if dist_info is None:
        runner = nt.VirtualWorkers(model, args.workers, policy, loss_fn=loss_fn)
        fabric, net = runner, model
    else:
        net = torch.nn.parallel.DistributedDataParallel(model)
        fabric, runner = nt.register(net, policy), None
    opt = torch.optim.AdamW(model.parameters(), lr=policy.lr)
    fabric.attach_optimizer(opt)
    n = len(train[1])
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(args.seed * 1000 + epoch))
        for s in range(n // args.batch):
            idx = perm[s * args.batch:(s + 1) * args.batch]
            x = {k: v[idx].to(args.device) for k, v in train[0].items()}
            y = train[1][idx].to(args.device)
            opt.zero_grad()
            if runner is not None:
                runner.step((x, y))
            else:
                rank, world = dist_info
                xs = {k: torch.tensor_split(v, world)[rank] for k, v in x.items()}
                loss_fn(net, (xs, torch.tensor_split(y, world)[rank])).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        x = {k: v.to(args.device) for k, v in dev[0].items()}
        acc = 100.0 * float((logits(model, x).argmax(1).cpu() == dev[1]).float().mean())
    st = fabric.stats.summary()
    res = {"policy": str(policy), "dev_accuracy": acc, "traffic_vs_fp32": st["ratio"],
           "low_bit_step_fraction": st["low_bit_step_fraction"], "seconds": time.perf_counter() - t0,
           "paper_all_gbinary_accuracy": PAPER_ALL_GBINARY if not args.synthetic else "-",
           "data": "synthetic" if args.synthetic else "sst2"}
    if dist_info is None or dist_info[0] == 0:
        print(f"{res['data']}: policy {res['policy']}, dev accuracy {acc:.2f}% (paper, all-G-Binary SST-2: "
              f"{res['paper_all_gbinary_accuracy']}), traffic vs FP32 {st['ratio']:.4f}")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(res, indent=2))
    if dist_info is not None:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
