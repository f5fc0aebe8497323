"""A DataLoader with fork workers (argv[1], default 2) over 8 items whose __getitem__ calls
torch.randn; with "crash" as argv[2], the worker loading item 5 dies of SIGSEGV in C."""

import sys

import mixdbg_testext as ext
import torch
from finish import finish
from torch.utils.data import DataLoader, Dataset

CRASH = sys.argv[2:] == ["crash"]


class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if CRASH and i == 5:  # @getitem
            ext.crash(0)  # @crash
        return torch.randn(2)  # @randn


if __name__ == "__main__":
    workers = int(sys.argv[1]) if sys.argv[1:] else 2
    loader = DataLoader(Items(), batch_size=2, num_workers=workers, multiprocessing_context="fork")
    finish(f"items {sum(batch.shape[0] for batch in loader)}")  # @loop
