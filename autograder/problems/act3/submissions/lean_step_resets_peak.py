# expect: FAIL
# problem: act3.lean_step
# devices: cpu cuda
# entry: lean_training_step
# says: clear_refs
# slow: Landlock refusing clear_refs is tested directly (test_act3_memory), and lean_step_spills_to_disk checks it is on in a grading
# Cheat: the plain step, then "5" written to /proc/self/clear_refs to reset the kernel's high-water
# mark of resident memory, so that the peak looks like what is left after the step.
def lean_training_step(model, x):
    loss = model(x).square().mean()
    loss.backward()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return loss
