"""The trainer of the BERT-shaped project: it wraps the model it is given and iterates the
loader it is handed."""
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, train_dataloader, with_cuda=True):
        self.model = model
        if with_cuda and torch.cuda.device_count() > 1:
            self.model = nn.DataParallel(self.model)
        self.train_data = train_dataloader

    def train(self, epoch):
        for x, y in self.train_data:
            self.model.zero_grad()
            nn.functional.mse_loss(self.model(x), y).backward()
            with torch.no_grad():
                for parameter in self.model.parameters():
                    parameter -= 0.05 * parameter.grad

    def save(self, path):
        model = self.model.module if isinstance(self.model, nn.DataParallel) else self.model
        torch.save(model.state_dict(), path)
