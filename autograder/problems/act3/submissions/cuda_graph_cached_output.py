# expect: FAIL
# problem: act3.cuda_graph
# devices: cuda
# entry: make_graphed
# Captures the step but never copies the new input into the captured one: every replay recomputes
# the example's answer.
import torch


def make_graphed(step, example):
    static_input = example.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(static_input)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = step(static_input)

    def replay(x):
        graph.replay()
        return static_output

    return replay
