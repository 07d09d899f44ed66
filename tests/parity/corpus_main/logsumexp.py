"""TOR108's shapes (TorchFix main), written for this corpus."""
import torch

scores = torch.randn(4, 7)

lse = torch.log(torch.sum(torch.exp(scores), 1, keepdim=True))
lse = torch.log(torch.sum(torch.exp(scores), dim=-1, keepdim=True))
lse = torch.log(torch.sum(torch.exp(scores / 0.5), 1))
lse = torch.log(torch.sum(torch.exp(1.0 - scores), dim=(0, 1)))

# not the pattern
other = torch.log(torch.sum(torch.exp(scores), 1) + 1.0)
other = torch.log(torch.sum(torch.exp(scores) * 2, 1))
other = torch.log(3 + scores)
other = torch.sum(torch.log(torch.exp(scores)), 1)

# no dim: logsumexp has no all-dimensions form (pytorch/pytorch#144339)
total = torch.log(torch.sum(torch.exp(scores)))
total = torch.log(torch.sum(torch.exp(scores), None))
total = torch.log(torch.sum(torch.exp(scores), dim=None, keepdim=True))
