# source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/blob/00d092d94257bee83b54a47628361160293cdcd5/util/util.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import numpy as np
from torch import is_tensor
from torch.autograd import Variable


def tensor2float(input_error):
    if is_tensor(input_error):
        error = input_error[0]
    elif isinstance(input_error, Variable):
        error = input_error.data[0]  # expect: fix
    return error


def tensor2im(input_image, imtype=np.uint8):
    if is_tensor(input_image):
        image_tensor = input_image
    elif isinstance(input_image, Variable):
        image_tensor = input_image.data  # expect: fix
    image_numpy = image_tensor[0].cpu().float().data.numpy()  # expect: fix, leave
    return image_numpy.astype(imtype)


def diagnose_network(net, name='network'):
    for param in net.parameters():
        if param.grad is not None:
            mean += torch.mean(torch.abs(param.grad.data))  # expect: fix
