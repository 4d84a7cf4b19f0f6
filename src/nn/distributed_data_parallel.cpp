// DistributedDataParallel: buckets of gradients all-reduced while backward runs.
//
// The Reducer owns the per-step state. A post-accumulate-grad hook on every parameter copies
// the new gradient into its bucket's flat buffer; when a bucket is complete, and every bucket
// before it has been started, its all-reduce starts. A callback queued on the first hook of a
// backward pass runs when the pass ends: it completes buckets whose parameters got no gradient
// (with zeros), waits for every reduction, and copies the averages back into grad().
//
// Buckets follow the reverse of parameters(), which is roughly the order backward produces
// gradients (last layer first), and are started strictly in order, so every rank issues the
// same collectives in the same order whatever order its hooks fire in.
#include <algorithm>

#include "core/check.h"
#include "ember/autograd.h"
#include "ember/distributed.h"
#include "ember/factories.h"
#include "ember/nn/parallel.h"

namespace ember::nn {

namespace {
constexpr double kFirstBucketMiB = 1.0;  // PyTorch's _DEFAULT_FIRST_BUCKET_BYTES
}  // namespace

class DistributedDataParallel::Reducer {
 public:
  Reducer(DistributedDataParallel& owner, std::vector<Tensor> params, double cap_mib)
      : owner_(owner), params_(std::move(params)) {
    assign_buckets(cap_mib);
    for (size_t i = 0; i < params_.size(); ++i) {
      hooks_.push_back(register_post_accumulate_grad_hook(params_[i], [this, i](const Tensor&) { on_gradient(i); }));
    }
  }
  ~Reducer() {
    for (HookHandle& h : hooks_) h.remove();
  }
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  std::vector<int64_t> bucket_sizes() const {
    std::vector<int64_t> sizes;
    for (const Bucket& b : buckets_) sizes.push_back(b.numel);
    return sizes;
  }

  // A backward pass that threw after some hooks ran never reached its final callback: its
  // started reductions are finished (every rank started the same ones, in the same order) and
  // the pass's state dropped, so that the next pass starts clean. Called before each forward.
  void recover_from_failed_backward() {
    if (!in_backward_) return;
    in_backward_ = false;
    for (Bucket& b : buckets_) {
      if (b.started) b.work.wait();
      b.started = false;
    }
  }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // where each one's gradient starts in `flat`
    int64_t numel = 0;
    Tensor flat;  // the gradients, contiguous, on the parameters' device and in their dtype
    size_t pending = 0;
    distributed::Work work;
    bool started = false;
  };

  void assign_buckets(double cap_mib) {
    location_.resize(params_.size());
    double cap_bytes = std::min(kFirstBucketMiB, cap_mib) * 1024 * 1024;
    for (size_t k = params_.size(); k-- > 0;) {
      const Tensor& p = params_[k];
      const auto bytes = static_cast<double>(p.numel() * static_cast<int64_t>(element_size(p.dtype())));
      bool fresh = buckets_.empty();
      if (!fresh) {
        const Tensor& first = params_[buckets_.back().params.front()];
        const double held =
            static_cast<double>(buckets_.back().numel * static_cast<int64_t>(element_size(first.dtype())));
        fresh = first.dtype() != p.dtype() || first.device() != p.device() || held + bytes > cap_bytes;
        if (fresh) cap_bytes = cap_mib * 1024 * 1024;
      }
      if (fresh) buckets_.emplace_back();
      Bucket& b = buckets_.back();
      location_[k] = {buckets_.size() - 1, b.params.size()};
      b.params.push_back(k);
      b.offsets.push_back(b.numel);
      b.numel += p.numel();
    }
  }

  void begin_backward() {
    in_backward_ = true;
    next_to_start_ = 0;
    ready_.assign(params_.size(), false);
    for (Bucket& b : buckets_) {
      const Tensor& p = params_[b.params.front()];
      // Allocated once; again only if the module moved to another device or dtype.
      if (!b.flat.defined() || b.flat.device() != p.device() || b.flat.dtype() != p.dtype()) {
        b.flat = empty({b.numel}, TensorOptions().dtype(p.dtype()).device(p.device()));
      }
      b.pending = b.params.size();
      b.started = false;
    }
    autograd::queue_callback([this] { finish_backward(); });
  }

  void on_gradient(size_t index) {
    // Alone, every gradient is already the average.
    if (!owner_.sync_ || distributed::world_size() == 1) return;
    if (!in_backward_) begin_backward();
    if (ready_[index]) return;
    ready_[index] = true;
    const auto [bucket, slot] = location_[index];
    Bucket& b = buckets_[bucket];
    copy_into_slot(b, slot, params_[index]);
    --b.pending;
    start_ready_buckets();
    // MPI moves a non-blocking collective along only inside MPI calls: poll the ones in flight.
    for (size_t k = 0; k < next_to_start_; ++k) {
      if (buckets_[k].started) buckets_[k].work.is_completed();
    }
  }

  void start_ready_buckets() {
    while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) {
      Bucket& b = buckets_[next_to_start_++];
      b.work = distributed::all_reduce_async(b.flat, distributed::ReduceOp::Avg);
      b.started = true;
    }
  }

  // The parameter's gradient slot in its bucket, shaped like the parameter.
  static Tensor slot_of(const Bucket& b, size_t slot, const Tensor& p) {
    return b.flat.narrow(0, b.offsets[slot], p.numel()).view(p.sizes());
  }

  // After a step the gradients are views of their slots (below); a gradient accumulated into
  // such a view is in place already.
  static void copy_into_slot(Bucket& b, size_t slot, const Tensor& p) {
    Tensor target = slot_of(b, slot, p);
    const Tensor grad = p.grad();
    if (!grad.defined()) {
      target.zero_();
    } else if (grad.data_ptr() != target.data_ptr()) {
      target.copy_(grad);
    }
  }

  void finish_backward() {
    in_backward_ = false;
    // A parameter that got no gradient in this pass contributes what its grad() holds, or zeros.
    for (size_t i = 0; i < params_.size(); ++i) {
      if (ready_[i]) continue;
      const auto [bucket, slot] = location_[i];
      copy_into_slot(buckets_[bucket], slot, params_[i]);
      --buckets_[bucket].pending;
    }
    start_ready_buckets();
    // The averages stay where the reduction left them: each grad() becomes a view of its slot
    // (PyTorch's gradient_as_bucket_view), which saves a copy of every gradient per step. A
    // view is only set when the gradient is not one already: a user who reads grad() sees the
    // average, and zero_grad() (set_to_none or not) works on it as on any gradient.
    for (Bucket& b : buckets_) {
      b.work.wait();
      for (size_t s = 0; s < b.params.size(); ++s) {
        Tensor& p = params_[b.params[s]];
        const Tensor average = slot_of(b, s, p);
        const Tensor grad = p.grad();
        if (!grad.defined() || grad.data_ptr() != average.data_ptr()) p.set_grad(average);
      }
    }
  }

  DistributedDataParallel& owner_;
  std::vector<Tensor> params_;
  std::vector<HookHandle> hooks_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> location_;  // per parameter: bucket, slot
  std::vector<bool> ready_;
  size_t next_to_start_ = 0;
  bool in_backward_ = false;
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module, DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(options) {
  EMBER_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  EMBER_CHECK(distributed::is_initialized(),
              "DistributedDataParallel: the process group is not initialised; call ember::distributed::init() first");
  EMBER_CHECK(options_.bucket_cap_mb > 0, "DistributedDataParallel: bucket_cap_mb must be positive, got ",
              options_.bucket_cap_mb);
  register_module("module", module_);

  std::vector<Tensor> params;
  int64_t elements = 0;
  for (const Tensor& p : module_->parameters()) {
    if (!p.requires_grad()) continue;
    params.push_back(p);
    elements += p.numel();
  }
  EMBER_CHECK(!params.empty(), "DistributedDataParallel: the module has no parameter that requires grad");

  NoGradGuard no_grad;
  if (distributed::world_size() > 1) {
    // The same model on every rank, or the averaged gradients would mean nothing.
    const Tensor shape = tensor(std::vector<int64_t>{static_cast<int64_t>(params.size()), elements});
    const std::vector<Tensor> shapes = distributed::all_gather(shape);
    for (int r = 0; r < static_cast<int>(shapes.size()); ++r) {
      const Tensor& s = shapes[static_cast<size_t>(r)];
      EMBER_CHECK(s[0].item<int64_t>() == static_cast<int64_t>(params.size()) && s[1].item<int64_t>() == elements,
                  "DistributedDataParallel: rank ", r, "'s model has ", s[0].item<int64_t>(), " parameters (",
                  s[1].item<int64_t>(), " elements), rank ", distributed::rank(), "'s has ", params.size(), " (",
                  elements, "); every rank must wrap the same model");
    }
    for (const Tensor& p : module_->parameters()) distributed::broadcast(p, 0);
    for (const Tensor& b : module_->buffers()) distributed::broadcast(b, 0);
  }
  reducer_ = std::make_unique<Reducer>(*this, std::move(params), options_.bucket_cap_mb);
}

DistributedDataParallel::~DistributedDataParallel() = default;

Tensor DistributedDataParallel::forward(const Tensor& input) {
  reducer_->recover_from_failed_backward();
  if (options_.broadcast_buffers && distributed::world_size() > 1) {
    NoGradGuard no_grad;
    for (const Tensor& b : module_->buffers()) distributed::broadcast(b, 0);
  }
  return (*module_)(input);  // runs the wrapped module's hooks, as PyTorch's DDP does
}

std::vector<int64_t> DistributedDataParallel::bucket_sizes() const { return reducer_->bucket_sizes(); }

}  // namespace ember::nn
