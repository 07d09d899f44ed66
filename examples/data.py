"""Datasets and loaders.

`SyntheticImages` makes class-conditional Gaussian blobs shaped like CIFAR
(3x32x32) so the example runs with torch alone. `NpzImages` reads the uint8
dumps our preprocessing script writes (`images`, `labels`).
"""

import hashlib
import os

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data._utils.collate import default_collate


class SyntheticImages(Dataset):
    def __init__(self, n=2048, num_classes=10, seed=0, transform=None):
        centers = torch.randn(num_classes, 3, 1, 1, generator=torch.Generator().manual_seed(1234))
        g = torch.Generator().manual_seed(seed)
        self.targets = torch.randint(0, num_classes, (n,), generator=g)
        self.data = centers[self.targets] + 4.0 * torch.randn(n, 3, 32, 32, generator=g)
        self.classes = [f"class_{i}" for i in range(num_classes)]
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        img, target = self.data[idx], self.targets[idx]
        if self.transform is not None:
            img = self.transform(img)
        return img, target


class NpzImages(Dataset):
    def __init__(self, path, transform=None):
        arrays = np.load(path)
        self.data = arrays["images"]  # uint8, N x H x W x C
        self.targets = arrays["labels"]
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, idx):
        img = torch.from_numpy(self.data[idx]).permute(2, 0, 1).float() / 255.0
        if self.transform is not None:
            img = self.transform(img)
        return img, int(self.targets[idx])

    def fingerprint(self):
        """Hash of the raw pixels, logged so runs can be matched to their data."""
        return hashlib.md5(self.data.data).hexdigest()


def channel_stats(dataset):
    """Per-channel mean/std for normalisation (computed once, then hard-coded)."""
    x = dataset.data if torch.is_tensor(dataset.data) else torch.from_numpy(dataset.data)
    x = x.float()
    return x.mean(dim=(0, 2, 3)), x.std(dim=(0, 2, 3))


def class_weights(targets, num_classes):
    """Inverse-frequency weights for the long-tail runs."""
    classes = torch.range(0, num_classes - 1)
    counts = (targets.unsqueeze(1) == classes).sum(0).float()
    return counts.sum() / (num_classes * counts.clamp(min=1))


def zca_matrix(x, eps=1e-5):
    """ZCA whitening matrix (only used with --zca, it is slow)."""
    flat = x.reshape(x.size(0), -1)
    flat = flat - flat.mean(dim=0)
    cov = flat.t().mm(flat) / (flat.size(0) - 1)
    eigvals, eigvecs = torch.symeig(cov, eigenvectors=True)
    return eigvecs.mm(torch.diag(1.0 / torch.sqrt(eigvals + eps))).mm(eigvecs.t())


def collate(batch):
    # the loader marks unreadable samples as None; drop them here
    return default_collate([b for b in batch if b is not None])


def make_loaders(args):
    if args.data:
        train_set = NpzImages(os.path.join(args.data, "train.npz"))
        val_set = NpzImages(os.path.join(args.data, "val.npz"))
        print("data fingerprint:", train_set.fingerprint())
    else:
        train_set = SyntheticImages(n=4096, seed=args.seed)
        val_set = SyntheticImages(n=1024, seed=args.seed + 1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              collate_fn=collate, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=256)
    return train_loader, val_loader
