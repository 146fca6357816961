# expect: FAIL
# problem: act3.cuda_graph
# devices: cuda
# entry: make_graphed
# says: moved its threads off the CPU core
# No graph: every replay first moves its thread back onto all the CPUs, off the core the grader
# pinned the worker to for timing, so that the eager step runs wherever the scheduler finds room
# while the grader's own eager loop stays on its core.
import os


def make_graphed(step, example):
    everywhere = set(range(os.cpu_count()))

    def replay(x):
        os.sched_setaffinity(0, everywhere)
        return step(x)

    return replay
