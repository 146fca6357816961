# expect: REJECT
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: ctypes.dlopen
# Makes room under the measured baseline instead of using less: the pages of the program's own code
# (libtorch and the rest, mapped from files) are dropped with madvise(MADV_DONTNEED), so the resident
# set falls by a hundred MB or more and the activations of an honest but insufficient step (every
# other block checkpointed, 57% of the plain step) fit under the high-water mark the step started at.
# File pages are the program, not the step's data: the judge also follows anonymous memory.
# The sealed worker (autograder.seal) refuses it the C library it calls madvise through and rejects the
# grading.
import ctypes

from torch.utils.checkpoint import checkpoint

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
MADV_DONTNEED = 4


def _drop_code_pages() -> None:
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            # Clean, executable file pages come back from the file when they run again.
            if len(parts) >= 6 and parts[1] == "r-xp" and parts[5].startswith("/"):
                start, end = (int(v, 16) for v in parts[0].split("-"))
                _libc.madvise(start, end - start, MADV_DONTNEED)


def lean_training_step(model, x):
    _drop_code_pages()
    h = x
    for index, block in enumerate(model.blocks):
        h = checkpoint(block, h, use_reentrant=False) if index % 2 == 0 else block(h)
    _drop_code_pages()
    loss = h.square().mean()
    loss.backward()
    return loss
