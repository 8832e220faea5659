// cuBLAS, opened with dlopen when a GPU first needs it rather than linked.
//
// Linking libcublas made every program using the library pay for cuBLAS's
// static initializers (cublasLt's) at start, GPU or not: measured here, about
// 0.4 s of CPU per process (a test of a few milliseconds took 0.45 s; the CLI
// tests 12 s instead of 0.8). Only the entry points the GPU kernels call are
// looked up; their types come from cublas_v2.h, so they cannot drift.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include "actorflow/core/status.hpp"

namespace actorflow {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasGetStatusString) status_string;
};

/// Loads libcublas (the major version of the headers built against) once per
/// process; Unavailable naming the library and the loader's error when it
/// cannot be opened or lacks an entry point. Thread-safe.
Status LoadCublas(const CublasApi** out);

/// cuBLASLt, for matrix products planned once per shape: the descriptors and
/// the algorithm chosen by its heuristic are kept, so a repeated product costs
/// one cublasLtMatmul call (cublasSgemm looks its algorithm up on every call,
/// about 17 us of host time per product measured on an H100 host).
struct CublasLtApi {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
};

/// Loads libcublasLt once per process, as LoadCublas.
Status LoadCublasLt(const CublasLtApi** out);

}  // namespace actorflow
