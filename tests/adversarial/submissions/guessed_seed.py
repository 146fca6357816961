# expect: FAIL
# problem: act0.vector_add
# devices: cpu cuda
# Regenerates "the" inputs from a guessed seed instead of reading the ones it was given.
import torch


def vector_add(x, y):
    generator = torch.Generator(device=x.device).manual_seed(0)
    a = torch.randn(x.numel(), generator=generator, device=x.device)
    b = torch.randn(x.numel(), generator=generator, device=x.device)
    return (a.double() + b.double()).float()
