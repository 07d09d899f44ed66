# source: https://github.com/JyZhang10Mars/YooChooseGraphSAGE/blob/35fe98156496b8d8f54727d3878600182241fa0a/evaluate.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import numpy as np
import torch


def evaluate(model, data_loader):
    with torch.no_grad():
        for data in tqdm(data_loader):
            data = data.to(device)
            pred = model(data).detach().cpu().numpy()  # expect: leave
            label = data.y.detach().cpu().numpy()  # expect: leave
