// DistributedDataParallel across the ranks of an mpirun job: K steps with batch B on each of N
// ranks give the parameters of K steps with batch N*B on one process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

using namespace ember;
using ember_test::error_of;
using testing::HasSubstr;

namespace {

int rank() { return distributed::rank(); }
int world() { return distributed::world_size(); }

std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(16, 3));
}

struct Data {
  Tensor x, y;
};

// The same data on every rank (seeded), so the single-process reference can be computed anywhere.
Data make_data(int64_t n) {
  manual_seed(1234);
  return {randn({n, 6}), randint(0, 3, {n})};
}

// Rank r's share of global batch k: DistributedSampler's split of the samples k*N*B ... (k+1)*N*B-1.
Tensor rank_indices(int64_t k, int64_t batch, int r, int n) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < batch; ++i) idx.push_back(k * batch * n + i * n + r);
  return tensor(idx);
}

void train(nn::Module& model, optim::Optimizer& opt, const Data& data, int64_t steps, int64_t batch, int r, int n) {
  for (int64_t k = 0; k < steps; ++k) {
    opt.zero_grad();
    const Tensor idx = rank_indices(k, batch, r, n);
    const Tensor logits = model.forward(data.x.index_select(0, idx));
    nn::functional::cross_entropy(logits, data.y.index_select(0, idx)).backward();
    opt.step();
  }
}

void expect_same_parameters(const nn::Module& a, const nn::Module& b, double tol) {
  const auto pa = a.named_parameters();
  const auto pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    SCOPED_TRACE(pa[i].first);
    EXPECT_TRUE(allclose(pa[i].second, pb[i].second, tol, tol))
        << "max difference " << (pa[i].second - pb[i].second).abs().max().item<double>();
  }
}

// Micro-batch `pass` of rank `r`: the two samples at pass * 2N + 2r.
Data micro_batch(const Data& data, int pass, int r) {
  const int64_t first = int64_t{pass} * 2 * world() + int64_t{r} * 2;
  return {data.x.narrow(0, first, 2), data.y.narrow(0, first, 2)};
}

// What `model`'s gradients must be after `passes` averaged backward passes in which every rank
// used its micro-batch: one process's gradients of the ranks' summed mean losses, over N, for
// the same model made from `seed`.
void expect_gradients_of_passes(const nn::Module& model, uint64_t seed, const Data& data, int passes) {
  auto alone = make_model(seed);
  Tensor total = zeros({});
  for (int pass = 0; pass < passes; ++pass) {
    for (int r = 0; r < world(); ++r) {
      const Data batch = micro_batch(data, pass, r);
      total = total + nn::functional::cross_entropy(alone->forward(batch.x), batch.y);
    }
  }
  (total / static_cast<double>(world())).backward();
  const auto mine = model.parameters();
  const auto want = alone->parameters();
  for (size_t i = 0; i < mine.size(); ++i) EXPECT_TRUE(allclose(mine[i].grad(), want[i].grad(), 1e-5, 1e-6));
}

}  // namespace

TEST(MpiDdp, StartsFromRankZerosParameters) {
  auto model = make_model(100 + static_cast<uint64_t>(rank()));  // a different model on every rank
  nn::DistributedDataParallel ddp(model);
  auto reference = make_model(100);
  expect_same_parameters(*model, *reference, 0);
}

TEST(MpiDdp, KStepsOfBatchBOnNRanksEqualKStepsOfBatchNBAlone) {
  const int64_t steps = 6, batch = 4;
  const Data data = make_data(steps * batch * world());
  for (double cap_mb : {25.0, 0.0005}) {  // one bucket per model, or one per parameter
    SCOPED_TRACE("bucket_cap_mb " + std::to_string(cap_mb));
    auto model = make_model(7);
    auto ddp = std::make_shared<nn::DistributedDataParallel>(
        model, nn::DistributedDataParallelOptions{.bucket_cap_mb = cap_mb});
    optim::SGD sgd(ddp->parameters(), {.lr = 0.1, .momentum = 0.9});
    train(*ddp, sgd, data, steps, batch, rank(), world());

    auto alone = make_model(7);
    optim::SGD reference(alone->parameters(), {.lr = 0.1, .momentum = 0.9});
    train(*alone, reference, data, steps, batch * world(), 0, 1);
    expect_same_parameters(*model, *alone, 1e-5);
  }
}

TEST(MpiDdp, BucketsFollowTheCapAndReverseParameterOrder) {
  auto model = make_model(1);
  nn::DistributedDataParallel one_bucket(model);
  EXPECT_EQ(one_bucket.bucket_sizes(), (std::vector<int64_t>{6 * 16 + 16 + 16 * 16 + 16 + 16 * 3 + 3}));
  auto other = make_model(1);
  nn::DistributedDataParallel per_parameter(other, {.bucket_cap_mb = 1e-6});
  EXPECT_EQ(per_parameter.bucket_sizes(), (std::vector<int64_t>{3, 48, 16, 256, 16, 96}));
}

TEST(MpiDdp, NoSyncAccumulatesLocallyAndTheNextSyncAveragesEverything) {
  const Data data = make_data(4 * world());
  auto model = make_model(3);
  nn::DistributedDataParallel ddp(model);
  {
    nn::NoSyncGuard no_sync(ddp);
    const Data first = micro_batch(data, 0, rank());
    nn::functional::cross_entropy(ddp.forward(first.x), first.y).backward();
  }
  const Data second = micro_batch(data, 1, rank());
  nn::functional::cross_entropy(ddp.forward(second.x), second.y).backward();
  expect_gradients_of_passes(*model, 3, data, 2);
}

TEST(MpiDdp, AParameterWithoutGradientOnOneRankCountsAsZero) {
  // Rank 0 uses only the first layer's output through a branch that skips layer 2.
  manual_seed(5);
  auto first = std::make_shared<nn::Linear>(4, 4);
  auto second = std::make_shared<nn::Linear>(4, 4);
  auto model = std::make_shared<nn::Sequential>(first, second);
  nn::DistributedDataParallel ddp(model);
  const Tensor x = ones({2, 4});
  Tensor out = rank() == 0 ? first->forward(x) : second->forward(first->forward(x));
  out.sum().backward();  // must not hang: rank 0 never produced layer 2's gradients
  ASSERT_TRUE(second->weight.grad().defined());
  // Layer 2's gradient is the other ranks' sum divided by the world: the same everywhere.
  Tensor g = second->weight.grad().clone();
  distributed::all_reduce(g, distributed::ReduceOp::Max);
  EXPECT_TRUE(allclose(g, second->weight.grad()));
}

TEST(MpiDdp, DifferentModelsOnDifferentRanksAreRefused) {
  manual_seed(1);
  auto model = std::make_shared<nn::Linear>(3, rank() == 0 ? 2 : 4);
  EXPECT_THAT(error_of([&] { nn::DistributedDataParallel ddp(model); }),
              HasSubstr("every rank must wrap the same model"));
}

TEST(MpiDdp, GradientsAccumulateAcrossSyncedBackwardsWithoutZeroGrad) {
  // After the first backward every grad() is a view of its bucket; the second accumulates into
  // it in place, and the average of the sum is the sum of the averages.
  const Data data = make_data(4 * world());
  auto model = make_model(11);
  nn::DistributedDataParallel ddp(model);
  for (int pass = 0; pass < 2; ++pass) {
    const Data batch = micro_batch(data, pass, rank());
    nn::functional::cross_entropy(ddp.forward(batch.x), batch.y).backward();
  }
  expect_gradients_of_passes(*model, 11, data, 2);
}

TEST(MpiDdp, ABackwardThatThrowsMidwayLeavesTheNextStepCorrect) {
  // One bucket per parameter: the last layer's buckets have started when the first layer's
  // hook throws (on every rank alike); the next forward finishes them and starts clean.
  const Data data = make_data(4 * world());
  auto model = make_model(13);
  nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = 1e-6});
  auto first_weight = model->parameters().front();
  bool armed = true;
  HookHandle trap = register_post_accumulate_grad_hook(first_weight, [&](const Tensor&) {
    if (armed) throw Error("injected failure");
  });
  const Data batch = micro_batch(data, 0, rank());
  EXPECT_THAT(error_of([&] { nn::functional::cross_entropy(ddp.forward(batch.x), batch.y).backward(); }),
              HasSubstr("injected failure"));
  armed = false;
  trap.remove();
  model->zero_grad();
  nn::functional::cross_entropy(ddp.forward(batch.x), batch.y).backward();
  expect_gradients_of_passes(*model, 13, data, 1);
}
