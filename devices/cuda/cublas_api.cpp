#include "actorflow/devices/cuda/cublas_api.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

namespace actorflow {

namespace {

#define AF_STRINGIFY2(x) #x
#define AF_STRINGIFY(x) AF_STRINGIFY2(x)
constexpr char kLibrary[] = "libcublas.so." AF_STRINGIFY(CUBLAS_VER_MAJOR);
constexpr char kLtLibrary[] = "libcublasLt.so." AF_STRINGIFY(CUBLAS_VER_MAJOR);

template <class Fn>
Status Lookup(void* lib, const char* symbol, Fn* out, const char* library = kLibrary) {
  *out = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (*out) return Status::OK();
  const char* why = dlerror();
  return errors::Unavailable(library, " has no ", symbol, ": ", why ? why : "not found");
}

// The loader's search path first, then the directory of the CUDA runtime we
// are linked with (where the toolkit keeps cuBLAS too).
void* Open(const char* library = kLibrary) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) || !info.dli_fname) return nullptr;
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return nullptr;
  path = path.substr(0, slash + 1) + library;
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

Status Load(CublasApi* api) {
  void* lib = Open();  // never closed: handles live as long as the process
  if (!lib) {
    const char* why = dlerror();
    return errors::Unavailable("cannot load cuBLAS (", kLibrary, ") for MatMul on the GPU: ", why ? why : "?");
  }
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasCreate_v2", &api->create));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasDestroy_v2", &api->destroy));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasSetStream_v2", &api->set_stream));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasSgemm_v2", &api->sgemm));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasGetStatusString", &api->status_string));
  return Status::OK();
}

Status LoadLt(CublasLtApi* api) {
  void* lib = Open(kLtLibrary);  // never closed
  if (!lib) {
    const char* why = dlerror();
    return errors::Unavailable("cannot load cuBLASLt (", kLtLibrary, "): ", why ? why : "?");
  }
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtCreate", &api->create, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtDestroy", &api->destroy, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulDescCreate", &api->desc_create, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulDescDestroy", &api->desc_destroy, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulDescSetAttribute", &api->desc_set, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatrixLayoutCreate", &api->layout_create, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatrixLayoutDestroy", &api->layout_destroy, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulPreferenceCreate", &api->pref_create, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulPreferenceDestroy", &api->pref_destroy, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulPreferenceSetAttribute", &api->pref_set, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmulAlgoGetHeuristic", &api->heuristic, kLtLibrary));
  AF_RETURN_IF_ERROR(Lookup(lib, "cublasLtMatmul", &api->matmul, kLtLibrary));
  return Status::OK();
}

}  // namespace

Status LoadCublasLt(const CublasLtApi** out) {
  static CublasLtApi api;
  static const Status loaded = LoadLt(&api);
  if (loaded.ok()) *out = &api;
  return loaded;
}

Status LoadCublas(const CublasApi** out) {
  static CublasApi api;
  static const Status loaded = Load(&api);  // once; C++ makes the first call's initialization thread-safe
  if (loaded.ok()) *out = &api;
  return loaded;
}

}  // namespace actorflow
