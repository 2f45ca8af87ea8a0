"""The paper's CIFAR-style ResNet-18 (as the Go nn.NewResNet builds it): a
3x3 stride-1 stem "conv1" with BatchNorm "bn1" and no max-pool, stages
"layer1".."layer4" of BasicBlocks, global average pooling and the
classifier "fc" (the default "head" group). width and blocks shrink it
for CPU tests; width 64, blocks (2, 2, 2, 2) is ResNet-18 (11.2 M
parameters with 10 classes).

stem="imagenet" gives torchvision's ResNet-18 layout instead (beyond the
paper; for benchmarks whose point is the parameter count, not the
compute): a 7x7 stride-2 "conv1" and a 3x3 stride-2 max-pool before
layer1, so every stage runs on a quarter of the rows and columns of
the CIFAR stem's, for 7680 more stem weights (11,181,642 parameters
with 10 classes, against 11,173,962)."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn


# The stems ResNet builds: "cifar" (the paper's: 3x3 stride 1, no max-pool)
# and "imagenet" (torchvision's: 7x7 stride 2, then a 3x3 stride-2 max-pool).
STEMS = ("cifar", "imagenet")


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, classes: int = 10, width: int = 64, blocks: Sequence[int] = (2, 2, 2, 2), in_channels: int = 3,
                 stem: str = "cifar"):
        super().__init__()
        if stem not in STEMS:
            raise ValueError(f"unknown ResNet stem {stem!r} (want one of {', '.join(STEMS)})")
        self.stem = stem
        if stem == "cifar":
            self.conv1 = nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_channels, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        stages, cin = [], width
        for i, n in enumerate(blocks):
            cout = width * 2 ** i
            layers = [BasicBlock(cin if j == 0 else cout, cout, 1 if i == 0 or j > 0 else 2) for j in range(n)]
            stages.append(nn.Sequential(*layers))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = (stages + [nn.Identity()] * 4)[:4]
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        if self.stem == "imagenet":
            x = nn.functional.max_pool2d(x, 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet18(classes: int = 10, stem: str = "cifar") -> ResNet:
    return ResNet(classes, stem=stem)
