# expect: REJECT
# devices: cpu cuda
# entry: sgemm_tf32
# The learner's TF32 matmul on a B^T that PyTorch wrote (B.t().contiguous(): a library copy kernel),
# where the exercise asks for the learner's own transpose: no kernel of the learner's reads B.
import os

import torch
import triton
import triton.language as tl


def sgemm_tf32_configs():
    """The block shapes the autotuner tries on a GPU. Under the Triton interpreter (no GPU) there is
    nothing to time, so the list collapses to one small configuration."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return [triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4})]
    return [
        # 128x256 tiles of 4-byte inputs: 48 KB per pipeline stage, three stages in an H100's 228 KB.
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=8),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=4),
        # A deeper K step: half as many barriers per tile, 64 KB per stage.
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
        # 24 KB per stage: fits the 100 KB of an sm_86 or sm_89 GPU.
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=4),
    ]

def shared_memory_bytes(config, element_size=4):
    """Shared memory the pipeline needs: one A tile and one B tile per stage."""
    kw = config.kwargs
    return config.num_stages * (kw["BLOCK_SIZE_M"] + kw["BLOCK_SIZE_N"]) * kw["BLOCK_SIZE_K"] * element_size

def prune_configs(configs, named_args, **kwargs):
    """Keep the configurations that fit this GPU's shared memory; small products, which are
    launch-bound and cannot tell them apart, get the smallest tile without a search."""
    if len(configs) == 1 or named_args["M"] * named_args["N"] < 1024 * 1024:
        return [min(configs, key=lambda c: c.kwargs["BLOCK_SIZE_M"] * c.kwargs["BLOCK_SIZE_N"])]
    device = named_args["a_ptr"].device.index or 0
    limit = triton.runtime.driver.active.utils.get_device_properties(device)["max_shared_mem"]
    return [c for c in configs if shared_memory_bytes(c) <= limit] or configs[-1:]

@triton.autotune(configs=sgemm_tf32_configs(), key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune_configs})
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_SIZE_K"] == 0})
@triton.jit
def sgemm_tf32_kernel(
    a_ptr, bt_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr,
):
    """C = A @ B from A (M x K) and B^T (N x K, K contiguous). Program pid computes one
    BLOCK_SIZE_M x BLOCK_SIZE_N tile of C, visiting tiles in groups of GROUP_SIZE_M rows so that
    programs running together share panels of A and B in L2."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    in_group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // in_group) * GROUP_SIZE_M
    group_m = min(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m

    # Rows and columns past the edge wrap instead of being masked: the loads stay in bounds and keep
    # their contiguity (a select against 0 hides it and splits the loads); the store is masked.
    offs_m = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_n = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    # Both tiles are K-major: a Hopper wgmma reads 32-bit (TF32) operands from shared memory only with
    # K contiguous (the transposed layouts are for 16-bit types), so the B tile is loaded from B^T as
    # BLOCK_SIZE_N x BLOCK_SIZE_K and handed to tl.dot transposed, a change of view, not of memory.
    bt_ptrs = bt_ptr + offs_n[:, None] * stride_bn + offs_k[None, :] * stride_bk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            bt = tl.load(bt_ptrs)
        else:
            k_left = K - k * BLOCK_SIZE_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            bt = tl.load(bt_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        acc = tl.dot(a, tl.trans(bt), acc, input_precision="tf32")
        a_ptrs += BLOCK_SIZE_K * stride_ak
        bt_ptrs += BLOCK_SIZE_K * stride_bk

    rows = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    cols = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))

def sgemm_tf32(A, B):
    M, K = A.shape
    N = B.shape[1]
    Bt = B.t().contiguous()
    C = torch.empty((M, N), device=A.device, dtype=torch.float32)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)

    sgemm_tf32_kernel[grid](A, Bt, C, M, N, K, A.stride(0), A.stride(1), Bt.stride(0), Bt.stride(1), C.stride(0), C.stride(1))
    return C
