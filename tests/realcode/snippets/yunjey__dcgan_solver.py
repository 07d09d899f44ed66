# source: https://github.com/yunjey/pytorch-tutorial/blob/c548e2ae9f384584dff15e59e61944775829929d/tutorials/03-advanced/deep_convolutional_gan/solver.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torchvision
from torch.autograd import Variable
from model import Discriminator
from model import Generator


class Solver(object):
    def to_data(self, x):
        if torch.cuda.is_available():
            x = x.cpu()
        return x.data  # expect: fix

    def train(self):
        for epoch in range(self.num_epochs):
            for i, images in enumerate(self.data_loader):
                outputs = self.discriminator(images)
                real_loss = torch.mean((outputs - 1) ** 2)
                fake_images = self.generator(noise)
                outputs = self.discriminator(fake_images)
                fake_loss = torch.mean(outputs ** 2)
                d_loss = real_loss + fake_loss
                d_loss.backward()
                g_loss = torch.mean((outputs - 1) ** 2)
                g_loss.backward()
                print('d_real_loss: %.4f, d_fake_loss: %.4f, g_loss: %.4f'
                      % (real_loss.data[0], fake_loss.data[0], g_loss.data[0]))  # expect: fix, fix, fix
                torchvision.utils.save_image(self.denorm(fake_images.data), 'x.png')  # expect: fix
