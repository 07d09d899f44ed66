# source: https://github.com/varinder-singh/eva4p2/blob/d9ec70941a5e3e3392795fa3fef39b0aec41ee79/S2/traintest/test.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn.functional as F


def test(model, device, testloader):
    with torch.no_grad():
        for data in testloader:
            images, labels = data
            outputs = model(images)
            _, predicted = torch.max(outputs.data, 1)  # expect: fix
