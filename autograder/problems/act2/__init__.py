"""Act 2: performance models. Pure-Python exercises with exact answers (the FLOPs and minimum bytes
of common operations, the roofline model, regime classification, transformer inference arithmetic),
one folder each, every case drawn fresh from the seed after a few fixed edge cases; and two
exercises whose timings are checked against the grader's own measurement of this GPU
(``measure_point``, ``classify_op``). The answers they share are in ``models``, the operations the
measured exercises time in ``operations``.
"""
