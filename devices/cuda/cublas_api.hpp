// cuBLAS, opened with dlopen when a GPU first needs it rather than linked.
//
// Linking libcublas made every program using the library pay for cuBLAS's
// static initializers (cublasLt's) at start, GPU or not: measured here, about
// 0.4 s of CPU per process (a test of a few milliseconds took 0.45 s; the CLI
// tests 12 s instead of 0.8). Only the entry points the GPU kernels call are
// looked up; their types come from cublas_v2.h, so they cannot drift.
#pragma once

#include <cublas_v2.h>

#include "core/status.hpp"

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

}  // namespace actorflow
