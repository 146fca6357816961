# expect: REJECT ERROR
# problem: act0.vector_add
# devices: cuda
# Declares a Triton kernel named like the one torch.compile generates, hoping the generated kernel
# passes as its own. Generated names never count as the learner's.
import torch
import triton
import triton.language as tl


@triton.jit
def triton_poi_fused_add_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    pass


_compiled = torch.compile(lambda x, y: x + y)


def vector_add(x, y):
    return _compiled(x, y)
