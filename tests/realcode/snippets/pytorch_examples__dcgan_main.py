# source: https://github.com/pytorch/examples/blob/00b1e34c536d1cd312f561bc8bceea3e78e74071/dcgan/main.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import argparse
import torch
import torch.nn as nn
import torch.nn.parallel
import torch.optim as optim
import torch.utils.data  # expect: leave
import torchvision.datasets as dset
import torchvision.utils as vutils
from torch.autograd import Variable

parser = argparse.ArgumentParser()
opt = parser.parse_args()
dataset = dset.CIFAR10(root=opt.dataroot, download=True)
dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)  # expect: leave


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.normal_(0.0, 0.02)  # expect: fix
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)  # expect: fix
        m.bias.data.fill_(0)  # expect: fix


class _netG(nn.Module):
    def __init__(self, ngpu):
        super(_netG, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(nn.ConvTranspose2d(100, 64, 4, 1, 0, bias=False), nn.Tanh())

    def forward(self, input):
        gpu_ids = None
        if isinstance(input.data, torch.cuda.FloatTensor) and self.ngpu > 1:  # expect: fix
            gpu_ids = range(self.ngpu)
        return nn.parallel.data_parallel(self.main, input, gpu_ids)


netG = _netG(ngpu)
netG.apply(weights_init)


class _netD(nn.Module):
    def __init__(self, ngpu):
        super(_netD, self).__init__()
        self.main = nn.Sequential(nn.Conv2d(3, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, input):
        gpu_ids = None
        if isinstance(input.data, torch.cuda.FloatTensor) and self.ngpu > 1:  # expect: fix
            gpu_ids = range(self.ngpu)
        output = nn.parallel.data_parallel(self.main, input, gpu_ids)
        return output.view(-1, 1)


netD = _netD(ngpu)
netD.apply(weights_init)
criterion = nn.BCELoss()
input = torch.FloatTensor(opt.batchSize, 3, opt.imageSize, opt.imageSize)
label = torch.FloatTensor(opt.batchSize)
noise = torch.FloatTensor(opt.batchSize, nz, 1, 1)
if opt.cuda:
    input, label = input.cuda(), label.cuda()
input = Variable(input)
label = Variable(label)
noise = Variable(noise)
for epoch in range(opt.niter):
    for i, data in enumerate(dataloader, 0):
        real_cpu, _ = data
        batch_size = real_cpu.size(0)
        input.data.resize_(real_cpu.size()).copy_(real_cpu)  # expect: fix
        label.data.resize_(batch_size).fill_(real_label)  # expect: fix
        output = netD(input)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.data.mean()  # expect: fix
        noise.data.resize_(batch_size, nz, 1, 1)  # expect: fix
        noise.data.normal_(0, 1)  # expect: fix
        fake = netG(noise)
        label.data.fill_(fake_label)  # expect: fix
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.data.mean()  # expect: fix
        errD = errD_real + errD_fake
        label.data.fill_(real_label)  # expect: fix
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.data.mean()  # expect: fix
        print('Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
              % (errD.data[0], errG.data[0], D_x, D_G_z1, D_G_z2))  # expect: fix, fix
        if i % 100 == 0:
            fake = netG(fixed_noise)
            vutils.save_image(fake.data, '%s/fake_samples_epoch_%03d.png' % (opt.outf, epoch))  # expect: fix
