"""Act 5: multi-GPU. Collectives written from send and recv, the alpha-beta cost model, data and
tensor parallelism run as N ranks of a torch.distributed group (autograder.distributed), and a 3-D
parallel plan; registered when autograder.problems is imported."""
