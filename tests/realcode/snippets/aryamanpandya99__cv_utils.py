# source: https://github.com/aryamanpandya99/computer_vision/blob/ed0ab3ff6e27db3d0ef53381930764c794110a6b/src/utils.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import matplotlib.pyplot as plt
import numpy as np


def show_torch_image(img):
    img = img.permute(1, 2, 0)
    img = img.numpy().astype(np.uint8)  # expect: fix
    plt.imshow(img)
