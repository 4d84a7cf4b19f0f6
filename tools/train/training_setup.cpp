#include "train/training_setup.h"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "train/job.h"
#include "train/models.h"
#include "train/recipe.h"

namespace ember::train {

namespace {

constexpr int64_t kTestBatch = 1000;

ChosenDevice pick_device(const std::optional<std::string>& requested) {
  // In a job of several ranks, each takes the GPU of its local rank unless told an index.
  const bool own_gpu = job_size() > 1;
  if (requested && !requested->empty()) {
    Device device(*requested);
    if (own_gpu && device.is_cuda() && !device.has_index()) device = distributed::default_device();
    empty({0}, device);  // an unusable device fails here, with the reason
    return {device, "set by --device"};
  }
  const Device device = own_gpu && cuda::is_available() ? distributed::default_device() : best_device();
  if (std::getenv("EMBER_DEVICE") != nullptr) return {device, "set by EMBER_DEVICE"};
  if (device.is_cpu()) {
    std::string why = "best available; CUDA: " + cuda::unavailable_reason();
    return {device, why};
  }
  return {device, "best available"};
}

// How many batches a loader thread prepares ahead of the step. On a GPU, or when the step's CPU
// threads leave a core free, loading overlaps the step. When they occupy every core (this
// rank's threads times the ranks on the machine), a loader thread can run only by preempting one
// of them, and the step's next OpenMP barrier then waits for the preempted thread: one mlp epoch
// on 2 threads and 2 cores ran 8-15% faster with the batch loaded in place (docs/PERFORMANCE.md
// §9). Loading an MNIST batch in place costs microseconds.
int64_t prefetch_batches(Device device, int64_t ahead) {
  if (!device.is_cpu()) return ahead;
  cpu_set_t allowed;
  const int cpus = sched_getaffinity(0, sizeof allowed, &allowed) == 0
                       ? CPU_COUNT(&allowed)
                       : static_cast<int>(std::thread::hardware_concurrency());
  const int busy = get_num_threads() * (job_size() > 1 ? distributed::local_world_size() : 1);
  return busy < cpus ? ahead : 0;
}

}  // namespace

ChosenDevice choose_device(const std::optional<std::string>& requested) {
  ChosenDevice chosen = pick_device(requested);
  if (chosen.device.is_cuda() && chosen.device.has_index()) cuda::set_device(chosen.device.index());
  return chosen;
}

// In a job, rank r evaluates batches r, r + N, ... and the sums are added over the ranks, so
// every test image counts once.
EvalResult evaluate(nn::Module& model, const std::shared_ptr<const data::MNIST>& test_set, Device device, bool amp) {
  NoGradGuard no_grad;
  std::optional<amp::autocast> region;  // --amp: in bfloat16, as training ran
  if (amp) region.emplace(device.type(), kBFloat16);
  model.eval();
  data::DataLoader loader(test_set, {.batch_size = kTestBatch, .prefetch = prefetch_batches(device, 1)});
  EvalResult result;
  const int64_t ranks = job_size(), rank = job_rank();
  int64_t index = 0;
  for (data::Batch& batch : loader) {
    if (index++ % ranks != rank) continue;
    const Tensor x = batch.data.to(device);
    const Tensor y = batch.target.to(device);
    const Tensor logits = model.forward(x);
    result.loss += nn::functional::cross_entropy(logits, y, nn::Reduction::Sum).item<double>();
    result.correct += logits.argmax(1).eq(y).sum().item<int64_t>();
    result.total += y.size(0);
  }
  const std::vector<double> sums =
      sum_over_ranks({result.loss, static_cast<double>(result.correct), static_cast<double>(result.total)});
  result.loss = sums[0];
  result.correct = static_cast<int64_t>(sums[1]);
  result.total = static_cast<int64_t>(sums[2]);
  if (result.total > 0) result.loss /= static_cast<double>(result.total);
  return result;
}

TrainingSetup::TrainingSetup(const RunConfig& config, const TrainOptions& runtime) : batch_size_(config.batch_size) {
  ranks_ = job_size();
  device_ = choose_device(runtime.device);
  if (runtime.threads > 0) set_num_threads(runtime.threads);
  const std::string root = data_dir(config.data);
  train_set_ = std::make_shared<data::MNIST>(root, data::MNIST::Split::Train, config.limit);
  test_set_ = std::make_shared<data::MNIST>(root, data::MNIST::Split::Test);
  manual_seed(config.seed);
  model_ = make_model(config.model);
  model_->to(device_.device);
  if (ranks_ > 1) ddp_ = std::make_shared<nn::DistributedDataParallel>(model_);
  named_params_ = model_->named_parameters();
  for (const auto& [name, module] : model_->named_modules())
    uses_dropout_ = uses_dropout_ || std::dynamic_pointer_cast<nn::Dropout>(module) != nullptr;
  optimizer_ = make_optimizer(config, model_->parameters());
  scheduler_ = make_scheduler(config, *optimizer_);
  if (DeviceBatches::fits(*train_set_, device_.device)) {
    device_batches_ = std::make_unique<DeviceBatches>(*train_set_, device_.device, config.batch_size, config.seed,
                                                      ranks_, job_rank());
  } else {
    loader_ = std::make_unique<data::DataLoader>(
        train_set_, data::DataLoaderOptions{.batch_size = config.batch_size,
                                            .shuffle = true,
                                            .seed = config.seed,
                                            .num_replicas = ranks_,
                                            .rank = job_rank(),
                                            .prefetch = prefetch_batches(device_.device, 2),
                                            .pin_memory = device_.device.is_cuda()});
  }
}

void TrainingSetup::restore(const io::Checkpoint& checkpoint) {
  model_->load_state_dict(checkpoint.model);
  optimizer_->load_state_dict(checkpoint.optimizer);
  if (scheduler_) scheduler_->load_state_dict(checkpoint.scheduler);
  set_rng_states({checkpoint.rng, checkpoint.rng_cuda});
  // A checkpoint from a job of another size resumes where that job's ranks together stopped.
  auto saved_ranks_entry = checkpoint.extra.find("ranks");  // absent before distributed training existed
  const int64_t saved_ranks = saved_ranks_entry == checkpoint.extra.end() ? 1 : std::stoll(saved_ranks_entry->second);
  auto batches_for = [&](int64_t ranks) {
    return (data::replica_size(train_set_->size(), ranks) + batch_size_ - 1) / batch_size_;
  };
  const data::DataLoaderState at =
      resume_state(checkpoint.loader, saved_ranks, ranks_, batches_for(saved_ranks), batches_for(ranks_));
  if (device_batches_) {
    device_batches_->set_state(at);
  } else {
    loader_->set_state(at);
  }
}

void TrainingSetup::write_to(io::Checkpoint& checkpoint, const std::optional<data::DataLoaderState>& loader,
                             const std::optional<RngStates>& rng) const {
  checkpoint.model = model_->state_dict();
  checkpoint.optimizer = optimizer_->state_dict();
  if (scheduler_) checkpoint.scheduler = scheduler_->state_dict();
  RngStates states = rng_states();
  if (rng && rng->cpu.defined()) states.cpu = rng->cpu;
  if (rng && rng->cuda.defined()) states.cuda = rng->cuda;
  checkpoint.rng = states.cpu;
  checkpoint.rng_cuda = states.cuda;
  checkpoint.loader = loader ? *loader : loader_state();
  checkpoint.epoch = checkpoint.loader.epoch;
  checkpoint.extra["ranks"] = std::to_string(ranks_);
}

RngStates TrainingSetup::rng_states(bool step_only) const {
  const bool gpu = device_.device.is_cuda();
  RngStates states;
  // On a GPU, dropout draws from the GPU's generator and a step leaves the CPU's as it was;
  // reading the CPU's (a copy of its whole state) would cost tens of microseconds a step.
  if (!(step_only && gpu)) states.cpu = get_rng_state();
  if (gpu) states.cuda = cuda::get_rng_state(device_.device.index());
  return states;
}

void TrainingSetup::set_rng_states(const RngStates& states) {
  if (states.cpu.defined()) set_rng_state(states.cpu);
  // A GPU run's generator; a run resumed on another kind of device draws from its own.
  if (states.cuda.defined() && device_.device.is_cuda()) cuda::set_rng_state(states.cuda, device_.device.index());
}

data::DataLoaderState TrainingSetup::loader_state() const {
  return device_batches_ ? device_batches_->state() : loader_->state();
}

int64_t TrainingSetup::batches_per_epoch() const {
  return device_batches_ ? device_batches_->batches_per_epoch() : loader_->batches_per_epoch();
}

std::optional<data::Batch> TrainingSetup::next_batch() {
  if (device_batches_) return device_batches_->next();
  std::optional<data::Batch> batch = loader_->next();
  if (batch) {
    // From pinned memory on a GPU (the loader's pin_memory): queued, not waited for.
    batch->data = batch->data.to(device_.device, /*non_blocking=*/true);
    batch->target = batch->target.to(device_.device, /*non_blocking=*/true);
  }
  return batch;
}

int64_t TrainingSetup::parameter_count() const {
  int64_t n = 0;
  for (const Tensor& p : model_->parameters()) n += p.numel();
  return n;
}

std::string TrainingSetup::memory_note() const {
  if (!device_.device.is_cuda()) return "";
  const double gib = static_cast<double>(cuda::max_memory_allocated(device_.device.index())) / (1 << 30);
  char text[48];
  std::snprintf(text, sizeof text, "  GPU peak %.2f GiB", gib);
  return text;
}

}  // namespace ember::train
