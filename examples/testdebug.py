import torch

d = torch.randn(2, 3)
print(d)
