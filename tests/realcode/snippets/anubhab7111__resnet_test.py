# source: https://github.com/anubhab7111/computer-vision/blob/e3166b06d0a20534dfb5d8c7a02075033e128b24/cnn/ResNet/test.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
from train import model
from data_loader import test_loader

import torch

all_labels = []
all_preds = []
with torch.no_grad():
    for images, labels in test_loader:
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)  # expect: fix
        all_labels.extend(labels.cpu().numpy())  # expect: fix
        all_preds.extend(predicted.cpu().numpy())  # expect: fix
