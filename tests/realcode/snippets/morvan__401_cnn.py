# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/2ae0c0fa6a8f3918b74dca0fb1eb94e3dad1cce0/tutorial-contents/401_CNN.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
from torch.autograd import Variable


class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        self.out = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        output = self.out(x)
        return output, x


cnn = CNN()
loss_func = nn.CrossEntropyLoss()
for epoch in range(EPOCH):
    for step, (x, y) in enumerate(train_loader):
        b_x = Variable(x)
        b_y = Variable(y)
        output = cnn(b_x)[0]
        loss = loss_func(output, b_y)
        loss.backward()
        if step % 50 == 0:
            test_output, last_layer = cnn(test_x)
            pred_y = torch.max(test_output, 1)[1].data.squeeze()  # expect: fix
            print('Epoch: ', epoch, '| train loss: %.4f' % loss.data[0])  # expect: fix
            low_dim_embs = tsne.fit_transform(last_layer.data.numpy()[:plot_only, :])  # expect: fix, leave
            labels = test_y.numpy()[:plot_only]  # expect: fix
test_output, _ = cnn(test_x[:10])
pred_y = torch.max(test_output, 1)[1].data.numpy().squeeze()  # expect: fix, leave
print(test_y[:10].numpy(), 'real number')  # expect: fix
