# source: https://github.com/eriklindernoren/PyTorch-YOLOv3/blob/084ba15129d2521cc8b4cd847d68b81dd7434df3/models.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
import numpy as np
import torch
import torch.nn as nn


class Darknet(nn.Module):
    def load_darknet_weights(self, weights_path):
        weights = np.fromfile(fp, dtype=np.float32)
        for i, (module_def, module) in enumerate(zip(self.module_defs, self.module_list)):
            conv_layer = module[0]
            bn_layer = module[1]
            num_b = bn_layer.bias.numel()
            bn_b = torch.from_numpy(weights[ptr: ptr + num_b]).view_as(bn_layer.bias)
            bn_layer.bias.data.copy_(bn_b)  # expect: fix
            bn_layer.weight.data.copy_(bn_w)  # expect: fix
            bn_layer.running_mean.data.copy_(bn_rm)  # expect: fix
            bn_layer.running_var.data.copy_(bn_rv)  # expect: fix
            conv_layer.bias.data.copy_(conv_b)  # expect: fix
            conv_layer.weight.data.copy_(conv_w)  # expect: fix

    def save_weights(self, path, cutoff=-1):
        for i, (module_def, module) in enumerate(zip(self.module_defs[:cutoff], self.module_list[:cutoff])):
            conv_layer = module[0]
            bn_layer = module[1]
            bn_layer.bias.data.cpu().numpy().tofile(fp)  # expect: fix, leave
            bn_layer.weight.data.cpu().numpy().tofile(fp)  # expect: fix, leave
            bn_layer.running_mean.data.cpu().numpy().tofile(fp)  # expect: fix, leave
            bn_layer.running_var.data.cpu().numpy().tofile(fp)  # expect: fix, leave
            conv_layer.bias.data.cpu().numpy().tofile(fp)  # expect: fix, leave
            conv_layer.weight.data.cpu().numpy().tofile(fp)  # expect: fix, leave
