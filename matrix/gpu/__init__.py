"""GPU harness for the draft-attention matrix (edge package).

Only the modules that say so import torch, flashinfer or sglang, and they do it
inside functions, so `matrix.gpu` itself imports on a machine without torch.
"""
