# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/406_GAN.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import numpy as np

G = nn.Sequential(nn.Linear(5, 128), nn.ReLU(), nn.Linear(128, 15))
D = nn.Sequential(nn.Linear(15, 128), nn.ReLU(), nn.Linear(128, 1), nn.Sigmoid())
for step in range(10000):
    G_ideas = torch.randn(64, 5, requires_grad=True)
    G_paintings = G(G_ideas)
    prob_artist0 = D(artist_paintings)
    prob_artist1 = D(G_paintings.detach())
    D_loss = - torch.mean(torch.log(prob_artist0) + torch.log(1. - prob_artist1))
    if step % 50 == 0:
        plt.plot(PAINT_POINTS[0], G_paintings.data.numpy()[0], c='#4AD631', lw=3)  # expect: fix, leave
        plt.text(-.5, 2.3, 'D accuracy=%.2f' % prob_artist0.data.numpy().mean())  # expect: fix, leave
        plt.text(-.5, 2, 'D score= %.2f' % -D_loss.data.numpy())  # expect: fix, leave
