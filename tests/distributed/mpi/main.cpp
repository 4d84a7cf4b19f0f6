// The tests that need several processes: run under mpirun (tests/CMakeLists.txt registers
// `mpirun -np 2` and `-np 3`). Every rank runs every test; rank 0 prints as usual, the others
// print only their failures, each line marked with the rank.
#include <gtest/gtest.h>

#include <iostream>

#include "ember/distributed.h"

namespace {

class FailuresOnly : public testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cout << "rank " << rank_ << ": " << (result.file_name() ? result.file_name() : "?") << ":"
              << result.line_number() << ": " << result.summary() << std::endl;
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::cout << "rank " << rank_ << ": FAILED " << info.test_suite_name() << "." << info.name() << std::endl;
    }
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  ember::distributed::init();
  const int rank = ember::distributed::rank();
  if (rank != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly(rank));
  }
  const int failed = RUN_ALL_TESTS();
  ember::distributed::finalize();
  return failed;
}
