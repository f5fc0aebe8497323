import torch

a = torch.ones(2, 3)
b = a + a  # @add
print(b)
