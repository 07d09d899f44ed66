# source: https://github.com/MorvanZhou/PyTorch-Tutorial/blob/4e5122c3734dcdc9ace164c2a87fbd412ca1d431/tutorial-contents/305_batch_train.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import torch
import torch.utils.data as Data  # expect: leave

x = torch.linspace(1, 10, 10)
y = torch.linspace(10, 1, 10)
torch_dataset = Data.TensorDataset(x, y)
loader = Data.DataLoader(dataset=torch_dataset, batch_size=5, shuffle=True, num_workers=2)


def show_batch():
    for epoch in range(3):
        for step, (batch_x, batch_y) in enumerate(loader):
            print('Epoch: ', epoch, '| Step: ', step, '| batch x: ',
                  batch_x.numpy(), '| batch y: ', batch_y.numpy())  # expect: fix, fix
