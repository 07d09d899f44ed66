# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/1b5fa9f7aa37a7731fc8831ab08f1e9460315a7f/tutorial-contents/502_GPU.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
from torch.autograd import Variable
import torch.utils.data as Data  # expect: leave
import torchvision

train_data = torchvision.datasets.MNIST(root='./mnist/', train=True, download=False)
train_loader = Data.DataLoader(dataset=train_data, batch_size=50, shuffle=True)
test_data = torchvision.datasets.MNIST(root='./mnist/', train=False)
test_x = Variable(torch.unsqueeze(test_data.test_data, dim=1)).type(torch.FloatTensor)[:2000].cuda()/255.
test_y = test_data.test_labels[:2000].cuda()


class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        self.out = nn.Linear(32 * 7 * 7, 10)


cnn = CNN()
loss_func = nn.CrossEntropyLoss()
for epoch in range(1):
    for step, (x, y) in enumerate(train_loader):
        output = cnn(b_x)
        loss = loss_func(output, b_y)
        loss.backward()
        if step % 50 == 0:
            test_output = cnn(test_x)
            pred_y = torch.max(test_output, 1)[1].cuda().data.squeeze()  # expect: fix
            print('Epoch: ', epoch, '| train loss: %.4f' % loss.data[0])  # expect: fix
test_output = cnn(test_x[:10])
pred_y = torch.max(test_output, 1)[1].cuda().data.squeeze()  # expect: fix
