# source: https://github.com/ne-bo/course-work/blob/fe9722b5c9e8d3f3049307449471999dafce10c3/utils.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import matplotlib.pyplot as plt
import numpy as np


def imshow(img):
    img = img / 2.0 + 0.5
    npimg = img.numpy()  # expect: fix
    plt.imshow(np.transpose(npimg, (1, 2, 0)))
