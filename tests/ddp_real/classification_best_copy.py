"""Reduced from bearpaw/pytorch-classification, commit 24f1c456f48c78133088c4eefd182ca9e6199b03,
cifar.py. Module-level arguments and `state = {k: v for k, v in args._get_kwargs()}` (the
learning rate the schedule changes), a `main()` that makes the checkpoint folder, builds
inline loaders, wraps with `torch.nn.DataParallel(model).cuda()`, passes the training loader
to `train(...)` every epoch, and saves through `save_checkpoint()`, which copies the best
checkpoint with `shutil.copyfile` right after `torch.save`. Reduced: a small MLP and synthetic
data in place of the CIFAR models and data; no `Logger` (utils/logger.py: a class of another
module that keeps log.txt open, not followed by the rule), progress `Bar`, `savefig`, resume
or evaluate paths; `shuffle=False` so that the runs compare weight for weight; `.cuda()` on
the wrapper and `targets.cuda(async=True)` (a syntax error today) dropped, `Variable` kept,
`loss.item()` for `loss.data[0]`; a fixed seed; the final weights saved for the harness."""
import argparse
import os
import random
import shutil

import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data as data

parser = argparse.ArgumentParser(description='PyTorch CIFAR10/100 Training')
parser.add_argument('--epochs', default=3, type=int, metavar='N',
                    help='number of total epochs to run')
parser.add_argument('--start-epoch', default=0, type=int, metavar='N',
                    help='manual epoch number (useful on restarts)')
parser.add_argument('--train-batch', default=8, type=int, metavar='N',
                    help='train batchsize')
parser.add_argument('--test-batch', default=8, type=int, metavar='N',
                    help='test batchsize')
parser.add_argument('--lr', '--learning-rate', default=0.1, type=float,
                    metavar='LR', help='initial learning rate')
parser.add_argument('--schedule', type=int, nargs='+', default=[2],
                    help='Decrease learning rate at these epochs.')
parser.add_argument('--gamma', type=float, default=0.1, help='LR is multiplied by gamma on schedule.')
parser.add_argument('--momentum', default=0.9, type=float, metavar='M',
                    help='momentum')
parser.add_argument('--weight-decay', '--wd', default=5e-4, type=float,
                    metavar='W', help='weight decay (default: 1e-4)')
parser.add_argument('-c', '--checkpoint', default='checkpoint', type=str, metavar='PATH',
                    help='path to save checkpoint (default: checkpoint)')
parser.add_argument('--manualSeed', type=int, default=7, help='manual seed')
args = parser.parse_args()
state = {k: v for k, v in args._get_kwargs()}

use_cuda = torch.cuda.is_available()

# Random seed
if args.manualSeed is None:
    args.manualSeed = random.randint(1, 10000)
random.seed(args.manualSeed)
torch.manual_seed(args.manualSeed)

best_acc = 0  # best test accuracy


def main():
    global best_acc
    start_epoch = args.start_epoch  # start from epoch 0 or last checkpoint epoch

    if not os.path.isdir(args.checkpoint):
        os.makedirs(args.checkpoint)

    # Data
    print('==> Preparing dataset')
    inputs = torch.randn(48, 10)
    labels = inputs[:, :4].argmax(1)
    trainset = data.TensorDataset(inputs[:32], labels[:32])
    trainloader = data.DataLoader(trainset, batch_size=args.train_batch, shuffle=False, num_workers=0)

    testset = data.TensorDataset(inputs[32:], labels[32:])
    testloader = data.DataLoader(testset, batch_size=args.test_batch, shuffle=False, num_workers=0)

    # Model
    print("==> creating model")
    model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 4))

    model = torch.nn.DataParallel(model)
    print('    Total params: %.2fM' % (sum(p.numel() for p in model.parameters())/1000000.0))  # noqa: UP031

    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay)

    # Train and val
    for epoch in range(start_epoch, args.epochs):
        adjust_learning_rate(optimizer, epoch)

        print('\nEpoch: [%d | %d] LR: %f' % (epoch + 1, args.epochs, state['lr']))  # noqa: UP031

        train_loss, train_acc = train(trainloader, model, criterion, optimizer, epoch, use_cuda)
        test_loss, test_acc = test(testloader, model, criterion, epoch, use_cuda)

        # save model
        is_best = test_acc > best_acc
        best_acc = max(test_acc, best_acc)
        save_checkpoint({
                'epoch': epoch + 1,
                'state_dict': model.state_dict(),
                'acc': test_acc,
                'best_acc': best_acc,
                'optimizer' : optimizer.state_dict(),
            }, is_best, checkpoint=args.checkpoint)

    print('Best acc:')
    print(best_acc)
    torch.save(model.module.state_dict(), os.environ["TFC301_WEIGHTS"])


def train(trainloader, model, criterion, optimizer, epoch, use_cuda):
    # switch to train mode
    model.train()

    losses = AverageMeter()
    top1 = AverageMeter()
    for inputs, targets in trainloader:
        inputs, targets = torch.autograd.Variable(inputs), torch.autograd.Variable(targets)

        # compute output
        outputs = model(inputs)
        loss = criterion(outputs, targets)

        # measure accuracy and record loss
        prec1 = accuracy(outputs.data, targets.data, topk=(1,))[0]
        losses.update(loss.item(), inputs.size(0))
        top1.update(prec1.item(), inputs.size(0))

        # compute gradient and do SGD step
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return (losses.avg, top1.avg)


def test(testloader, model, criterion, epoch, use_cuda):
    global best_acc

    losses = AverageMeter()
    top1 = AverageMeter()

    # switch to evaluate mode
    model.eval()

    with torch.no_grad():
        for inputs, targets in testloader:
            # compute output
            outputs = model(inputs)
            loss = criterion(outputs, targets)

            # measure accuracy and record loss
            prec1 = accuracy(outputs.data, targets.data, topk=(1,))[0]
            losses.update(loss.item(), inputs.size(0))
            top1.update(prec1.item(), inputs.size(0))
    return (losses.avg, top1.avg)


def save_checkpoint(state, is_best, checkpoint='checkpoint', filename='checkpoint.pth.tar'):
    filepath = os.path.join(checkpoint, filename)
    torch.save(state, filepath)
    if is_best:
        shutil.copyfile(filepath, os.path.join(checkpoint, 'model_best.pth.tar'))


def adjust_learning_rate(optimizer, epoch):
    global state
    if epoch in args.schedule:
        state['lr'] *= args.gamma
        for param_group in optimizer.param_groups:
            param_group['lr'] = state['lr']


class AverageMeter:
    """Computes and stores the average and current value (utils/misc.py)"""
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def accuracy(output, target, topk=(1,)):
    """Computes the precision@k for the specified values of k (utils/eval.py)"""
    maxk = max(topk)
    batch_size = target.size(0)

    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))

    res = []
    for k in topk:
        correct_k = correct[:k].reshape(-1).float().sum(0)
        res.append(correct_k.mul_(100.0 / batch_size))
    return res


if __name__ == '__main__':
    main()
