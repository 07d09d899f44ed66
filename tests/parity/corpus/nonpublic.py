"""Non-public aliases and torchvision transforms (TorchFix TOR104, TOR105, TOR202, TOR203)."""
import torch
import torchvision.models as models
import torchvision.transforms as transforms
from torch.utils.data._utils.collate import default_collate
from torchvision.transforms import v2
from torchvision.transforms.v2 import ToTensor


def collate(batch):
    return torch.utils.data._utils.collate.default_convert(default_collate(batch))


pipeline = v2.Compose([v2.ToTensor(), ToTensor()])
net = models.resnet18()
aug = transforms.RandomCrop(4)
