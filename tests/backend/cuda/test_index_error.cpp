// Deferred reporting of out-of-range indices on CUDA (src/backend/cuda/index_error.h): the
// record's claim protocol, its reset and the messages are checked on the host; where a GPU is
// usable, a bad index is reported at the next synchronisation, once, with the CPU's message.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/cuda/index_error.h"
#include "ember/ember.h"
#include "ember/nn/functional.h"

namespace {

using ember::cuda_impl::claim_index_error;
using ember::cuda_impl::index_error_message;
using ember::cuda_impl::IndexErrorRecord;
using ember::cuda_impl::IndexErrorReport;
using ember::cuda_impl::IndexOp;
using ember::cuda_impl::kIndexErrorEmpty;
using ember::cuda_impl::kIndexErrorReady;
using ember::cuda_impl::kIndexErrorWriting;
using ember::cuda_impl::take_index_error;

// The host's stand-ins for atomicCAS and __threadfence_system.
struct HostCas {
  uint32_t operator()(uint32_t* word, uint32_t expected, uint32_t desired) const {
    std::atomic_ref<uint32_t>(*word).compare_exchange_strong(expected, desired);
    return expected;  // the old value, as atomicCAS returns it
  }
};
struct HostPublish {
  void operator()() const { std::atomic_thread_fence(std::memory_order_seq_cst); }
};

bool claim(IndexErrorRecord& r, IndexOp op, int64_t value, int64_t dim, int64_t size) {
  return claim_index_error(&r, op, value, dim, size, HostCas{}, HostPublish{});
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "";
}

constexpr std::string_view kWhen =
    "found at the next synchronisation, so the error surfaced after later ops were queued and ";
constexpr std::string_view kHint = ": set EMBER_CUDA_CHECK_INDICES=1 to stop at the op itself)";

TEST(CudaIndexError, MessagesAreTheCpusThenWhereAndWhen) {
  EXPECT_EQ(index_error_message({IndexOp::Gather, 12, 0, 10}, 0),
            "index 12 is out of bounds for dimension 0 with size 10 (gather on cuda:0; " + std::string(kWhen) +
                "it read 0 for that index" + std::string(kHint));
  EXPECT_EQ(index_error_message({IndexOp::ScatterAdd, -1, 1, 3}, 2),
            "index -1 is out of bounds for dimension 1 with size 3 (scatter_add on cuda:2; " + std::string(kWhen) +
                "it added nothing for that index" + std::string(kHint));
  EXPECT_EQ(index_error_message({IndexOp::IndexSelect, 7, 0, 5}, 1),
            "index out of range in self (index_select on cuda:1: index 7 is out of bounds for dimension 0 with size "
            "5; " +
                std::string(kWhen) + "it read 0 for that index" + std::string(kHint));
  EXPECT_EQ(index_error_message({IndexOp::ClassTarget, 10, 3, 10}, 0),
            "Target 10 is out of bounds. (cross_entropy on cuda:0: sample 3 of a batch with 10 classes; " +
                std::string(kWhen) + "that sample counted as ignored" + std::string(kHint));
  EXPECT_EQ(
      index_error_message({IndexOp::EmbeddingBag, 12, 0, 10}, 0),
      "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 12 (embedding_bag on cuda:0; " +
          std::string(kWhen) + "that position was skipped" + std::string(kHint));
  // A corrupted op still gives a message, never a crash.
  const std::string odd = index_error_message({static_cast<IndexOp>(9), 4, 0, 2}, 0);
  EXPECT_EQ(odd.rfind("index 4 is out of bounds for dimension 0 with size 2 (unknown indexing op 9 on cuda:0", 0), 0u)
      << odd;
}

// The messages start with exactly what the CPU backend raises for the same mistake.
TEST(CudaIndexError, MessagesStartWithTheCpuBackendsOwn) {
  const ember::Tensor x = ember::arange(0, 10, 1, ember::kFloat32);
  const ember::Tensor bad = ember::tensor(std::vector<int64_t>{1, 12, 3});
  const std::string gather = first_line(error_of([&] { (void)ember::gather(x, 0, bad); }));
  const std::string select = first_line(error_of([&] { (void)ember::index_select(x, 0, bad); }));
  const std::string scatter =
      first_line(error_of([&] { (void)ember::scatter_add(x, 0, bad, ember::ones({3}, ember::kFloat32)); }));
  ASSERT_FALSE(gather.empty());
  ASSERT_FALSE(select.empty());
  ASSERT_FALSE(scatter.empty());
  EXPECT_EQ(index_error_message({IndexOp::Gather, 12, 0, 10}, 0).rfind(gather + " (", 0), 0u) << gather;
  EXPECT_EQ(index_error_message({IndexOp::IndexSelect, 12, 0, 10}, 0).rfind(select + " (", 0), 0u) << select;
  EXPECT_EQ(index_error_message({IndexOp::ScatterAdd, 12, 0, 10}, 0).rfind(scatter + " (", 0), 0u) << scatter;
  const std::string target = first_line(error_of([&] {
    (void)ember::nn::functional::cross_entropy(ember::zeros({3, 10}), bad);
  }));
  ASSERT_FALSE(target.empty());
  EXPECT_EQ(index_error_message({IndexOp::ClassTarget, 12, 1, 10}, 0).rfind(target + " (", 0), 0u) << target;
}

TEST(CudaIndexError, TakingACompleteRecordEmptiesIt) {
  IndexErrorRecord r{};
  EXPECT_FALSE(take_index_error(&r).has_value());  // empty: nothing to report
  ASSERT_TRUE(claim(r, IndexOp::ScatterAdd, -3, 2, 8));
  EXPECT_EQ(r.claim, kIndexErrorReady);
  const auto report = take_index_error(&r);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->op, IndexOp::ScatterAdd);
  EXPECT_EQ(report->value, -3);
  EXPECT_EQ(report->dim, 2);
  EXPECT_EQ(report->size, 8);
  // Reported once: a caught error does not come back at the next wait...
  EXPECT_EQ(r.claim, kIndexErrorEmpty);
  EXPECT_EQ(r.op, 0);
  EXPECT_EQ(r.value, 0);
  EXPECT_FALSE(take_index_error(&r).has_value());
  // ...and the next bad index is recorded afresh.
  ASSERT_TRUE(claim(r, IndexOp::Gather, 99, 0, 4));
  const auto next = take_index_error(&r);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->op, IndexOp::Gather);
  EXPECT_EQ(next->value, 99);
}

// A record a kernel on another stream is still writing is left alone, for a later wait.
TEST(CudaIndexError, ARecordBeingWrittenIsNotTaken) {
  IndexErrorRecord r{};
  r.claim = kIndexErrorWriting;
  r.op = static_cast<int32_t>(IndexOp::Gather);
  EXPECT_FALSE(take_index_error(&r).has_value());
  EXPECT_EQ(r.claim, kIndexErrorWriting);
  EXPECT_EQ(r.op, static_cast<int32_t>(IndexOp::Gather));
  EXPECT_FALSE(claim(r, IndexOp::ScatterAdd, 1, 0, 1));  // nor can another thread take it over
}

TEST(CudaIndexError, FirstClaimWins) {
  IndexErrorRecord r{};
  EXPECT_TRUE(claim(r, IndexOp::IndexSelect, 5, 0, 3));
  EXPECT_FALSE(claim(r, IndexOp::Gather, 6, 1, 4));
  EXPECT_FALSE(claim(r, IndexOp::ScatterAdd, 7, 2, 5));
  const auto report = take_index_error(&r);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->op, IndexOp::IndexSelect);
  EXPECT_EQ(report->value, 5);
  EXPECT_EQ(report->dim, 0);
  EXPECT_EQ(report->size, 3);
}

// Many threads racing for the record: exactly one wins, and the record holds its fields, not a mix.
TEST(CudaIndexError, FirstClaimWinsUnderContention) {
  for (int round = 0; round < 20; ++round) {
    IndexErrorRecord r{};
    std::atomic<int> winners{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) {
        }
        if (claim(r, IndexOp::Gather, 1000 + t, t, 2000 + t)) winners.fetch_add(1);
      });
    }
    go.store(true, std::memory_order_release);
    for (auto& th : threads) th.join();
    EXPECT_EQ(winners.load(), 1);
    const auto report = take_index_error(&r);
    ASSERT_TRUE(report.has_value());
    const int64_t t = report->dim;
    EXPECT_EQ(report->value, 1000 + t);
    EXPECT_EQ(report->size, 2000 + t);
  }
}

// ------------------------------------------------------------------------------- on the GPU

bool check_mode() {
  const char* v = std::getenv("EMBER_CUDA_CHECK_INDICES");
  return v != nullptr && std::string_view(v) == "1";
}

class CudaIndexErrorOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ember::cuda::is_available()) GTEST_SKIP() << "cuda: " << ember::cuda::unavailable_reason();
    if (check_mode()) GTEST_SKIP() << "EMBER_CUDA_CHECK_INDICES=1 reports at the call (tested elsewhere)";
    try {
      ember::cuda::synchronize();  // nothing pending from earlier tests
    } catch (const ember::Error&) {
    }
  }
  const ember::Device gpu{ember::DeviceType::CUDA, 0};
};

TEST_F(CudaIndexErrorOnDevice, GatherIsReportedAtTheNextCopyToTheHostThenWorksAgain) {
  const ember::Tensor x = ember::arange(0, 10, 1, ember::kFloat32).to(gpu);
  const ember::Tensor bad = ember::tensor(std::vector<int64_t>{1, 12, 3}).to(gpu);
  ember::Tensor out;
  EXPECT_NO_THROW(out = ember::gather(x, 0, bad));  // no wait at the call
  ember::Tensor later;
  EXPECT_NO_THROW(later = out * 2);  // later ops queue as usual
  const std::string message = error_of([&] { (void)later.to(ember::Device(ember::DeviceType::CPU)); });
  EXPECT_EQ(message.rfind("index 12 is out of bounds for dimension 0 with size 10 (gather on cuda:0; found at the "
                          "next synchronisation",
                          0),
            0u)
      << message;
  // Reported once; the tensors are intact (the bad position read 0) and the next op works.
  EXPECT_NO_THROW(ember::cuda::synchronize());
  EXPECT_TRUE(ember::equal(out.cpu(), ember::tensor(std::vector<float>{1, 0, 3})));
  const ember::Tensor good = ember::tensor(std::vector<int64_t>{9, 0}).to(gpu);
  EXPECT_TRUE(ember::equal(ember::gather(x, 0, good).cpu(), ember::tensor(std::vector<float>{9, 0})));
  EXPECT_EQ(ember::gather(x, 0, good).sum().item<float>(), 9.0f);
}

TEST_F(CudaIndexErrorOnDevice, IndexSelectIsReportedByItem) {
  const ember::Tensor x = ember::arange(0, 6, 1, ember::kFloat32).reshape({2, 3}).to(gpu);
  const ember::Tensor bad = ember::tensor(std::vector<int64_t>{0, -1}).to(gpu);
  ember::Tensor picked;
  EXPECT_NO_THROW(picked = x.index_select(1, bad));
  const std::string message = error_of([&] { (void)picked.sum().item(); });
  EXPECT_EQ(message.rfind("index out of range in self (index_select on cuda:0: index -1 is out of bounds for "
                          "dimension 1 with size 3; found at the next synchronisation",
                          0),
            0u)
      << message;
  EXPECT_EQ(picked.sum().item<float>(), 3.0f);  // 0 + 3, the bad column read as 0
}

TEST_F(CudaIndexErrorOnDevice, ScatterAddIsReportedBySynchronizeOnceForManyBadIndices) {
  const ember::Tensor zeros = ember::zeros({4}, ember::TensorOptions().device(gpu));
  std::vector<int64_t> idx(100000, 4);  // every index bad: one report
  idx[0] = 1;
  const ember::Tensor index = ember::tensor(idx).to(gpu);
  const ember::Tensor src = ember::ones({100000}, ember::TensorOptions().device(gpu));
  ember::Tensor out;
  EXPECT_NO_THROW(out = zeros.scatter_add(0, index, src));
  const std::string message = error_of([] { ember::cuda::synchronize(); });
  EXPECT_EQ(message.rfind("index 4 is out of bounds for dimension 0 with size 4 (scatter_add on cuda:0; ", 0), 0u)
      << message;
  EXPECT_NO_THROW(ember::cuda::synchronize());
  EXPECT_TRUE(ember::equal(out.cpu(), ember::tensor(std::vector<float>{0, 1, 0, 0})));
}

// Two bad ops before a wait: the first claim is reported, the second dropped (not repeated later).
TEST_F(CudaIndexErrorOnDevice, OneReportPerWait) {
  const ember::Tensor x = ember::arange(0, 5, 1, ember::kFloat32).to(gpu);
  const ember::Tensor first = ember::tensor(std::vector<int64_t>{5}).to(gpu);
  const ember::Tensor second = ember::tensor(std::vector<int64_t>{6}).to(gpu);
  ember::Tensor a = ember::gather(x, 0, first);
  ember::Tensor b = ember::gather(x, 0, second);
  const std::string message = error_of([&] { (void)(a + b).cpu(); });
  EXPECT_EQ(message.rfind("index 5 is out of bounds", 0), 0u) << message;
  EXPECT_NO_THROW((void)(a + b).cpu());
}

}  // namespace
