#!/usr/bin/python3
"""PyTorch twin of nn.BenchmarkResNet18Step (Go package nfabric/nn).

One forward + backward pass of CIFAR ResNet-18 (3x3 stem conv 64 without
max-pool, BasicBlocks [2,2,2,2] at 64/128/256/512 channels, 1x1 conv + BN
shortcut on downsample, global average pooling, fc; 11,173,962 parameters
for 10 classes) on a batch of 128 random 3x32x32 images, in training mode.
W = 1 runs the whole batch; W = 8 splits it into 8 shards with a separate
backward each. Prints images/s and the extrapolated minutes per
50,000-image epoch.

Run:  /usr/bin/python3 bench/peers/torch_resnet18_step.py [steps] [W]
"""
import sys
import time

import torch
import torch.nn as tnn
import torch.nn.functional as F


class BasicBlock(tnn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.downsample is None else self.downsample(x)))


class ResNet18(tnn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = tnn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(64)
        layers, cin = [], 64
        for i, cout in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            layers.append(tnn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = tnn.Linear(512, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(x.mean((2, 3)))


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    w = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    torch.set_num_threads(2)
    torch.manual_seed(1)
    model = ResNet18(10).train()
    nparams = sum(p.numel() for p in model.parameters())
    x = torch.randn(128, 3, 32, 32)
    y = torch.randint(0, 10, (128,))

    def step():
        for k in range(w):
            lo, hi = k * 128 // w, (k + 1) * 128 // w
            model.zero_grad()
            F.cross_entropy(model(x[lo:hi]), y[lo:hi]).backward()

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sec = (time.perf_counter() - t0) / steps
    ips = 128 / sec
    print(f"torch {torch.__version__} threads={torch.get_num_threads()}: ResNet-18 ({nparams} params) "
          f"fwd+bwd batch 128 W={w}: {sec:.2f} s/step, {ips:.1f} images/s, {50000 / ips / 60:.1f} min/epoch")


if __name__ == "__main__":
    main()
