# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/3d8df0c297a58295b304f0c74c31a3ffcc8e57c9/tutorial-contents/402_RNN_classifier.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import torchvision.datasets as dsets
from torch.autograd import Variable

test_data = dsets.MNIST(root='./mnist/', train=False)
test_x = Variable(test_data.test_data, volatile=True).type(torch.FloatTensor)[:2000]/255.
test_y = test_data.test_labels.numpy().squeeze()[:2000]  # expect: fix


class RNN(nn.Module):
    def __init__(self):
        super(RNN, self).__init__()
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        out = self.out(x)
        return out


rnn = RNN()
loss_func = nn.CrossEntropyLoss()
for epoch in range(EPOCH):
    for step, (x, y) in enumerate(train_loader):
        b_x = Variable(x.view(-1, 28, 28))
        b_y = Variable(y)
        output = rnn(b_x)
        loss = loss_func(output, b_y)
        loss.backward()
        if step % 50 == 0:
            test_output = rnn(test_x)
            pred_y = torch.max(test_output, 1)[1].data.numpy().squeeze()  # expect: fix, leave
            print('Epoch: ', epoch, '| train loss: %.4f' % loss.data[0])  # expect: fix
test_output = rnn(test_x[:10].view(-1, 28, 28))
pred_y = torch.max(test_output, 1)[1].data.numpy().squeeze()  # expect: fix, leave
