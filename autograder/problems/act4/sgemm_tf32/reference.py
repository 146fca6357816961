"""SGEMM step 10, TF32 tensor cores: C = A @ B from float32 inputs. The inputs, the float64 reference,
the traffic and the FLOPs are the SGEMM steps' (autograder/problems/act4/matmul.py); the library is
cuBLAS with TF32 on, and cuBLAS SGEMM with TF32 off is timed beside it, not graded. ``error_model``
(inputs rounded to TF32, float32 sums) sets the tolerance where cuBLAS is more exact than TF32."""

from ..matmul import describe_size, sgemm_library
from ..matmul import matmul_flops as flops
from ..matmul import sgemm_bytes as bytes_moved
from ..matmul import sgemm_inputs as make_inputs
from ..matmul import sgemm_reference as reference
from ..matmul import sgemm_tf32_error_model as error_model
from ..matmul import sgemm_tf32_library as library

extra_libraries = (("cuBLAS SGEMM, TF32 off (the CUDA cores)", sgemm_library),)

__all__ = ["make_inputs", "reference", "library", "extra_libraries", "error_model", "bytes_moved", "flops", "describe_size"]
