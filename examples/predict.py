"""Top-k predictions for images saved as .npy (HxWxC uint8), or a random demo batch.

    python predict.py runs/smallcnn/weights.pt img1.npy img2.npy --topk 3
    python predict.py --exported model.pt
"""

import argparse

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd import Variable
from torch.cuda.amp import autocast

from checkpoint import load
from model import SmallCNN

MEAN = torch.tensor([0.49, 0.48, 0.45]).view(1, 3, 1, 1)
STD = torch.tensor([0.25, 0.24, 0.26]).view(1, 3, 1, 1)


def load_model(weights, num_classes=10):
    model = SmallCNN(num_classes=num_classes)
    model.load_state_dict(torch.load(weights))
    model.eval()
    return model


def load_exported():
    """The whole pickled model that checkpoint.export_model writes."""
    model = torch.load("model.pt")
    model.eval()
    return model


def read_images(paths):
    batch = [torch.from_numpy(np.load(p)).permute(2, 0, 1).float() / 255.0 for p in paths]
    return (torch.stack(batch) - MEAN) / STD


def predict(model, images, topk=5):
    images = Variable(images, volatile=True)
    with autocast():
        logits = model.forward(images)
    probs = F.softmax(logits.float(), dim=1)
    return probs.topk(topk, dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weights", nargs="?", default="runs/smallcnn/weights.pt")
    parser.add_argument("images", nargs="*")
    parser.add_argument("--topk", type=int, default=5)
    parser.add_argument("--exported", action="store_true")
    parser.add_argument("--history", default="", help="also print the run's best val acc")
    args = parser.parse_args()

    model = load_exported() if args.exported else load_model(args.weights)
    images = read_images(args.images) if args.images else torch.randn(4, 3, 32, 32)
    probs, classes = predict(model, images, args.topk)
    probs = probs.numpy()
    for i, (p, c) in enumerate(zip(probs, classes.tolist())):
        ranked = ", ".join(f"class_{k}={v:.3f}" for k, v in zip(c, p))
        print(f"image {i}: {ranked}")
    if args.history:
        print("best val acc:", max(load(args.history)["val_acc"]))


if __name__ == "__main__":
    main()
