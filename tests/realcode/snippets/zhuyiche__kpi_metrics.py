# source: https://github.com/zhuyiche/kpi-detection/blob/aa6c1d82f805603ccff1821c482719bc6bf1dbe4/src/metrics.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
from sklearn.metrics import roc_auc_score
import numpy as np


def _roc_auc_score(output, target, scores):
    scores = scores.detach().numpy()  # expect: leave
    return roc_auc_score(target, scores)
