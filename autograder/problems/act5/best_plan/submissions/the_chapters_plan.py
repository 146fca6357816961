# expect: FAIL
# devices: cpu cuda
# The chapter's plan for 70B on 1,024 GPUs, returned for every model and cluster: on any other
# number of GPUs its tp * pp * dp is not the cluster's size.
def best_plan(model, cluster):
    return {"tp": 8, "pp": 8, "dp": 16, "zero": 1, "micro_batch": 1}
