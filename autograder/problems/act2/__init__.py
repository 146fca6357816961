"""Act 2: performance models. Pure-Python exercises with exact answers (the FLOPs and minimum bytes
of common operations, the roofline model, regime classification, transformer inference arithmetic),
one folder each, every case drawn fresh from the seed after a few fixed edge cases; two
exercises whose timings are checked against the grader's own measurement of this GPU
(``measure_point``, ``classify_op``); and one prediction graded twice, exactly on any machine
(``predict_cost``) and against the grader's timing of this GPU (``predict_time``). The answers they
share are in ``models`` and ``predictions``, the operations the measured exercises time in
``operations``.
"""
