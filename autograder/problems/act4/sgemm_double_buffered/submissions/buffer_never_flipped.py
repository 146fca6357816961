# expect: FAIL
# devices: cuda
# Double buffering with the buffer index never flipped: each next tile is written into buffer 1 and
# the block keeps computing on buffer 0, the first tile, every step. Right only when K <= BK (1x1x1).
import cupy as cp

SGEMM_DOUBLE_BUFFERED_SOURCE = r"""
// Tile sizes; the tuning script sweeps them with -D options.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2  // blocks per SM to leave registers for: 2 x 256 threads x 128 registers
#endif
#define NUM_THREADS ((BM / TM) * (BN / TN))  // 256 at the defaults
#define RM (TM / 4)                          // each thread's TM x TN block is RM x RN blocks of 4x4
#define RN (TN / 4)
#define A_PAD 4                              // keeps the transposed stores of A free of bank conflicts
#define A_LOADS (BM * BK / 4 / NUM_THREADS)  // float4 loads of A per thread per tile
#define B_LOADS (BK * BN / 4 / NUM_THREADS)

static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 fragments need multiples of 4");
static_assert(A_LOADS * 4 * NUM_THREADS == BM * BK, "the A tile must split evenly into float4 loads");
static_assert(B_LOADS * 4 * NUM_THREADS == BK * BN, "the B tile must split evenly into float4 loads");

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
    // Step 7's kernel, with one change: two buffers of each tile. While the block computes on
    // one, the next tile's loads from global memory are already in flight (into registers), and
    // are written to the other buffer after: the load latency hides behind the FMAs, and one
    // __syncthreads per tile is enough instead of two.
    __shared__ __align__(16) float As[2][BK][BM + A_PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);
    const int ty = tid / (BN / TN);
    const int row_base = blockIdx.y * BM;
    const int col_base = blockIdx.x * BN;

    float4 a_stage[A_LOADS];
    float4 b_stage[B_LOADS];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // Global -> registers: float4 number idx of the A tile is row idx / (BK/4), k (idx % (BK/4)) * 4;
    // of the B tile, k row idx / (BN/4), column (idx % (BN/4)) * 4. Consecutive threads take
    // consecutive 16-byte pieces of a row: coalesced, a quarter of the load instructions.
#define LOAD_TILE(k0)                                                                       \
    _Pragma("unroll") for (int i = 0; i < A_LOADS; ++i) {                                   \
        const int idx = tid + i * NUM_THREADS;                                              \
        a_stage[i] = load_a4<VEC>(A, M, K, row_base + idx / (BK / 4), (k0) + (idx % (BK / 4)) * 4); \
    }                                                                                       \
    _Pragma("unroll") for (int i = 0; i < B_LOADS; ++i) {                                   \
        const int idx = tid + i * NUM_THREADS;                                              \
        b_stage[i] = load_b4<VEC>(B, K, N, (k0) + idx / (BN / 4), col_base + (idx % (BN / 4)) * 4); \
    }
    // Registers -> shared memory buffer `buf`: A transposed (four scalar stores), B as one float4.
#define STORE_TILE(buf)                                                                     \
    _Pragma("unroll") for (int i = 0; i < A_LOADS; ++i) {                                   \
        const int idx = tid + i * NUM_THREADS;                                              \
        const int m = idx / (BK / 4), kk = (idx % (BK / 4)) * 4;                            \
        As[buf][kk + 0][m] = a_stage[i].x;                                                  \
        As[buf][kk + 1][m] = a_stage[i].y;                                                  \
        As[buf][kk + 2][m] = a_stage[i].z;                                                  \
        As[buf][kk + 3][m] = a_stage[i].w;                                                  \
    }                                                                                       \
    _Pragma("unroll") for (int i = 0; i < B_LOADS; ++i) {                                   \
        const int idx = tid + i * NUM_THREADS;                                              \
        *reinterpret_cast<float4*>(&Bs[buf][idx / (BN / 4)][(idx % (BN / 4)) * 4]) = b_stage[i]; \
    }

    const int num_tiles = (K + BK - 1) / BK;
    LOAD_TILE(0)
    STORE_TILE(0)
    __syncthreads();

    float reg_a[TM];
    float reg_b[TN];
    int cur = 0;
    for (int t = 0; t < num_tiles; ++t) {
        const bool has_next = t + 1 < num_tiles;
        if (has_next) {
            LOAD_TILE((t + 1) * BK)
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // A thread's rows are ty*4 + r*(BM/RM) + 0..3 and its columns tx*4 + r*(BN/RN) + 0..3:
            // 4-wide pieces spread across the tile, so the 16-byte reads of consecutive threads
            // from Bs are consecutive (no bank conflicts), and those of A are broadcasts.
#pragma unroll
            for (int r = 0; r < RM; ++r) {
                const float4 v = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4 + r * (BM / RM)]);
                reg_a[r * 4 + 0] = v.x;
                reg_a[r * 4 + 1] = v.y;
                reg_a[r * 4 + 2] = v.z;
                reg_a[r * 4 + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < RN; ++r) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4 + r * (BN / RN)]);
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
        if (has_next) {
            // The other buffer was last read before the previous __syncthreads: safe to overwrite.
            STORE_TILE(cur ^ 1)
        }
        __syncthreads();
    }
#undef LOAD_TILE
#undef STORE_TILE

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row_base + ty * 4 + (i / 4) * (BM / RM) + (i % 4);
#pragma unroll
        for (int r = 0; r < RN; ++r) {
            const int col = col_base + tx * 4 + r * (BN / RN);
            store_c4<VEC>(C, M, N, row, col,
                          make_float4(acc[i][r * 4 + 0], acc[i][r * 4 + 1], acc[i][r * 4 + 2], acc[i][r * 4 + 3]));
        }
    }
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
sgemm_double_buffered_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                        const int M, const int N, const int K) {
    sgemm_block<true>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS)
sgemm_double_buffered_scalar_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                               const int M, const int N, const int K) {
    sgemm_block<false>(A, B, C, M, N, K);
}
"""

# One source, two kernels: the float4 path and the masked scalar path for awkward K or N.
BM, BN, TM, TN = 128, 128, 8, 8  # must match the #defines in the source
NUM_THREADS = (BM // TM) * (BN // TN)
sgemm_double_buffered_kernel = cp.RawKernel(SGEMM_DOUBLE_BUFFERED_SOURCE, "sgemm_double_buffered_kernel")
sgemm_double_buffered_scalar_kernel = cp.RawKernel(SGEMM_DOUBLE_BUFFERED_SOURCE, "sgemm_double_buffered_scalar_kernel")


def sgemm_double_buffered(A: cp.ndarray, B: cp.ndarray) -> cp.ndarray:
    """Return C = A @ B computed by sgemm_double_buffered_kernel (or its scalar twin).

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
    kernel = sgemm_double_buffered_kernel if (K % 4 == 0 and N % 4 == 0 and aligned) else sgemm_double_buffered_scalar_kernel
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel(grid, (NUM_THREADS,), (A, B, C, cp.int32(M), cp.int32(N), cp.int32(K)))
    return C
