# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/468039f49c95721b59c2d7138355e08d7b4b2cb8/tutorial-contents/404_autoencoder.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import numpy as np
from torch.autograd import Variable


class AutoEncoder(nn.Module):
    def __init__(self):
        super(AutoEncoder, self).__init__()
        self.encoder = nn.Sequential(nn.Linear(28*28, 3))
        self.decoder = nn.Sequential(nn.Linear(3, 28*28), nn.Sigmoid())

    def forward(self, x):
        encoded = self.encoder(x)
        decoded = self.decoder(encoded)
        return encoded, decoded


autoencoder = AutoEncoder()
loss_func = nn.MSELoss()
view_data = Variable(train_data.train_data[:N_TEST_IMG].view(-1, 28*28).type(torch.FloatTensor)/255.)
for i in range(N_TEST_IMG):
    a[0][i].imshow(np.reshape(view_data.data.numpy()[i], (28, 28)), cmap='gray')  # expect: fix, leave
for epoch in range(EPOCH):
    for step, (x, y) in enumerate(train_loader):
        b_x = Variable(x.view(-1, 28*28))
        b_y = Variable(x.view(-1, 28*28))
        encoded, decoded = autoencoder(b_x)
        loss = loss_func(decoded, b_y)
        loss.backward()
        if step % 100 == 0:
            print('Epoch: ', epoch, '| train loss: %.4f' % loss.data[0])  # expect: fix
            _, decoded_data = autoencoder(view_data)
            for i in range(N_TEST_IMG):
                a[1][i].imshow(np.reshape(decoded_data.data.numpy()[i], (28, 28)), cmap='gray')  # expect: fix, leave
view_data = Variable(train_data.train_data[:200].view(-1, 28*28).type(torch.FloatTensor)/255.)
encoded_data, _ = autoencoder(view_data)
X = encoded_data.data[:, 0].numpy()  # expect: fix, leave
Y = encoded_data.data[:, 1].numpy()  # expect: fix, leave
Z = encoded_data.data[:, 2].numpy()  # expect: fix, leave
values = train_data.train_labels[:200].numpy()  # expect: fix
