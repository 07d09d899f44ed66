"""BERT-pytorch's shape: the entry script builds the DataLoader and runs the epochs; the
trainer class in another module wraps the model in DataParallel and is handed the loader
(`train_dataloader=`). The trainer's file gets the model side; this file gets the sampler and
`set_epoch` in its epoch loop (the project index follows the loader into the constructor)."""
import os

import torch
from ddp_shape_trainer import Trainer
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    inputs = torch.randn(24, 3)
    dataset = TensorDataset(inputs, inputs.sum(dim=1, keepdim=True).cos())
    train_data_loader = DataLoader(dataset, batch_size=8)
    trainer = Trainer(torch.nn.Linear(3, 1), train_dataloader=train_data_loader)
    for epoch in range(3):
        trainer.train(epoch)
    trainer.save(os.environ["TFC301_WEIGHTS"])


if __name__ == "__main__":
    main()
