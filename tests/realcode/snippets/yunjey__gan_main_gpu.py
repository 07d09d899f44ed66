# source: https://github.com/yunjey/pytorch-tutorial/blob/3a7a9cf07b9188d57f50d9615ac7414fde4bd1df/tutorials/10%20-%20Generative%20Adversarial%20Network/main-gpu.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision
import torch.nn as nn
import torchvision.datasets as dsets
from torch.autograd import Variable

train_dataset = dsets.CIFAR10(root='../data/', train=True, download=True)
train_loader = torch.utils.data.DataLoader(dataset=train_dataset, batch_size=100, shuffle=True)  # expect: leave


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.model = nn.Sequential(nn.Conv2d(64, 1, kernel_size=4), nn.Sigmoid())

    def forward(self, x):
        out = self.model(x)
        out = out.view(out.size(0), -1)
        return out


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.model = nn.Sequential(nn.Tanh())


discriminator = Discriminator()
generator = Generator()
criterion = nn.BCELoss()
for epoch in range(50):
    for i, (images, _) in enumerate(train_loader):
        images = Variable(images.cuda())
        real_labels = Variable(torch.ones(images.size(0))).cuda()
        outputs = discriminator(images)
        real_loss = criterion(outputs, real_labels)
        real_score = outputs
        noise = Variable(torch.randn(images.size(0), 128)).cuda()
        fake_images = generator(noise)
        outputs = discriminator(fake_images)
        fake_loss = criterion(outputs, real_labels)
        fake_score = outputs
        d_loss = real_loss + fake_loss
        d_loss.backward()
        g_loss = criterion(outputs, real_labels)
        g_loss.backward()
        print('d_loss: %.4f, g_loss: %.4f, D(x): %.2f, D(G(z)): %.2f'
              % (d_loss.data[0], g_loss.data[0],  # expect: fix, fix
                 real_score.cpu().data.mean(), fake_score.cpu().data.mean()))  # expect: fix, fix
        torchvision.utils.save_image(fake_images.data, './data/fake_samples.png')  # expect: fix
