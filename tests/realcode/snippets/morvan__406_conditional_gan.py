# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/406_conditional_GAN.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.nn as nn
import numpy as np

G = nn.Sequential(nn.Linear(6, 128), nn.ReLU(), nn.Linear(128, 15))
D = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 1), nn.Sigmoid())
for step in range(10000):
    artist_paintings, labels = artist_works_with_labels()
    G_ideas = torch.randn(BATCH_SIZE, N_IDEAS)
    G_inputs = torch.cat((G_ideas, labels), 1)
    G_paintings = G(G_inputs)
    D_inputs0 = torch.cat((artist_paintings, labels), 1)
    prob_artist0 = D(D_inputs0)
    D_loss = - torch.mean(D_score0 + D_score1)
    if step % 200 == 0:
        plt.plot(PAINT_POINTS[0], G_paintings.data.numpy()[0], c='#4AD631', lw=3)  # expect: fix, leave
        bound = [0, 0.5] if labels.data[0, 0] == 0 else [0.5, 1]  # expect: fix
        plt.text(-.5, 2.3, 'D accuracy=%.2f' % prob_artist0.data.numpy().mean())  # expect: fix, leave
        plt.text(-.5, 2, 'D score= %.2f' % -D_loss.data.numpy())  # expect: fix, leave
        plt.text(-.5, 1.7, 'Class = %i' % int(labels.data[0, 0]))  # expect: fix
z = torch.randn(1, N_IDEAS)
label = torch.FloatTensor([[1.]])
G_inputs = torch.cat((z, label), 1)
G_paintings = G(G_inputs)
plt.plot(PAINT_POINTS[0], G_paintings.data.numpy()[0], c='#4AD631', lw=3)  # expect: fix, leave
