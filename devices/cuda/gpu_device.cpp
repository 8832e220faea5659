#include "actorflow/devices/cuda/gpu_device.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/cuda/cublas_api.hpp"
#include "actorflow/devices/cuda/gpu_allocator.hpp"
#include "actorflow/devices/cuda/gpu_event_poller.hpp"
#include "actorflow/devices/deferred_release_allocator.hpp"
#include "actorflow/devices/device_factory.hpp"

namespace actorflow {

namespace {

// The devices' copy-in allocators: never destroyed (a tensor may free its
// block after its device is gone), but reachable.
DeferredReleaseAllocator* KeepForever(std::unique_ptr<DeferredReleaseAllocator> a) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::unique_ptr<DeferredReleaseAllocator>>();
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::move(a));
  return kept->back().get();
}

}  // namespace

Status CudaStatus(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::OK();
  cudaGetLastError();  // reported here: not again by the next launch on this thread
  return errors::Internal(what, ": ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

int GpuCount() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: this process has no GPUs
      n = 0;
    }
    return n;
  }();
  return count;
}

GpuDevice::GpuDevice(const std::string& task_name, int ordinal, ComputePool* pool)
    : Device(task_name + "/device:GPU:" + std::to_string(ordinal), DEVICE_GPU,
             gpu_allocator(ordinal), pool),
      ordinal_(ordinal),
      short_name_("GPU:" + std::to_string(ordinal)),
      host_allocator_(gpu_host_allocator()),
      poller_(std::make_unique<GpuEventPoller>(ordinal, pool)),
      normal_allocator_(gpu_allocator(ordinal)) {}

Status GpuDevice::Create(const std::string& task_name, int ordinal, ComputePool* pool,
                         std::unique_ptr<GpuDevice>* out) {
  std::unique_ptr<GpuDevice> d(new GpuDevice(task_name, ordinal, pool));
  AF_RETURN_IF_ERROR(d->Activate());
  AF_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&d->compute_, cudaStreamNonBlocking),
                                d->short_name_ + ": creating the compute stream"));
  AF_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&d->h2d_, cudaStreamNonBlocking),
                                d->short_name_ + ": creating the host-to-device stream"));
  AF_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&d->d2h_, cudaStreamNonBlocking),
                                d->short_name_ + ": creating the device-to-host stream"));
  AF_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&d->order_event_, cudaEventDisableTiming),
                                d->short_name_ + ": creating the streams' ordering event"));
  GpuDevice* raw = d.get();
  d->copy_in_ = KeepForever(std::make_unique<DeferredReleaseAllocator>(
      gpu_copy_in_pool(ordinal), "gpu_" + std::to_string(ordinal) + "_copy_in",
      [raw](DeferredReleaseAllocator::Release release) {
        int current = -1;  // any thread frees tensors: its current GPU is put back
        const bool known = cudaGetDevice(&current) == cudaSuccess;
        if (!raw->Activate().ok()) return release();  // no GPU to order against: nothing runs on it
        raw->ThenRun(raw->compute_, std::move(release));
        if (known && current != raw->ordinal_) cudaSetDevice(current);
      }));
  *out = std::move(d);
  return Status::OK();
}

GpuDevice::~GpuDevice() {
  const bool active = Activate().ok();
  if (active)
    for (cudaStream_t s : {compute_, h2d_, d2h_})
      if (s) cudaStreamSynchronize(s);
  if (copy_in_) copy_in_->SetDefer(nullptr);  // the compute stream is idle: later frees are safe at once
  if (!active) return;
  poller_.reset();  // its pending functions run: the streams' work is over
  if (blas_) blas_api_->destroy(blas_);  // before the stream it is bound to
  if (lt_) lt_api_->destroy(lt_);
  if (lt_workspace_) home_allocator()->DeallocateRaw(lt_workspace_, kGemmWorkspaceBytes);
  for (cudaStream_t s : {compute_, h2d_, d2h_})
    if (s) cudaStreamDestroy(s);
  if (order_event_) cudaEventDestroy(order_event_);
}

Status GpuDevice::WaitFor(cudaStream_t waiter, cudaStream_t producer) {
  std::lock_guard<std::mutex> lock(order_mu_);  // the wait takes the event as last recorded: record and wait as one
  AF_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(order_event_, producer), short_name_ + ": cudaEventRecord"));
  return CudaStatus(cudaStreamWaitEvent(waiter, order_event_, 0), short_name_ + ": cudaStreamWaitEvent");
}

Status GpuDevice::Activate() const {
  const cudaError_t e = cudaSetDevice(ordinal_);  // on every kernel: no message unless it failed
  return e == cudaSuccess ? Status::OK() : CudaStatus(e, short_name_ + ": cudaSetDevice");
}

Status GpuDevice::Blas(const CublasApi** api, cublasHandle_t* handle) {
  std::lock_guard<std::mutex> lock(blas_mu_);
  if (!blas_) {
    const CublasApi* lib;
    AF_RETURN_IF_ERROR(LoadCublas(&lib));
    AF_RETURN_IF_ERROR(Activate());
    cublasHandle_t h = nullptr;
    cublasStatus_t s = lib->create(&h);
    if (s != CUBLAS_STATUS_SUCCESS) return errors::Internal(short_name_, ": cublasCreate: ", lib->status_string(s));
    s = lib->set_stream(h, compute_);
    if (s != CUBLAS_STATUS_SUCCESS) {
      lib->destroy(h);
      return errors::Internal(short_name_, ": cublasSetStream: ", lib->status_string(s));
    }
    blas_api_ = lib;
    blas_ = h;
  }
  *api = blas_api_;
  *handle = blas_;
  return Status::OK();
}

Status GpuDevice::BlasLt(const CublasLtApi** api, cublasLtHandle_t* handle, void** workspace,
                         size_t* workspace_bytes) {
  std::lock_guard<std::mutex> lock(blas_mu_);
  if (!lt_) {
    const CublasLtApi* lib;
    AF_RETURN_IF_ERROR(LoadCublasLt(&lib));
    AF_RETURN_IF_ERROR(Activate());
    void* ws = home_allocator()->AllocateRaw(256, kGemmWorkspaceBytes);
    if (!ws) return errors::ResourceExhausted(short_name_, ": no memory for the GEMM workspace (32 MiB)");
    cublasLtHandle_t h = nullptr;
    if (lib->create(&h) != CUBLAS_STATUS_SUCCESS) {
      home_allocator()->DeallocateRaw(ws, kGemmWorkspaceBytes);
      return errors::Internal(short_name_, ": cublasLtCreate failed");
    }
    lt_api_ = lib;
    lt_ = h;
    lt_workspace_ = ws;
  }
  *api = lt_api_;
  *handle = lt_;
  *workspace = lt_workspace_;
  *workspace_bytes = kGemmWorkspaceBytes;
  return Status::OK();
}

namespace {

struct HostCallback {
  ComputePool* pool;
  std::function<void(cudaError_t)> fn;
};

// Runs on a CUDA driver thread, where no CUDA call is allowed and blocking
// stalls the stream: it only hands the function (and the stream's status) to
// the compute pool. Unlike cudaLaunchHostFunc's, a stream callback is called
// after a device error too, with that error: a faulting kernel fails its
// step instead of leaving it waiting for ever.
void CUDART_CB RunOnPool(cudaStream_t, cudaError_t status, void* arg) {
  auto* cb = static_cast<HostCallback*>(arg);
  try {
    cb->pool->Schedule([fn = std::move(cb->fn), status] { fn(status); });
  } catch (...) {  // no memory for a pool job: the node's step cannot finish
    std::fprintf(stderr, "actorflow: out of memory handing a finished GPU kernel to the compute pool\n");
  }
  delete cb;
}

}  // namespace

namespace {

// ACTORFLOW_GPU_SYNC=callback: stream callbacks instead of the event poller
// (to compare; they stall the stream at each one).
bool UseStreamCallbacks() {
  static const bool use = [] {
    const char* v = std::getenv("ACTORFLOW_GPU_SYNC");
    return v != nullptr && std::string(v) == "callback";
  }();
  return use;
}

}  // namespace

void GpuDevice::ThenRunWithStatus(cudaStream_t stream, std::function<void(cudaError_t)> fn) noexcept {
  // On the compute stream, the check and the event's record are one step
  // under capture_mu_, which BeginCapture and EndCapture take: no event is
  // recorded on the stream while it is captured.
  std::unique_lock<std::mutex> lock(capture_mu_, std::defer_lock);
  if (stream == compute_) {
    lock.lock();  // released before the fallback below, which may run fn here
    if (capturing()) {  // nothing runs while capturing: kept with the captured work
      try {
        after_capture_.push_back(std::move(fn));
        return;
      } catch (...) {  // past the room reserved at BeginCapture, and no memory: the capture fails
        capture_failed_ = true;
        lock.unlock();
        fn(cudaSuccess);  // (what it releases may still be read by work queued before the capture: rare twice over)
        return;
      }
    }
  }
  if (!UseStreamCallbacks() && poller_ && poller_->ThenRun(stream, fn)) return;
  auto* cb = new (std::nothrow) HostCallback{compute_pool(), nullptr};
  if (cb) {
    cb->fn = std::move(fn);
    if (cudaStreamAddCallback(stream, RunOnPool, cb, 0) == cudaSuccess) return;
    cudaGetLastError();
    fn = std::move(cb->fn);
    delete cb;
  }
  // The work must be over before fn releases its buffers (under the lock: no
  // capture may begin on the stream meanwhile).
  const cudaError_t e = cudaStreamSynchronize(stream);
  cudaGetLastError();
  if (lock.owns_lock()) lock.unlock();  // fn may free a tensor, whose release comes back here
  fn(e);
}

void GpuDevice::ThenRun(cudaStream_t stream, std::function<void()> fn) noexcept {
  ThenRunWithStatus(stream, [fn = std::move(fn)](cudaError_t) { fn(); });
}

void GpuDevice::Sync(std::function<void(const Status&)> done) {
  Status s = Activate();  // the actor's thread may have another GPU current
  if (!s.ok()) {
    done(s);
    return;
  }
  ThenRunWithStatus(compute_, [name = short_name_, done = std::move(done)](cudaError_t e) {
    done(e == cudaSuccess ? Status::OK() : CudaStatus(e, name + ": a kernel of the step failed"));
  });
}

namespace {

// A captured step's CUDA graph. The functions kept during its capture (the
// buffers its work reads) run once it is destroyed and the stream has
// passed its last launch.
class CudaGraphWork final : public Device::CapturedWork {
 public:
  CudaGraphWork(GpuDevice* gpu, cudaGraphExec_t exec, std::vector<std::function<void(cudaError_t)>> kept)
      : gpu_(gpu), exec_(exec), kept_(std::move(kept)) {}
  ~CudaGraphWork() override {
    gpu_->Activate();
    cudaGraphExecDestroy(exec_);  // launches already enqueued still run
    for (auto& fn : kept_) gpu_->ThenRunWithStatus(gpu_->compute_stream(), std::move(fn));
  }
  Status Launch() override {
    AF_RETURN_IF_ERROR(gpu_->Activate());
    return CudaStatus(cudaGraphLaunch(exec_, gpu_->compute_stream()), gpu_->short_name() + ": cudaGraphLaunch");
  }

 private:
  GpuDevice* const gpu_;
  const cudaGraphExec_t exec_;
  std::vector<std::function<void(cudaError_t)>> kept_;
};

}  // namespace

Status GpuDevice::BeginCapture(Allocator* arena) {
  AF_RETURN_IF_ERROR(Activate());
  std::lock_guard<std::mutex> lock(capture_mu_);
  if (capturing()) return errors::FailedPrecondition(short_name_, ": a capture is already under way");
  capture_failed_ = false;
  try {
    after_capture_.reserve(4096);  // kept functions need no allocation during the capture
  } catch (...) {
    return errors::ResourceExhausted(short_name_, ": no memory to begin a capture");
  }
  set_allocator(arena);
  set_capturing(true);
  Status s = CudaStatus(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeRelaxed),
                        short_name_ + ": cudaStreamBeginCapture");
  if (!s.ok()) {
    set_capturing(false);
    set_allocator(normal_allocator_);
  }
  return s;
}

Status GpuDevice::EndCapture(std::unique_ptr<CapturedWork>* out) {
  Status s = Activate();
  cudaGraph_t graph = nullptr;
  std::vector<std::function<void(cudaError_t)>> kept;
  {
    std::lock_guard<std::mutex> lock(capture_mu_);
    if (s.ok())
      s = CudaStatus(cudaStreamEndCapture(compute_, &graph),
                     short_name_ + ": the capture was invalidated (cudaStreamEndCapture)");
    set_allocator(normal_allocator_);
    set_capturing(false);
    kept.swap(after_capture_);
    if (s.ok() && capture_failed_) s = errors::ResourceExhausted(short_name_, ": no memory during the capture");
  }
  cudaGraphExec_t exec = nullptr;
  if (s.ok() && graph == nullptr) s = errors::Internal(short_name_, ": the capture recorded no graph");
  if (s.ok()) s = CudaStatus(cudaGraphInstantiate(&exec, graph, 0), short_name_ + ": cudaGraphInstantiate");
  if (graph) cudaGraphDestroy(graph);
  if (s.ok()) {
    try {
      *out = std::make_unique<CudaGraphWork>(this, exec, std::move(kept));
      return Status::OK();
    } catch (...) {
      cudaGraphExecDestroy(exec);
      s = errors::ResourceExhausted(short_name_, ": no memory for the captured graph");
    }
  }
  for (auto& fn : kept) ThenRunWithStatus(compute_, std::move(fn));  // nothing captured will run
  return s;
}

Status GpuDevice::CopyOnDevice(const void* src, void* dst, size_t bytes) {
  AF_RETURN_IF_ERROR(Activate());
  if (bytes == 0) return Status::OK();
  return CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_),
                    short_name_ + ": cudaMemcpyAsync (device to device)");
}

Status GpuDevice::CopyFromHostOn(cudaStream_t stream, const Tensor& src, void* dst) {
  const size_t bytes = src.TotalBytes();
  if (bytes == 0) return Status::OK();
  AF_RETURN_IF_ERROR(Activate());
  if (capturing() && stream == compute_)
    return errors::Unimplemented(short_name_, ": a copy of host memory into the GPU cannot be captured (its source ",
                                 "would be read again, unchanged, at each launch)");
  Tensor staged = src;  // pinned already: one transfer, the tensor kept until it ran
  const TensorBuffer* buf = src.buffer();
  if (buf == nullptr || buf->allocator() != host_allocator_) {
    AF_RETURN_IF_ERROR(Tensor::Create(host_allocator_, DT_UINT8, TensorShape{static_cast<int64_t>(bytes)}, &staged)
                           .WithContext("pinned staging buffer on " + short_name_));
    std::memcpy(staged.raw_data(), src.raw_data(), bytes);
  }
  AF_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, staged.raw_data(), bytes, cudaMemcpyHostToDevice, stream),
                                short_name_ + ": cudaMemcpyAsync (host to device)"));
  ThenRun(stream, [staged = std::move(staged)] {});
  return Status::OK();
}

namespace {

std::vector<std::unique_ptr<Device>> CreateGpuDevices(const std::string& task_name, int max_devices,
                                                      ComputePool* pool) {
  std::vector<std::unique_ptr<Device>> out;
  const int n = GpuCount();
  const int want = max_devices < 0 ? n : std::min(n, max_devices);
  for (int i = 0; i < want; ++i) {
    std::unique_ptr<GpuDevice> d;
    Status s = GpuDevice::Create(task_name, i, pool, &d);
    if (!s.ok()) {
      std::fprintf(stderr, "actorflow: GPU:%d is not used: %s\n", i, s.ToString().c_str());
      continue;
    }
    out.push_back(std::move(d));
  }
  return out;
}

const detail::DeviceFactoryRegistrar kGpuFactory(DEVICE_GPU, CreateGpuDevices);

}  // namespace

}  // namespace actorflow
