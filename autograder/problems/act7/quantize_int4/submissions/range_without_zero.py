# expect: FAIL
# devices: cpu cuda
# The group's range is [min, max] without 0 in it: the zero point of an all-positive group is negative and clamps to 0, and its levels no longer cover the group.
import torch


def quantize_int4(w, group_size):
    n, k = w.shape
    groups = w.reshape(n, k // group_size, group_size)
    lo, hi = groups.amin(dim=2), groups.amax(dim=2)
    scale = (hi - lo) / 15
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    zero = torch.clamp(torch.round(-lo / scale), 0, 15)
    q = torch.clamp(torch.round(groups / scale[..., None]) + zero[..., None], 0, 15).to(torch.uint8).reshape(n, k)
    return q[:, 0::2] | (q[:, 1::2] << 4), scale, zero.to(torch.uint8)
