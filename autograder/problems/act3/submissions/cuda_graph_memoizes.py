# expect: PASS FAIL
# problem: act3.cuda_graph
# devices: cuda
# entry: make_graphed
# speed_at_most: 1.3
# alone: yes
# No graph: each output kept by its input's address, and handed back when that address comes again.
# Timed windows that reused their inputs made every window after the first a dictionary lookup
# (121x eager on a CPU). With new inputs every window, an address that comes again holds another
# input (a wrong answer: FAIL), or none comes again (eager speed: PASS, about 1x).


def make_graphed(step, example):
    seen = {}

    def replay(x):
        key = x.data_ptr()
        if key not in seen:
            seen[key] = step(x)
        return seen[key]

    return replay
