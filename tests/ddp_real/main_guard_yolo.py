"""Reduced from Tianxiaomo/pytorch-YOLOv4, commit a65d219f9066bae4e12003bd7cdc04531860c672,
train.py. The model is wrapped under `if torch.cuda.device_count() > 1:` inside
`if __name__ == "__main__":`, and `train()` builds its own training and validation loaders,
steps the optimizer every `subdivisions` batches, makes the checkpoint folder, saves a
checkpoint per epoch through an `isinstance(model, torch.nn.DataParallel)` branch and removes
the oldest beyond `keep_checkpoint_max`; a KeyboardInterrupt handler around `train()` saves
too. Reduced: a linear model and synthetic data in place of YOLOv4 and COCO; no TensorBoard
writer, progress bar, log file or COCO evaluation (a validation loss instead); `shuffle=False`
so that the runs can be compared weight for weight; the original's
`torch.save(model.moduel,state_dict(), ...)` typo written as `model.module.state_dict()`; the
final weights saved for the harness at the end."""
import logging
import os
import sys
from collections import deque

import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class Cfg:
    batch = 16
    subdivisions = 2
    learning_rate = 0.4
    checkpoints = "checkpoints"
    keep_checkpoint_max = 2
    TRAIN_EPOCHS = 3


def make_dataset(n, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=generator)
    return TensorDataset(x, x @ torch.linspace(-1, 1, 6).unsqueeze(1))


def train(model, device, config, epochs=5, save_cp=True):
    train_dataset = make_dataset(32, 0)
    val_dataset = make_dataset(8, 1)
    train_loader = DataLoader(train_dataset, batch_size=config.batch // config.subdivisions,
                              shuffle=False, drop_last=True)
    val_loader = DataLoader(val_dataset, batch_size=config.batch // config.subdivisions,
                            shuffle=False)
    optimizer = optim.SGD(params=model.parameters(), lr=config.learning_rate / config.batch)
    criterion = nn.MSELoss()
    save_prefix = "Yolov4_epoch"
    saved_models = deque()
    global_step = 0
    model.train()
    for epoch in range(epochs):
        epoch_loss = 0
        for _i, batch in enumerate(train_loader):
            global_step += 1
            images = batch[0].to(device=device, dtype=torch.float32)
            targets = batch[1].to(device=device)
            loss = criterion(model(images), targets)
            loss.backward()
            epoch_loss += loss.item()
            if global_step % config.subdivisions == 0:
                optimizer.step()
                model.zero_grad()
        with torch.no_grad():
            val_loss = sum(criterion(model(x), y).item() for x, y in val_loader)
        print(f"epoch {epoch + 1} val loss {val_loss:.4f}")
        if save_cp:
            try:
                os.makedirs(config.checkpoints, exist_ok=True)
                logging.info("Created checkpoint directory")
            except OSError:
                pass
            save_path = os.path.join(config.checkpoints, f"{save_prefix}{epoch + 1}.pth")
            if isinstance(model, torch.nn.DataParallel):
                torch.save(model.module.state_dict(), save_path)
            else:
                torch.save(model.state_dict(), save_path)
            logging.info(f"Checkpoint {epoch + 1} saved !")
            saved_models.append(save_path)
            if len(saved_models) > config.keep_checkpoint_max > 0:
                model_to_remove = saved_models.popleft()
                try:
                    os.remove(model_to_remove)
                except OSError:
                    logging.info(f"failed to remove {model_to_remove}")


if __name__ == "__main__":
    cfg = Cfg()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    logging.info(f"Using device {device}")
    torch.manual_seed(0)
    model = nn.Linear(6, 1)

    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)
    model.to(device=device)

    try:
        train(model=model, config=cfg, epochs=cfg.TRAIN_EPOCHS, device=device)
    except KeyboardInterrupt:
        if isinstance(model, torch.nn.DataParallel):
            torch.save(model.module.state_dict(), "INTERRUPTED.pth")
        else:
            torch.save(model.state_dict(), "INTERRUPTED.pth")
        logging.info("Saved interrupt")
        try:
            sys.exit(0)
        except SystemExit:
            os._exit(0)
    final = model.module if isinstance(model, torch.nn.DataParallel) else model
    torch.save(final.state_dict(), os.environ["TFC301_WEIGHTS"])
