// Signals arriving while the CPU backend multiplies and convolves must not corrupt memory.
// oneDNN 2.x's float32 GEMM kernels move the stack pointer into a heap buffer, so a handler that
// runs on one of their threads writes its frame over the heap (DeferSignals in
// src/backend/cpu/defer_signals.h). Before the fix, every run of this test aborted in glibc
// ("corrupted size vs. prev_size") or returned wrong products within a fraction of a second.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ember/ember.h"

namespace ember {
namespace {

std::atomic<int64_t> g_handled{0};
extern "C" void count_signal(int) { g_handled.fetch_add(1, std::memory_order_relaxed); }

/// Installs a SIGUSR1 handler and, on a thread of its own, sends SIGUSR1 every 50 µs: in turn to
/// the thread under test and to the whole process (which the kernel hands to any thread that does
/// not block it, OpenMP workers included).
class SignalStorm {
 public:
  explicit SignalStorm(pthread_t target) : target_(target) {
    struct sigaction action {};
    action.sa_handler = count_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    EXPECT_EQ(::sigaction(SIGUSR1, &action, &previous_), 0);
    sender_ = std::thread([this] {
      for (int64_t i = 0; !stop_.load(); ++i) {
        if (i % 2 == 0) {
          pthread_kill(target_, SIGUSR1);
        } else {
          ::kill(::getpid(), SIGUSR1);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  ~SignalStorm() {
    stop_.store(true);
    sender_.join();
    ::sigaction(SIGUSR1, &previous_, nullptr);
  }
  SignalStorm(const SignalStorm&) = delete;
  SignalStorm& operator=(const SignalStorm&) = delete;

 private:
  pthread_t target_;
  struct sigaction previous_ {};
  std::atomic<bool> stop_{false};
  std::thread sender_;
};

/// Runs body repeatedly for `seconds` under a signal storm, on 1 and then 2 threads.
template <typename F>
void under_signal_storm(double seconds, const F& body) {
  const int threads_before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    g_handled.store(0);
    {
      SignalStorm storm(pthread_self());
      const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds / 2);
      while (std::chrono::steady_clock::now() < end) body();
    }
    // Deferred, not dropped: the handler ran for signals sent during the products.
    EXPECT_GT(g_handled.load(), 0) << "on " << threads << " threads";
  }
  set_num_threads(threads_before);
}

TEST(CpuSignals, MatmulsAtMlpShapesSurviveASignalStorm) {
  // The products of one training step of the quickstart MLP (batch 64), forward and backward.
  const Tensor x = ones({64, 784});
  const Tensor w1 = full({512, 784}, 0.5);
  const Tensor w2 = full({512, 512}, 0.25);
  under_signal_storm(1.0, [&] {
    const Tensor h = matmul(x, w1.t());  // NT: 784 * 0.5
    const Tensor g = matmul(h, w2);      // NN: 512 * 392 * 0.25
    const Tensor dw = matmul(h.t(), x);  // TN: 64 * 392
    ASSERT_EQ(h.min().item<float>(), 392.0f);
    ASSERT_EQ(g.max().item<float>(), 50176.0f);
    ASSERT_EQ(dw.min().item<float>(), 25088.0f);
  });
}

TEST(CpuSignals, ConvolutionsSurviveASignalStorm) {
  const Tensor x = ones({16, 1, 28, 28}).requires_grad_(true);
  const Tensor w = ones({32, 1, 3, 3}).requires_grad_(true);
  under_signal_storm(1.0, [&] {
    const Tensor y = nn::functional::conv2d(x, w);
    y.sum().backward();
    ASSERT_EQ(y.max().item<float>(), 9.0f);
    ASSERT_EQ(w.grad().min().item<float>(), 16.0f * 26 * 26);
    ASSERT_EQ(x.grad().max().item<float>(), 32.0f * 9);
    x.grad().zero_();
    w.grad().zero_();
  });
}

}  // namespace
}  // namespace ember
