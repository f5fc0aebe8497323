"""PyTorch operators: aten::add on two float tensors (an operator breakpoint target whose
tensor arguments have known dtype, shape and values), then aten::randn."""

import torch
from finish import finish


def main():
    x = torch.ones(2, 3)
    y = torch.full((2, 3), 2.0)
    z = x + y  # @add
    w = torch.randn(2, 3)  # @randn
    finish(f"ops sum {z.sum().item()} shape {tuple(w.shape)}")  # @after


if __name__ == "__main__":
    main()
