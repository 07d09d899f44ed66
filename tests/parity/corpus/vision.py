"""torchvision pretrained= with literal values (TorchFix TOR201)."""
import torchvision
from torchvision.models import resnet50
from torchvision.models.detection import fasterrcnn_resnet50_fpn

backbone = resnet50(pretrained=True)
scratch = torchvision.models.vgg16(pretrained=False)
detector = fasterrcnn_resnet50_fpn(pretrained=True, pretrained_backbone=False)
