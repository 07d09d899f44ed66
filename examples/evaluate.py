"""Validation during training and the final test-set report.

    python evaluate.py runs/smallcnn/weights.pt
"""

import argparse

import numpy as np
import torch
import torch.nn.functional as F

from data import SyntheticImages
from model import SmallCNN


def validate(model, loader, device, use_amp=False):
    """Mean loss and accuracy on the validation set; train.py calls it every epoch."""
    model.eval()
    total_loss = 0.0
    correct = 0
    n = 0
    with torch.no_grad():
        for images, targets in loader:
            images, targets = images.to(device), targets.to(device)
            with torch.cuda.amp.autocast(use_amp):
                logits = model(images)
            total_loss += F.cross_entropy(logits.float(), targets, reduction="sum").item()
            correct += (logits.argmax(dim=1) == targets).sum().item()
            n += targets.size(0)
    return total_loss / n, correct / n


def evaluate(model, loader, device, num_classes=10):
    """Accuracy, per-class accuracy and confusion matrix for the paper's table."""
    all_probs, all_preds, all_targets = [], [], []
    for images, targets in loader:
        logits = model(images.to(device))
        probs = F.softmax(logits, dim=1)
        all_probs.append(probs.cpu().numpy())
        all_preds.append(logits.argmax(dim=1).cpu().numpy())
        all_targets.append(targets.numpy())
    probs = np.concatenate(all_probs)
    preds = np.concatenate(all_preds)
    targets = np.concatenate(all_targets)

    confusion = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(confusion, (targets, preds), 1)
    per_class = confusion.diagonal() / np.maximum(confusion.sum(axis=1), 1)
    return {
        "accuracy": float((preds == targets).mean()),
        "per_class": per_class.tolist(),
        "confusion": confusion,
        "mean_confidence": float(probs.max(axis=1).mean()),
    }


def predict_saliency(model, images, targets):
    """Input-gradient saliency (Simonyan et al. 2014). Needs autograd: no no_grad here."""
    model.eval()
    images = images.clone().requires_grad_(True)
    scores = model(images).gather(1, targets.view(-1, 1)).sum()
    scores.backward()
    return images.grad.abs().amax(dim=1).detach().cpu().numpy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weights")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = SmallCNN().to(device)
    model.load_state_dict(torch.load(args.weights))
    test_set = SyntheticImages(n=1024, seed=2)
    loader = torch.utils.data.DataLoader(test_set, batch_size=256)
    report = evaluate(model, loader, device)
    print(f"test accuracy: {report['accuracy']:.4f}")
    for name, acc in zip(test_set.classes, report["per_class"]):
        print(f"  {name:>10s}: {acc:.3f}")


if __name__ == "__main__":
    main()
