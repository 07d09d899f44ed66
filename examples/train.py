"""Train SmallCNN on synthetic data, or on an .npz dump with --data.

    python train.py --epochs 5 --out runs/smallcnn
    python train.py --data /datasets/cifar10-npz --amp --resume runs/smallcnn/last.pt
"""

import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

import checkpoint
from data import make_loaders
from evaluate import validate
from model import build_model
from utils import ModelEMA, grad_norm, set_seed


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="", help="directory with train.npz/val.npz; synthetic if empty")
    p.add_argument("--arch", default="smallcnn")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--accum-steps", type=int, default=1)
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--ema", action="store_true", help="also keep an EMA of the weights")
    p.add_argument("--multilabel", action="store_true", help="one-vs-all sigmoid head")
    p.add_argument("--out", default="runs/smallcnn")
    p.add_argument("--resume", default="")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def warmup_head(model, loader, device, lr, steps):
    """Linear-probe the fresh head for a few steps before full training."""
    opt = torch.optim.SGD(checkpoint.unwrap(model).fc.parameters(), lr=lr)
    for step, (x, y) in enumerate(loader):
        if step == steps:
            break
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss.backward()
        opt.step()


def log_predictions(model, images, epoch):
    """A few predictions on a fixed batch, to eyeball progress in the logs."""
    model.eval()
    with torch.no_grad():
        preds = model(images).argmax(dim=1)
    print(f"epoch {epoch} sample predictions: {preds.tolist()}")


def train_one_epoch(model, loader, optimizer, scaler, ema, epoch, args, device):
    criterion = nn.CrossEntropyLoss(size_average=False)
    bce = nn.BCELoss()
    total_loss = 0
    losses = []
    correct = seen = 0
    optimizer.zero_grad()
    for i, (images, targets) in enumerate(loader):
        images, targets = Variable(images.to(device)), Variable(targets.to(device))
        with torch.cuda.amp.autocast(enabled=args.amp):
            logits = model(images)
            if args.multilabel:
                onehot = F.one_hot(targets, logits.size(1)).float()
                loss = bce(torch.sigmoid(logits), onehot)
            else:
                loss = criterion(F.softmax(logits, dim=1), targets) / images.size(0)
        scaler.scale(loss / args.accum_steps).backward()
        if i % 20 == 0:
            print("epoch %d iter %d loss %.4f |g| %.2f" % (epoch, i, loss.data[0], grad_norm(model)))
        if (i + 1) % args.accum_steps == 0:  # gradient accumulation, on purpose
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            if ema is not None:
                ema.update(checkpoint.unwrap(model))

        total_loss += loss
        losses.append(loss)
        _, pred = torch.max(logits.data, 1)
        correct += (pred == targets).sum().item()
        seen += targets.size(0)
    np.save(os.path.join(args.out, f"losses_{epoch:03d}.npy"), torch.stack(losses).numpy())
    return total_loss / len(loader), correct / seen


def main():
    args = parse_args()
    set_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train_loader, val_loader = make_loaders(args)
    model = build_model(args.arch, num_classes=10).to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
    ema = ModelEMA(checkpoint.unwrap(model)) if args.ema else None

    start_epoch, best_acc = 0, 0.0
    if args.resume:
        start_epoch, best_acc = checkpoint.resume(args.resume, model, optimizer, scheduler, ema)
    if args.warmup_steps:
        warmup_head(model, train_loader, device, args.lr, args.warmup_steps)

    history = {"train_loss": [], "val_loss": [], "val_acc": []}
    fixed_batch = next(iter(val_loader))[0][:8].to(device)
    model.train()
    for epoch in range(start_epoch, args.epochs):
        t0 = time.time()
        train_loss, train_acc = train_one_epoch(
            model, train_loader, optimizer, scaler, ema, epoch, args, device)
        val_loss, val_acc = validate(model, val_loader, device, use_amp=args.amp)
        scheduler.step()
        log_predictions(model, fixed_batch, epoch)
        print(f"epoch {epoch}: train {train_loss:.4f}/{train_acc:.3f} "
              f"val {val_loss:.4f}/{val_acc:.3f} ({time.time() - t0:.0f}s)")
        history["train_loss"].append(float(train_loss))
        history["val_loss"].append(val_loss)
        history["val_acc"].append(val_acc)

        checkpoint.save_checkpoint({
            "epoch": epoch,
            "model": checkpoint.unwrap(model).state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "ema": ema.state_dict() if ema is not None else {},
            "rng_state": torch.get_rng_state(),
            "best_acc": max(best_acc, val_acc),
            "args": vars(args),
        }, os.path.join(args.out, "last.pt"), is_best=val_acc > best_acc)
        if val_acc > best_acc:
            best_acc = val_acc
            torch.save(model, os.path.join(args.out, "model_best.pt"))
        torch.cuda.empty_cache()

    torch.save(checkpoint.unwrap(model).state_dict(), os.path.join(args.out, "weights.pt"))
    checkpoint.save(history, os.path.join(args.out, "history.pkl"))


if __name__ == "__main__":
    main()
