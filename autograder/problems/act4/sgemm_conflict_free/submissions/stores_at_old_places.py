# expect: FAIL
# devices: cuda
# The reads spread as step 7 asks (two groups of 4 rows and columns, half a tile apart), but C is
# still stored at step 6's places (8 contiguous rows and columns per thread): every output lands on
# another thread's element, except the first 4x4 block of each thread.
import cupy as cp

SGEMM_CONFLICT_FREE_SOURCE = r"""
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8  // TM and TN are 8: two groups of 4 in each direction
#define NUM_THREADS ((BM / TM) * (BN / TN))  // 256: each thread computes a TM x TN block of C
#define A_LOADS (BM * BK / 4 / NUM_THREADS)  // float4 loads of A per thread per tile: 1
#define B_LOADS (BK * BN / 4 / NUM_THREADS)  // and of B: 1
// Four floats of padding per row of the transposed A tile: the two k rows a warp stores into at
// once (kk = 0 and 4) then start 16 banks apart instead of on the same bank.
#define A_PAD 4

// VEC: one 16-byte load or store per 4 floats. Needs K % 4 == 0 and N % 4 == 0 (every row of A
// and B starts on a 16-byte boundary and a float4 never straddles the edge of a matrix, so a
// float4 is either wholly inside or wholly outside). Otherwise the same kernel runs with four
// masked scalar accesses in place of each float4.
template <bool VEC>
__device__ __forceinline__ float4 load_a4(const float* __restrict__ A, int M, int K, int row, int k) {
    if (VEC) {
        if (row < M && k < K) return *reinterpret_cast<const float4*>(A + (size_t)row * K + k);
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < M) {
        const float* p = A + (size_t)row * K;
        if (k < K) v.x = p[k];
        if (k + 1 < K) v.y = p[k + 1];
        if (k + 2 < K) v.z = p[k + 2];
        if (k + 3 < K) v.w = p[k + 3];
    }
    return v;
}

template <bool VEC>
__device__ __forceinline__ float4 load_b4(const float* __restrict__ B, int K, int N, int k, int col) {
    if (VEC) {
        if (k < K && col < N) return *reinterpret_cast<const float4*>(B + (size_t)k * N + col);
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (k < K) {
        const float* p = B + (size_t)k * N;
        if (col < N) v.x = p[col];
        if (col + 1 < N) v.y = p[col + 1];
        if (col + 2 < N) v.z = p[col + 2];
        if (col + 3 < N) v.w = p[col + 3];
    }
    return v;
}

template <bool VEC>
__device__ __forceinline__ void store_c4(float* __restrict__ C, int M, int N, int row, int col, float4 v) {
    if (row >= M) return;
    float* p = C + (size_t)row * N;
    if (VEC) {
        if (col < N) *reinterpret_cast<float4*>(p + col) = v;
        return;
    }
    if (col < N) p[col] = v.x;
    if (col + 1 < N) p[col + 1] = v.y;
    if (col + 2 < N) p[col + 2] = v.z;
    if (col + 3 < N) p[col + 3] = v.w;
}

template <bool VEC>
__device__ __forceinline__ void sgemm_block(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, const int M, const int N, const int K) {
    // Step 6's kernel, with one change: no two threads of a quarter-warp read different addresses
    // in the same bank. A thread's 8 rows (and 8 columns) are two groups of 4, half a tile apart:
    // rows thread_row*4 + 0..3 and BM/2 + thread_row*4 + 0..3. The 16-byte reads of 8 neighbouring
    // threads from Bs then cover 128 contiguous bytes, all 32 banks once; in step 6 they were
    // 32 bytes apart, 256 bytes over two passes through the banks.
    __shared__ __align__(16) float As[BK][BM + A_PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int thread_col = tid % (BN / TN);  // 0..15
    const int thread_row = tid / (BN / TN);  // 0..15
    const int row_base = blockIdx.y * BM;
    const int col_base = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float reg_a[TM];
    float reg_b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // float4 number idx of the A tile: row idx / (BK/4), k (idx % (BK/4)) * 4; of the B tile:
        // k row idx / (BN/4), column (idx % (BN/4)) * 4. A quarter of step 5's load instructions.
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int idx = tid + i * NUM_THREADS;
            const int m = idx / (BK / 4), kk = (idx % (BK / 4)) * 4;
            const float4 v = load_a4<VEC>(A, M, K, row_base + m, k0 + kk);
            As[kk + 0][m] = v.x;
            As[kk + 1][m] = v.y;
            As[kk + 2][m] = v.z;
            As[kk + 3][m] = v.w;
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int idx = tid + i * NUM_THREADS;
            const int kk = idx / (BN / 4), n = (idx % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[kk][n]) = load_b4<VEC>(B, K, N, k0 + kk, col_base + n);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int r = 0; r < TM / 4; ++r) {
                const float4 v = *reinterpret_cast<const float4*>(&As[k][thread_row * 4 + r * (BM / 2)]);
                reg_a[r * 4 + 0] = v.x;
                reg_a[r * 4 + 1] = v.y;
                reg_a[r * 4 + 2] = v.z;
                reg_a[r * 4 + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < TN / 4; ++r) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[k][thread_col * 4 + r * (BN / 2)]);
                reg_b[r * 4 + 0] = v.x;
                reg_b[r * 4 + 1] = v.y;
                reg_b[r * 4 + 2] = v.z;
                reg_b[r * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(reg_a[i], reg_b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row_base + thread_row * TM + i;
#pragma unroll
        for (int r = 0; r < TN / 4; ++r) {
            const int col = col_base + thread_col * TN + r * 4;
            store_c4<VEC>(C, M, N, row, col, make_float4(acc[i][r * 4 + 0], acc[i][r * 4 + 1], acc[i][r * 4 + 2], acc[i][r * 4 + 3]));
        }
    }
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
sgemm_conflict_free_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                        const int M, const int N, const int K) {
    sgemm_block<true>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
sgemm_conflict_free_scalar_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                               const int M, const int N, const int K) {
    sgemm_block<false>(A, B, C, M, N, K);
}
"""

# One source, two kernels: the float4 path and the masked scalar path for awkward K or N.
BM, BN, TM, TN = 128, 128, 8, 8  # must match the #defines in the source
NUM_THREADS = (BM // TM) * (BN // TN)
sgemm_conflict_free_kernel = cp.RawKernel(SGEMM_CONFLICT_FREE_SOURCE, "sgemm_conflict_free_kernel")
sgemm_conflict_free_scalar_kernel = cp.RawKernel(SGEMM_CONFLICT_FREE_SOURCE, "sgemm_conflict_free_scalar_kernel")


def sgemm_conflict_free(A: cp.ndarray, B: cp.ndarray) -> cp.ndarray:
    """Return C = A @ B computed by sgemm_conflict_free_kernel (or its scalar twin).

    A: (M, K) and B: (K, N) C-contiguous float32 CuPy arrays, any M, N, K >= 1.
    Returns a new (M, N) C-contiguous float32 CuPy array; A and B are left unchanged.
    Accumulate in float32 (no float16, no TF32). float4 loads and stores when K and N are multiples of 4;
    masked scalar ones otherwise.
    """
    M, K = A.shape
    N = B.shape[1]
    C = cp.empty((M, N), dtype=cp.float32)
    # float4 needs 16-byte aligned rows: K and N multiples of 4 (and aligned base pointers).
    aligned = (A.data.ptr | B.data.ptr | C.data.ptr) % 16 == 0
    kernel = sgemm_conflict_free_kernel if (K % 4 == 0 and N % 4 == 0 and aligned) else sgemm_conflict_free_scalar_kernel
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel(grid, (NUM_THREADS,), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C
