# source: https://github.com/pytorch/examples/blob/0f4dca7dc202798f545ca7c006c91956cb584f43/word_language_model/main.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import argparse
import torch
import torch.nn as nn
from torch.autograd import Variable

import data
import model

parser = argparse.ArgumentParser(description='PyTorch PennTreeBank RNN/LSTM Language Model')
parser.add_argument('--data', type=str, default='./data/linux')
args = parser.parse_args()
corpus = data.Corpus(args.data)  # expect: leave


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data


model = model.RNNModel(args.model, 10, 200, 200, 2, 0.2, False)
criterion = nn.CrossEntropyLoss()


def repackage_hidden(h):
    if type(h) == Variable:
        return Variable(h.data)  # expect: fix
    else:
        return tuple(repackage_hidden(v) for v in h)


def evaluate(data_source):
    total_loss = 0
    for i in range(0, data_source.size(0) - 1, 35):
        output, hidden = model(data, hidden)
        output_flat = output.view(-1, 10)
        total_loss += len(data) * criterion(output_flat, targets).data  # expect: fix
    return total_loss[0] / len(data_source)


def train():
    total_loss = 0
    for batch, i in enumerate(range(0, 100, 35)):
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, 10), targets)
        loss.backward()
        for p in model.parameters():
            p.data.add_(-lr, p.grad.data)  # expect: fix, fix
        total_loss += loss.data  # expect: fix
