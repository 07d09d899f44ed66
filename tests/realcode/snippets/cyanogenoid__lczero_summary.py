# source: https://github.com/Cyanogenoid/lczero-training/blob/65220c465f7edde49177e2ecc88913f757449c63/pytorch/summary.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch


def weight_histograms(session):
    for name, param in session.net.module.named_parameters():
        session.train_writer.add_histogram(f'weight/{name}', param.detach().cpu().numpy(), session.step)  # expect: leave
