"""Act 1: the GPU hierarchy. Three CuPy RawKernel exercises about mapping work onto the chip and
moving bytes well (2-D indexing with edge masks and a row pitch, a tiled transpose, a warp-shuffle
reduction), one folder each, and 1.5's three exact pure-Python exercises that read a GPU's peaks
from its spec table, one folder each, sharing ``gpu_specs``.

All three kernels are memory-bound (a fraction of a FLOP per byte), so their speed is graded as a
fraction of this GPU's measured copy bandwidth: full marks at 70%, the reference solutions at 85%.
"""
