# source: https://github.com/SPTLAbron/test/blob/b2073717a21bdb7ff4b8ab3dbfb6f1219697f56e/imshow.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import matplotlib.pyplot as plt
import numpy as np
import torchvision


def imshow(img):
    img = torchvision.utils.make_grid(img)
    plt.imshow(np.transpose(img.numpy(), (1, 2, 0)))  # expect: fix
