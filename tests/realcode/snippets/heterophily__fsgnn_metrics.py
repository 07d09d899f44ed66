# source: https://github.com/heterophily-submit/HeterophilySpecificModels/blob/857e1b9d16602940bce388898729a3a4b0ff4001/FSGNN/utils/metrics.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch

from torch import Tensor
from sklearn.metrics import roc_auc_score


@torch.no_grad()
def roc_auc(pr_logits, gt_labels):
    return roc_auc_score(gt_labels.cpu().numpy(), pr_logits[:, 1].cpu().numpy())  # expect: fix, fix
