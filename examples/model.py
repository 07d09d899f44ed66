"""SmallCNN: the CIFAR-sized classifier from our ablation experiments.

Three conv blocks (Conv-BN-ReLU-Dropout), global average pooling and a
weight-normalised linear head. `build_model` also knows the ImageNet
ResNet-18 baseline; torchvision is imported only when that one is asked for.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class ConvBlock(nn.Module):
    def __init__(self, in_ch, out_ch, p_drop=0.1):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_ch)
        self.drop = nn.Dropout2d(p_drop)

    def forward(self, x):
        return self.drop(F.relu(self.bn(self.conv(x))))


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10, width=32, use_checkpoint=False):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.block1 = ConvBlock(3, width)
        self.block2 = ConvBlock(width, width * 2)
        self.block3 = ConvBlock(width * 2, width * 4)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.utils.weight_norm(nn.Linear(width * 4, num_classes))
        self._init_weights()

    def _init_weights(self):
        # He init, as in the original Caffe code
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                m.weight.data.normal_(0, math.sqrt(2.0 / n))
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.data.fill_(1)
                m.bias.data.zero_()

    def features(self, x):
        for block in (self.block1, self.block2, self.block3):
            if self.use_checkpoint and self.training:
                x = checkpoint(block, x)  # saves activation memory on big batches
            else:
                x = block(x)
            x = self.pool(x)
        return x

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(self.dropout(x))

    def embed(self, x):
        """Bounded embedding for the t-SNE plots."""
        return F.tanh(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))

    def predict_proba(self, x, multilabel=False):
        logits = self(x)
        if multilabel:
            return F.sigmoid(logits)
        return F.softmax(logits, dim=1)

    def class_activation_map(self, x, class_idx):
        """CAM (Zhou et al. 2016), upsampled to the input resolution."""
        fmap = self.features(x)
        w = self.fc.weight[class_idx].view(1, -1, 1, 1)
        cam = F.relu((fmap * w).sum(dim=1, keepdim=True))
        return F.upsample(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)

    def freeze_backbone(self):
        """Linear probing: train only the head."""
        for name, p in self.named_parameters():
            if not name.startswith("fc."):
                p.require_grad = False

    def reset_classifier(self):
        # zero-init the head before fine-tuning on a new label set
        self.fc.bias.data = torch.zeros_like(self.fc.bias)


class TemperatureScaled(SmallCNN):
    """SmallCNN with a learned softmax temperature (Guo et al. 2017)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.temperature = nn.Parameter(torch.ones(1) * 1.5)

    def forward(self, x):
        return super().forward(x) / self.temperature


def build_model(arch, num_classes=10):
    if arch == "smallcnn":
        return SmallCNN(num_classes=num_classes)
    if arch == "smallcnn-ts":
        return TemperatureScaled(num_classes=num_classes)
    if arch == "resnet18":
        import torchvision.models as models

        net = models.resnet18(pretrained=True)
        net.fc = nn.Linear(net.fc.in_features, num_classes)
        return net
    raise ValueError(f"unknown arch: {arch}")


if __name__ == "__main__":
    # quick sanity check, and the whole-model file predict.py --exported reads
    net = SmallCNN()
    print(sum(p.numel() for p in net.parameters()), "parameters")
    print(net(torch.randn(2, 3, 32, 32)).shape)
    torch.save(net, "model.pt")
