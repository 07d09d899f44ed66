"""Reduced from lunan0320/pytorch_distributed_training, commit
1fb9c7af3d7479355bc0e2c2eb153a179da52fa3, data_parallel.py (and the `Net` of its model.py).
A module-level script: the model is moved to the device and wrapped in DataParallel after its
optimizer is made, a TensorBoard `SummaryWriter` is built before the loop and written every
10 steps through `tb_writer.add_scalar(...)`, and closed at the end. Reduced: synthetic
MNIST-sized data in place of MNIST (no download), the model of model.py in this file,
`shuffle=False` (a shuffled order drawn per process would make the runs differ), the device
`cuda` only where there is one (the original pins `torch.device('cuda')` and sets
`CUDA_VISIBLE_DEVICES` before importing torch), the one pass over the loader inside
`for epoch in range(epochs)` with the `epochs = 2` the script defines but does not use
(an epoch loop is where the sampler's `set_epoch` goes), and the final weights saved for the
harness at the end."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()  # noqa: UP008
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5)
        self.pool1 = nn.MaxPool2d(kernel_size=2)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=16, kernel_size=3)
        self.pool2 = nn.MaxPool2d(kernel_size=2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 60)
        self.fc3 = nn.Linear(60, 10)

    def forward(self, x, labels=None):
        x = F.relu(self.conv1(x))
        x = self.pool1(x)
        x = F.relu(self.conv2(x))
        x = self.pool2(x)
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = F.relu(self.fc3(x))

        x = (x,)

        if labels is not None:
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(x[0], labels)
            x = (loss,) + x

        return x


device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
batch_size = 16
epochs = 2

torch.manual_seed(0)
train_dataset = TensorDataset(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)))

train_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=False)

model = Net()

model = model.to(device)
optimizer = optim.SGD(model.parameters(), lr=0.1)
model = nn.DataParallel(model)


# training!
tb_writer = SummaryWriter('data-parallel-training')
for epoch in range(epochs):  # noqa: B007
    for i, (inputs, labels) in enumerate(train_loader):
        # forward
        inputs = inputs.to(device)
        labels = labels.to(device)
        outputs = model(inputs, labels=labels)
        loss = outputs[0]
        loss = loss.mean()
        # backward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        # log
        if i % 10 == 0:
            tb_writer.add_scalar('loss', loss.item(), i)
tb_writer.close()
torch.save(model.module.state_dict(), os.environ["TFC301_WEIGHTS"])
