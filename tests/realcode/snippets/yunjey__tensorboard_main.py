# source: https://github.com/yunjey/pytorch-tutorial/blob/78c6afe681c4ff5095ef13662c02a7e369b1bcbd/tutorials/04-utils/tensorboard/main.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import torchvision

dataset = torchvision.datasets.MNIST(root='../../data', train=True, download=True)
data_loader = torch.utils.data.DataLoader(dataset=dataset, batch_size=100, shuffle=True)  # expect: leave


class NeuralNet(nn.Module):
    def __init__(self, input_size=784, hidden_size=500, num_classes=10):
        super(NeuralNet, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)


model = NeuralNet()
data_iter = iter(data_loader)
images, labels = next(data_iter)
for tag, value in model.named_parameters():
    logger.histo_summary(tag, value.data.cpu().numpy(), 1)  # expect: fix, leave
    logger.histo_summary(tag + '/grad', value.grad.data.cpu().numpy(), 1)  # expect: fix, leave
info = {'images': images.view(-1, 28, 28)[:10].cpu().numpy()}  # expect: fix
