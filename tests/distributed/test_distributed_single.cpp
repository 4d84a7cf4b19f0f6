// ember::distributed in a process that no MPI launcher started: a world of one, in which the
// same code as under mpirun runs unchanged. (The multi-process tests are in distributed/mpi/.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "ember/ember.h"
#include "support/error_of.h"

using namespace ember;
using ember_test::error_of;
using testing::HasSubstr;

namespace {

// Each test joins and leaves the world of one, so that they run in any order in one process.
class DistributedAlone : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(distributed::launched_by_mpi()) << "run the single-process tests without mpirun";
    distributed::init();
  }
  void TearDown() override { distributed::finalize(); }
};

}  // namespace

TEST_F(DistributedAlone, IsAWorldOfOne) {
  EXPECT_TRUE(distributed::is_initialized());
  EXPECT_EQ(distributed::rank(), 0);
  EXPECT_EQ(distributed::world_size(), 1);
  EXPECT_EQ(distributed::local_rank(), 0);
  EXPECT_EQ(distributed::local_world_size(), 1);
  EXPECT_EQ(distributed::describe(), "rank 0 of 1 (0 of 1 on this machine)");
  EXPECT_EQ(distributed::default_device(), cuda::is_available() ? Device(kCUDA, 0) : Device(kCPU));
}

TEST_F(DistributedAlone, CollectivesReturnTheirInput) {
  Tensor t = arange(5, TensorOptions().dtype(kFloat32));
  for (auto op : {distributed::ReduceOp::Sum, distributed::ReduceOp::Avg, distributed::ReduceOp::Max}) {
    distributed::all_reduce(t, op);
    EXPECT_TRUE(equal(t, arange(5, TensorOptions().dtype(kFloat32))));
  }
  distributed::broadcast(t, 0);
  EXPECT_TRUE(equal(t, arange(5, TensorOptions().dtype(kFloat32))));
  const std::vector<Tensor> gathered = distributed::all_gather(t);
  ASSERT_EQ(gathered.size(), 1u);
  EXPECT_TRUE(equal(gathered[0], t));
  EXPECT_FALSE(gathered[0].is_same(t));  // a copy, as on more ranks
  distributed::barrier();
  distributed::Work work = distributed::all_reduce_async(t);
  EXPECT_TRUE(work.is_completed());
  work.wait();
}

TEST_F(DistributedAlone, ChecksArgumentsAsOnMoreRanks) {
  EXPECT_THAT(
      error_of([] { distributed::all_reduce(ones({2}, TensorOptions().dtype(kInt64)), distributed::ReduceOp::Avg); }),
      HasSubstr("ReduceOp::Avg needs a floating-point tensor, got int64"));
  EXPECT_THAT(error_of([] { distributed::all_reduce(ones({3, 2}).t()); }), HasSubstr("Tensors must be contiguous"));
  EXPECT_THAT(error_of([] { distributed::broadcast(ones({2}), 1); }), HasSubstr("root rank 1 is not in [0, 0]"));
  EXPECT_THAT(error_of([] { distributed::all_gather(scalar_tensor(1.0)); }), HasSubstr("0-dim"));
  EXPECT_THAT(error_of([] { distributed::init(); }), HasSubstr("already initialised"));
  EXPECT_THAT(error_of([] { distributed::set_timeout(std::chrono::milliseconds(0)); }),
              HasSubstr("the timeout must be positive"));
}

TEST_F(DistributedAlone, DataParallelAloneTrainsLikeTheModuleItself) {
  auto make = [] {
    manual_seed(3);
    return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                                            std::make_shared<nn::Linear>(8, 2));
  };
  auto wrapped = make();
  auto ddp = std::make_shared<nn::DistributedDataParallel>(wrapped);
  auto plain = make();
  EXPECT_EQ(ddp->state_dict().keys().front(), "module.0.weight");  // PyTorch's DDP prefix
  optim::SGD a(ddp->parameters(), {.lr = 0.1});
  optim::SGD b(plain->parameters(), {.lr = 0.1});
  manual_seed(9);
  const Tensor x = randn({16, 4});
  const Tensor y = randint(0, 2, {16});
  for (int step = 0; step < 3; ++step) {
    for (auto [model, opt] : {std::pair<nn::Module*, optim::Optimizer*>{ddp.get(), &a}, {plain.get(), &b}}) {
      opt->zero_grad();
      nn::functional::cross_entropy(model->forward(x), y).backward();
      opt->step();
    }
  }
  const auto pa = wrapped->parameters();
  const auto pb = plain->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(equal(pa[i], pb[i]));
}

TEST(DistributedNotInitialised, CollectivesSaySoAndDataParallelRefuses) {
  ASSERT_FALSE(distributed::is_initialized());
  EXPECT_THAT(error_of([] { distributed::all_reduce(ones({2})); }), HasSubstr("call ember::distributed::init() first"));
  EXPECT_THAT(error_of([] { distributed::barrier(); }), HasSubstr("not initialised"));
  EXPECT_THAT(error_of([] { nn::DistributedDataParallel ddp(std::make_shared<nn::Linear>(2, 2)); }),
              HasSubstr("call ember::distributed::init() first"));
  distributed::finalize();  // does nothing
}

TEST(DistributedTimeout, ComesFromTheEnvironmentOrDefaultsToThirtyMinutes) {
  ::unsetenv("EMBER_DIST_TIMEOUT");
  distributed::init();
  EXPECT_EQ(distributed::timeout(), std::chrono::minutes(30));
  distributed::finalize();
  ::setenv("EMBER_DIST_TIMEOUT", "2.5", 1);
  distributed::init();
  EXPECT_EQ(distributed::timeout(), std::chrono::milliseconds(2500));
  distributed::finalize();
  ::setenv("EMBER_DIST_TIMEOUT", "soon", 1);
  EXPECT_THAT(error_of([] { distributed::init(); }), HasSubstr("EMBER_DIST_TIMEOUT='soon' is not a positive number"));
  EXPECT_FALSE(distributed::is_initialized());
  ::unsetenv("EMBER_DIST_TIMEOUT");
  distributed::init({.timeout = std::chrono::seconds(7)});
  EXPECT_EQ(distributed::timeout(), std::chrono::seconds(7));
  distributed::finalize();
}
