"""pretrained=args.pretrained: TorchFix's rule raises here (cst.ensure_type on an
Attribute), and TorchFix reports nothing for the whole file, not even TOR102 below."""
import argparse

import torch
import torchvision

args = argparse.Namespace(pretrained=True)
net = torchvision.models.resnet18(pretrained=args.pretrained)
state = torch.load("weights.pt")
