# expect: FAIL
# problem: act3.cuda_graph
# devices: cuda
# entry: make_graphed
# Reads a value back to the CPU inside the captured region: the capture fails, and the report says why.
import torch


def make_graphed(step, example):
    static_input = example.clone()
    step(static_input)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = step(static_input)
        scale = static_output.abs().max().item()
        static_output = static_output / scale * scale

    def replay(x):
        static_input.copy_(x)
        graph.replay()
        return static_output

    return replay
