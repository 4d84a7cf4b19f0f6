// cuda::Stream, StreamGuard, set_stream, Event::record(stream) and record_stream on a real GPU:
// streams are pooled and chosen per thread and scope, ops queue on the current stream, work ordered
// across streams (wait_stream, wait_event) matches the CPU, and memory other streams use is not
// reused early. Without a usable GPU every case skips, naming the reason.
//
// Many checks queue long matrix products (queue_busy_work) in front of the work they test: a wait
// that is missing then shows as wrong values or an early query(), not as a race that never loses.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ember/cuda.h"
#include "ember/ember.h"
#include "support/devices.h"
#include "support/error_of.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace optim = ember::optim;

std::string describe(const cuda::Stream& s) {
  std::ostringstream os;
  if (s.handle() == nullptr) {
    os << "the default stream";
  } else {
    os << "stream " << s.handle();
  }
  os << " of cuda:" << s.device() << " (priority " << s.priority() << ")";
  return os.str();
}

::testing::AssertionResult same_stream(const cuda::Stream& got, const cuda::Stream& want) {
  if (got == want && !(got != want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << describe(got) << ", expected " << describe(want);
}

// About 2.7 TFLOP of float32 matrix products (some 45 ms on an H200, longer on smaller GPUs),
// queued on the current stream; returns without waiting. Work queued behind it on the same stream
// runs only after it, so a test can tell whether another stream, or the host, waited for it.
constexpr int64_t kBusySize = 4096;
constexpr int kBusyProducts = 20;

void queue_busy_work(const Device& device) {
  // The matrix of 1/n is its own square: the values stay exact and finite, with or without TF32.
  Tensor m = full({kBusySize, kBusySize}, 1.0 / kBusySize, TensorOptions(kFloat32).device(device));
  for (int i = 0; i < kBusyProducts; ++i) m = mm(m, m);
}

class DeviceCudaStreams : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    if (!device().is_cuda()) GTEST_SKIP() << "streams belong to CUDA devices; " << device() << " has none";
    // Every case starts on cuda:0 and its default stream (TearDown checks that it leaves it so).
    ASSERT_EQ(cuda::current_device(), 0);
    ASSERT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream(0)));
    manual_seed(2024);
  }
  void TearDown() override {
    if (IsSkipped()) return;
    EXPECT_TRUE(same_stream(cuda::current_stream(0), cuda::default_stream(0)))
        << "the test left another stream current";
    EXPECT_EQ(cuda::current_device(), 0) << "the test left another device current";
    // Whatever happened, the next case starts clean.
    for (int d = cuda::device_count(); d-- > 0;) cuda::set_stream(cuda::default_stream(d));
    cuda::synchronize();
  }
  Tensor on_device(const Tensor& cpu) const { return cpu.to(device()); }
  TensorOptions float_options() const { return TensorOptions(kFloat32).device(device()); }
};

// ---- streams, their pool and their selection ----

TEST_P(DeviceCudaStreams, EachThreadStartsOnTheDefaultStreamOfDeviceZero) {
  const cuda::Stream current = cuda::current_stream();
  EXPECT_EQ(current.handle(), nullptr);
  EXPECT_EQ(current.device(), 0);
  EXPECT_EQ(current.priority(), 0);
  EXPECT_TRUE(same_stream(current, cuda::default_stream()));
  EXPECT_TRUE(same_stream(cuda::current_stream(0), cuda::default_stream(0)));
  EXPECT_EQ(cuda::default_stream(0).handle(), nullptr);
  EXPECT_EQ(cuda::default_stream().device(), 0);
}

TEST_P(DeviceCudaStreams, CreateHandsOutStreamsOtherThanTheDefaultOne) {
  const cuda::Stream s = cuda::Stream::create();
  EXPECT_NE(s.handle(), nullptr);
  EXPECT_EQ(s.device(), 0);
  EXPECT_EQ(s.priority(), 0);
  EXPECT_FALSE(s == cuda::default_stream());
  EXPECT_TRUE(s != cuda::default_stream());
  // Creating a stream does not make it current.
  EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));

  const cuda::Stream high = cuda::Stream::create(-1, -1);
  EXPECT_NE(high.handle(), nullptr);
  EXPECT_EQ(high.device(), 0);
  EXPECT_EQ(high.priority(), -1);
  EXPECT_TRUE(high != s);
  EXPECT_EQ(cuda::Stream::create(0, -7).priority(), -1);  // any negative priority is the high one
  EXPECT_EQ(cuda::Stream::create(0, 3).priority(), 0);    // a positive one is normal
  EXPECT_EQ(cuda::Stream::create(0).device(), 0);

  // A Stream is a value: copies name the same stream.
  cuda::Stream copy = s;
  EXPECT_TRUE(same_stream(copy, s));
  EXPECT_EQ(copy.handle(), s.handle());
  EXPECT_EQ(copy.priority(), s.priority());
  copy = high;
  EXPECT_TRUE(same_stream(copy, high));
  EXPECT_TRUE(copy != s);
  EXPECT_EQ(copy.priority(), -1);

  EXPECT_THROW((void)cuda::Stream::create(cuda::device_count()), Error);
  EXPECT_THROW((void)cuda::current_stream(cuda::device_count()), Error);
}

TEST_P(DeviceCudaStreams, ThePoolHandsOut32DistinctStreamsPerPriorityInTurn) {
  const cuda::Stream first = cuda::Stream::create();
  std::set<void*> normal{first.handle()};
  for (int i = 1; i < 32; ++i) {
    const cuda::Stream s = cuda::Stream::create();
    EXPECT_EQ(s.priority(), 0);
    EXPECT_EQ(s.device(), 0);
    normal.insert(s.handle());
  }
  EXPECT_EQ(normal.size(), 32u) << "32 consecutive Stream::create() calls must give 32 different streams";
  EXPECT_EQ(normal.count(nullptr), 0u) << "the pool handed out the default stream";
  // The 33rd starts the round again.
  EXPECT_TRUE(same_stream(cuda::Stream::create(), first));

  // The high-priority streams are another pool of 32.
  std::set<void*> high;
  for (int i = 0; i < 32; ++i) {
    const cuda::Stream s = cuda::Stream::create(0, -1);
    EXPECT_EQ(s.priority(), -1);
    EXPECT_EQ(normal.count(s.handle()), 0u) << "a high-priority stream came from the normal pool";
    high.insert(s.handle());
  }
  EXPECT_EQ(high.size(), 32u);
  EXPECT_EQ(high.count(nullptr), 0u);
  EXPECT_EQ(normal.count(cuda::Stream::create(0, 1).handle()), 1u);
}

TEST_P(DeviceCudaStreams, EachThreadChoosesItsOwnStream) {
  const cuda::Stream side = cuda::Stream::create();
  const cuda::Stream theirs = cuda::Stream::create();
  cuda::StreamGuard on(side);  // this thread's choice, which the new thread must not inherit
  std::optional<cuda::Stream> first_there;
  int current_device_there = -1;
  bool theirs_current_there = false;
  std::string error_there;
  std::thread([&] {
    try {
      first_there = cuda::current_stream();
      current_device_there = cuda::current_device();
      cuda::set_stream(theirs);
      theirs_current_there = cuda::current_stream() == theirs;
      cuda::set_stream(cuda::default_stream());
    } catch (const Error& e) {
      error_there = e.what();
    }
  }).join();
  EXPECT_EQ(error_there, "");
  ASSERT_TRUE(first_there.has_value());
  EXPECT_TRUE(same_stream(*first_there, cuda::default_stream(0))) << "a new thread did not start on the default stream";
  EXPECT_EQ(first_there->handle(), nullptr);
  EXPECT_EQ(current_device_there, 0);
  EXPECT_TRUE(theirs_current_there);
  EXPECT_TRUE(same_stream(cuda::current_stream(), side)) << "another thread's set_stream changed this thread's";
}

TEST_P(DeviceCudaStreams, StreamGuardSelectsTheStreamForItsScope) {
  const cuda::Stream side = cuda::Stream::create();
  {
    cuda::StreamGuard on(side);
    EXPECT_TRUE(same_stream(cuda::current_stream(), side));
    EXPECT_TRUE(same_stream(cuda::current_stream(0), side));
    EXPECT_EQ(cuda::current_device(), 0);
    EXPECT_EQ(cuda::default_stream().handle(), nullptr);  // the default stream stays the default
  }
  EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));
  {
    cuda::StreamGuard on(cuda::default_stream());  // the stream already current: nothing changes
    EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));
  }
  EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));
}

TEST_P(DeviceCudaStreams, NestedGuardsRestoreInOrderEvenThroughExceptions) {
  const cuda::Stream outer = cuda::Stream::create();
  const cuda::Stream inner = cuda::Stream::create();
  ASSERT_TRUE(outer != inner);
  {
    cuda::StreamGuard a(outer);
    {
      cuda::StreamGuard b(inner);
      EXPECT_TRUE(same_stream(cuda::current_stream(), inner));
      {
        cuda::StreamGuard c(outer);
        EXPECT_TRUE(same_stream(cuda::current_stream(), outer));
      }
      EXPECT_TRUE(same_stream(cuda::current_stream(), inner));
    }
    EXPECT_TRUE(same_stream(cuda::current_stream(), outer));
  }
  EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));

  try {
    cuda::StreamGuard a(outer);
    cuda::StreamGuard b(inner);
    throw std::runtime_error("leaving both scopes");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));
}

TEST_P(DeviceCudaStreams, SetStreamSelectsTheStreamUntilSetAgain) {
  const cuda::Stream side = cuda::Stream::create();
  const cuda::Stream other = cuda::Stream::create();
  cuda::set_stream(side);
  EXPECT_TRUE(same_stream(cuda::current_stream(), side));
  EXPECT_TRUE(same_stream(cuda::current_stream(0), side));
  EXPECT_EQ(cuda::current_device(), 0);
  {
    // A guard restores what set_stream chose, not the default stream.
    cuda::StreamGuard on(other);
    EXPECT_TRUE(same_stream(cuda::current_stream(), other));
  }
  EXPECT_TRUE(same_stream(cuda::current_stream(), side));
  cuda::set_stream(side);  // again: harmless
  EXPECT_TRUE(same_stream(cuda::current_stream(), side));
  cuda::set_stream(cuda::default_stream());
  EXPECT_TRUE(same_stream(cuda::current_stream(), cuda::default_stream()));
}

// ---- where work goes, and who waits for it ----

TEST_P(DeviceCudaStreams, OpsQueueOnTheCurrentStream) {
  const cuda::Stream side = cuda::Stream::create();
  cuda::synchronize();
  {
    cuda::StreamGuard on(side);
    queue_busy_work(device());
  }
  EXPECT_FALSE(side.query()) << "the products under the guard did not go to the guarded stream";
  EXPECT_TRUE(cuda::default_stream().query()) << "the products under the guard went to the default stream";
  side.synchronize();
  EXPECT_TRUE(side.query());

  cuda::set_stream(side);
  queue_busy_work(device());
  cuda::set_stream(cuda::default_stream());
  EXPECT_FALSE(side.query()) << "the products after set_stream did not go to that stream";
  EXPECT_TRUE(cuda::default_stream().query()) << "the products after set_stream went to the default stream";
  side.synchronize();
  EXPECT_TRUE(side.query());
}

TEST_P(DeviceCudaStreams, CreatedStreamsDoNotWaitForTheDefaultStream) {
  const cuda::Stream side = cuda::Stream::create();
  // First use of each stream's cache, so that nothing below needs new driver memory.
  {
    cuda::StreamGuard on(side);
    (void)full({8}, 1.0f, float_options()).sum().item<float>();
  }
  (void)full({8}, 1.0f, float_options()).sum().item<float>();

  queue_busy_work(device());  // on the default stream
  {
    cuda::StreamGuard on(side);
    Tensor y = full({8}, 2.0f, float_options()) * 3;
  }
  side.synchronize();
  EXPECT_FALSE(cuda::default_stream().query())
      << "work on a created stream waited for the default stream (a blocking stream?)";
  cuda::synchronize();

  {
    cuda::StreamGuard on(side);
    queue_busy_work(device());
  }
  Tensor z = full({8}, 2.0f, float_options()) * 3;  // on the default stream
  cuda::default_stream().synchronize();
  EXPECT_FALSE(side.query()) << "the default stream waited for work on a created stream";
  side.synchronize();
}

TEST_P(DeviceCudaStreams, ReadingOnASideStreamWaitsForItAlone) {
  const cuda::Stream side = cuda::Stream::create();
  {
    cuda::StreamGuard on(side);
    (void)full({8}, 1.0f, float_options()).sum().item<float>();  // the side stream's cache in use
  }
  queue_busy_work(device());  // on the default stream
  {
    cuda::StreamGuard on(side);
    Tensor y = full({8}, 2.5f, float_options());
    EXPECT_TRUE(equal(y.cpu(), full({8}, 2.5f)));
    EXPECT_EQ(y.sum().item<float>(), 20.0f);
  }
  EXPECT_FALSE(cuda::default_stream().query()) << "reading on a side stream waited for the default stream";
}

TEST_P(DeviceCudaStreams, ReadingInsideTheGuardWaitsForTheSideStream) {
  constexpr int64_t kN = int64_t{1} << 22;
  const Tensor x_cpu = rand({kN});
  Tensor reference = x_cpu;
  for (int i = 0; i < 50; ++i) reference = reference * 1.0001 + 0.5;

  const cuda::Stream side = cuda::Stream::create();
  Tensor x = on_device(x_cpu);
  side.wait_stream(cuda::current_stream());
  cuda::StreamGuard on(side);
  // Each read below comes right after long work queued on the side stream: it must wait for it.
  queue_busy_work(device());
  for (int i = 0; i < 50; ++i) x = x * 1.0001 + 0.5;
  EXPECT_CLOSE_TO_CPU(x, reference, 1e-5, 1e-5);  // .cpu() on the side stream

  queue_busy_work(device());
  const Tensor total = (x * 2).to(kFloat64).sum();
  const double want = (reference * 2).to(kFloat64).sum().item<double>();
  EXPECT_NEAR(total.item<double>(), want, 1e-5 * want);

  queue_busy_work(device());
  const Tensor printed = full({3}, 0.25f, float_options()) * 2 + 1;
  EXPECT_EQ(printed.str(), "tensor([1.5000, 1.5000, 1.5000], device='cuda:0')");
}

TEST_P(DeviceCudaStreams, WorkOnASideStreamMatchesTheCpuOnceTheStreamsAreOrdered) {
  const Tensor a = randn({256, 192}), b = randn({192, 128}), c = randn({256, 128});
  const Tensor a_dev = on_device(a), b_dev = on_device(b), c_dev = on_device(c);
  const Tensor x_cpu = a * 0.5, w_cpu = b * 0.5, bias_cpu = c * 0.5;
  const Tensor prod_cpu = matmul(x_cpu, w_cpu);
  const cuda::Stream main = cuda::current_stream();
  for (const cuda::Stream& side : {cuda::Stream::create(), cuda::Stream::create(0, -1)}) {
    SCOPED_TRACE(describe(side));
    // The inputs are written on the main stream behind long work: the side stream must wait.
    queue_busy_work(device());
    const Tensor x = a_dev * 0.5, w = b_dev * 0.5, bias = c_dev * 0.5;
    side.wait_stream(main);
    Tensor prod, act, total, probs;
    {
      cuda::StreamGuard on(side);
      queue_busy_work(device());  // the results come late: main must wait for them too
      prod = matmul(x, w);
      act = (prod + bias).relu() * bias.sigmoid() - prod.tanh();
      total = act.sum({1});
      probs = softmax(prod, 1);
    }
    main.wait_stream(side);
    // Read on the main stream (close_to_cpu copies to the CPU on the current stream).
    EXPECT_CLOSE_TO_CPU(prod, prod_cpu, 1e-4, 1e-4);
    const Tensor act_cpu = (prod_cpu + bias_cpu).relu() * bias_cpu.sigmoid() - prod_cpu.tanh();
    EXPECT_CLOSE_TO_CPU(act, act_cpu, 1e-4, 1e-4);
    EXPECT_CLOSE_TO_CPU(total, act_cpu.sum({1}), 1e-4, 1e-3);
    EXPECT_CLOSE_TO_CPU(probs, softmax(prod_cpu, 1), 1e-4, 1e-6);
    // Allocated on the side stream, used on the main one.
    for (const Tensor& t : {prod, act, total, probs}) cuda::record_stream(t, main);
  }
}

// cuBLAS and cuDNN calls bind a library handle to the caller's stream. Were one handle shared by
// threads, one thread's product could be queued on the other's stream, behind the long work there,
// and read on its own stream before it ran. Each thread has its own handle, so both match the CPU.
TEST_P(DeviceCudaStreams, ThreadsOnTheirOwnStreamsGetTheirOwnLibraryCalls) {
  const Tensor a = randn({128, 96}), b = randn({96, 64});
  const Tensor x = randn({2, 3, 16, 16}), w = randn({4, 3, 3, 3});
  const Tensor prod_cpu = matmul(a, b), conv_cpu = nn::functional::conv2d(x, w);
  const Tensor a_dev = on_device(a), b_dev = on_device(b), x_dev = on_device(x), w_dev = on_device(w);
  constexpr int kThreads = 2, kRounds = 8;
  std::vector<std::vector<Tensor>> prods(kThreads), convs(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        cuda::StreamGuard on(cuda::Stream::create(device().index()));
        for (int round = 0; round < kRounds; ++round) {
          if (t == 0) queue_busy_work(device());  // thread 0's stream stays busy throughout
          // Copying to the CPU waits for this thread's stream only.
          prods[t].push_back(matmul(a_dev, b_dev).to(Device("cpu")));
          convs[t].push_back(nn::functional::conv2d(x_dev, w_dev).to(Device("cpu")));
        }
      } catch (const Error& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(errors[t], "");
    ASSERT_EQ(prods[t].size(), static_cast<size_t>(kRounds));
    for (int round = 0; round < kRounds; ++round) {
      EXPECT_CLOSE_TO_CPU(prods[t][round], prod_cpu, 1e-4, 1e-4);
      EXPECT_CLOSE_TO_CPU(convs[t][round], conv_cpu, 1e-4, 1e-4);
    }
  }
}

// ---- events ----

TEST_P(DeviceCudaStreams, AnEventRecordedOnASideStreamOrdersTheDefaultStream) {
  const Tensor x_cpu = randn({1024, 256});
  const cuda::Stream main = cuda::current_stream();
  const cuda::Stream side = cuda::Stream::create();
  const Tensor x = on_device(x_cpu);
  side.wait_stream(main);
  cuda::Event ready;
  EXPECT_EQ(ready.device(), 0);
  Tensor y;
  {
    cuda::StreamGuard on(side);
    queue_busy_work(device());
    y = x * 3 + 1;
  }
  ready.record(side);  // on the side stream, though the default stream is current
  EXPECT_FALSE(ready.query()) << "the event was not recorded behind the side stream's work";
  main.wait_event(ready);
  const Tensor z = y.softmax(1) * 2;  // queued on the default stream, runs after the event
  EXPECT_CLOSE_TO_CPU(z, (x_cpu * 3 + 1).softmax(1) * 2, 1e-5, 1e-6);
  ready.synchronize();
  EXPECT_TRUE(ready.query());
  cuda::record_stream(y, main);
}

TEST_P(DeviceCudaStreams, EventsAndStreamsReportCompletion) {
  const cuda::Stream side = cuda::Stream::create();
  cuda::Event start, stop;
  start.record(side);
  {
    cuda::StreamGuard on(side);
    queue_busy_work(device());
  }
  stop.record(side);
  EXPECT_FALSE(stop.query());
  EXPECT_FALSE(side.query());
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  EXPECT_TRUE(start.query());
  EXPECT_GT(start.elapsed_ms(stop), 0.0f);

  {
    cuda::StreamGuard on(side);
    queue_busy_work(device());
  }
  EXPECT_FALSE(side.query());
  side.synchronize();
  EXPECT_TRUE(side.query());
}

TEST_P(DeviceCudaStreams, EventsMoveIntoContainersAndAMovedFromOneSaysSo) {
  std::vector<cuda::Event> events(2);
  events[0].record();
  queue_busy_work(device());
  events[1].record();
  events.emplace_back();  // reallocates: the recorded events move
  events[1].synchronize();
  EXPECT_TRUE(events[0].query());
  EXPECT_GT(events[0].elapsed_ms(events[1]), 0.0f);
  cuda::Event kept = std::move(events[0]);
  EXPECT_TRUE(kept.query());
  EXPECT_EQ(kept.device(), 0);
  // NOLINTNEXTLINE(bugprone-use-after-move): what a moved-from event does is the point
  const std::string message = ember_test::error_of([&] { events[0].record(); });
  EXPECT_NE(message.find("moved from"), std::string::npos) << message;
  events[0] = cuda::Event();  // assigning a new event makes it usable again
  EXPECT_NO_THROW(events[0].record());
  events[0].synchronize();
}

TEST_P(DeviceCudaStreams, AnEventRecordsOnAnyStreamOfItsDevice) {
  cuda::Event event;
  EXPECT_EQ(event.device(), 0);
  EXPECT_NO_THROW(event.record(cuda::Stream::create(0)));
  EXPECT_NO_THROW(event.record(cuda::Stream::create(-1, -1)));
  EXPECT_NO_THROW(event.record(cuda::default_stream(0)));
  event.synchronize();
  EXPECT_TRUE(event.query());
}

TEST_P(DeviceCudaStreams, SynchronizeWaitsForEveryStream) {
  const cuda::Stream side = cuda::Stream::create();
  const cuda::Stream high = cuda::Stream::create(0, -1);
  for (const cuda::Stream& s : {side, high}) {
    cuda::StreamGuard on(s);
    queue_busy_work(device());
  }
  EXPECT_FALSE(side.query());
  cuda::synchronize();
  EXPECT_TRUE(side.query()) << "cuda::synchronize() did not wait for a created stream";
  EXPECT_TRUE(high.query()) << "cuda::synchronize() did not wait for a high-priority stream";
  EXPECT_TRUE(cuda::default_stream().query());
}

// ---- memory used across streams ----

TEST_P(DeviceCudaStreams, RecordStreamKeepsMemoryFromReuseUntilTheOtherStreamIsDone) {
  constexpr int64_t kN = int64_t{1} << 22;  // 16 MiB of float32: a block of its own
  constexpr size_t kBytes = kN * sizeof(float);
  const cuda::Stream main = cuda::current_stream();
  const cuda::Stream side = cuda::Stream::create();
  cuda::synchronize();
  const size_t at_start = cuda::memory_allocated();

  Tensor t;
  {
    cuda::StreamGuard on(side);
    t = full({kN}, 1.5f, float_options());  // allocated on the side stream
  }
  const void* t_memory = t.data_ptr();
  main.wait_stream(side);
  queue_busy_work(device());
  const Tensor doubled = t * 2;  // main reads t only after the long work
  cuda::record_stream(t, main);
  const size_t with_t = cuda::memory_allocated();
  EXPECT_GE(with_t, at_start + 2 * kBytes);
  t = Tensor();  // released while main has yet to read it
  EXPECT_EQ(cuda::memory_allocated(), with_t - kBytes) << "memory counts as released at the free, as in PyTorch";

  Tensor overwrite;
  {
    cuda::StreamGuard on(side);
    overwrite = full({kN}, -1.0f, float_options());  // the side stream is idle: this runs at once
  }
  if (!main.query()) {
    // main still had t's reader queued when `overwrite` was allocated.
    EXPECT_NE(overwrite.data_ptr(), t_memory) << "t's memory was handed out while main still had to read it";
  }
  EXPECT_TRUE(equal(doubled.cpu(), full({kN}, 3.0f))) << "t's memory was overwritten before main read it";

  // Once main has finished, t's memory is reused rather than new memory taken from the driver.
  cuda::synchronize();
  const size_t reserved = cuda::memory_reserved();
  Tensor again;
  {
    cuda::StreamGuard on(side);
    again = full({kN}, 7.0f, float_options());
    EXPECT_EQ(cuda::memory_reserved(), reserved) << "the memory t released was not reused after the wait";
    EXPECT_TRUE(equal((again + overwrite).cpu(), full({kN}, 6.0f)));
  }
  again = Tensor();
  overwrite = Tensor();
  EXPECT_EQ(cuda::memory_allocated(), at_start + doubled.nbytes());
}

TEST_P(DeviceCudaStreams, RecordStreamNeedsACudaTensorOfTheStreamsDevice) {
  const cuda::Stream side = cuda::Stream::create();
  EXPECT_THROW(cuda::record_stream(zeros({4}), side), Error);
  EXPECT_THROW(cuda::record_stream(zeros({4}), cuda::default_stream()), Error);
  EXPECT_THROW(cuda::record_stream(Tensor(), side), Error);
  EXPECT_THROW(cuda::record_stream(Tensor(), cuda::default_stream()), Error);
  const Tensor x = ones({64}, float_options());
  EXPECT_NO_THROW(cuda::record_stream(x, side));
  EXPECT_NO_THROW(cuda::record_stream(x, side));                    // twice: harmless
  EXPECT_NO_THROW(cuda::record_stream(x, cuda::default_stream()));  // its own stream: nothing to do
  EXPECT_NO_THROW(cuda::record_stream(x.narrow(0, 8, 16), side));   // a view: its storage's memory
}

// ---- a training loop ----

struct Weights {
  std::vector<Tensor> before, after;  // on the CPU
};

// Five SGD steps of a small model on `device`, on `side` when given (else on the current stream).
Weights train_five_steps(const Device& device, const std::optional<cuda::Stream>& side) {
  manual_seed(77);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(24, 48), std::make_shared<nn::Tanh>(),
                                                std::make_shared<nn::Linear>(48, 6));
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 5; ++i) {
    xs.push_back(randn({32, 24}).to(device));
    ys.push_back(randint(0, 6, {32}).to(device));
  }
  model->to(device);
  Weights out;
  for (const Tensor& p : model->parameters()) out.before.push_back(p.detach().cpu());
  optim::SGD opt(model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3});
  const cuda::Stream main = cuda::current_stream();
  {
    std::optional<cuda::StreamGuard> on;
    if (side) {
      side->wait_stream(main);  // the parameters and batches were written on main
      on.emplace(*side);
      // Any op of the steps that went to another stream would now run ahead of its inputs.
      queue_busy_work(device);
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      opt.zero_grad();
      Tensor loss = nn::functional::cross_entropy((*model)(xs[i]), ys[i]);
      loss.backward();
      opt.step();
    }
  }
  if (side) main.wait_stream(*side);
  for (const Tensor& p : model->parameters()) out.after.push_back(p.detach().cpu());
  return out;
}

TEST_P(DeviceCudaStreams, TrainingOnASideStreamMatchesTheDefaultStreamBitForBit) {
  const Weights reference = train_five_steps(device(), std::nullopt);
  const Weights repeated = train_five_steps(device(), std::nullopt);
  const Weights on_side = train_five_steps(device(), cuda::Stream::create());
  ASSERT_EQ(reference.after.size(), 4u);
  ASSERT_EQ(on_side.after.size(), reference.after.size());
  for (size_t i = 0; i < reference.after.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    EXPECT_TRUE(equal(on_side.before[i], reference.before[i]));
    EXPECT_FALSE(equal(reference.after[i], reference.before[i])) << "the steps did not change the parameter";
    ASSERT_TRUE(equal(repeated.after[i], reference.after[i])) << "training on the default stream is not reproducible";
    EXPECT_TRUE(equal(on_side.after[i], reference.after[i])) << "training on a side stream gave other weights";
  }
}

// ---- two GPUs ----

TEST_P(DeviceCudaStreams, OnTwoGpusStreamsSelectTheirDeviceAndStayOnIt) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs; this machine has " << cuda::device_count();
  const cuda::Stream s0 = cuda::Stream::create(0);
  const cuda::Stream s1 = cuda::Stream::create(1);
  EXPECT_EQ(s1.device(), 1);
  EXPECT_NE(s1.handle(), nullptr);
  EXPECT_TRUE(s0 != s1);
  EXPECT_TRUE(cuda::default_stream(0) != cuda::default_stream(1));  // both nullptr, other devices
  EXPECT_TRUE(same_stream(cuda::current_stream(1), cuda::default_stream(1)));
  {
    cuda::StreamGuard on(s1);
    EXPECT_EQ(cuda::current_device(), 1);
    EXPECT_TRUE(same_stream(cuda::current_stream(), s1));
    EXPECT_TRUE(same_stream(cuda::current_stream(1), s1));
    EXPECT_TRUE(same_stream(cuda::current_stream(0), cuda::default_stream(0)));
    const Tensor y = ones({4}, Device(kCUDA)) * 2;  // "cuda" now means cuda:1
    EXPECT_EQ(y.device(), Device(kCUDA, 1));
    EXPECT_TRUE(equal(y.cpu(), full({4}, 2.0f)));
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_TRUE(same_stream(cuda::current_stream(1), cuda::default_stream(1)));

  cuda::set_stream(s1);
  EXPECT_EQ(cuda::current_device(), 1);
  EXPECT_TRUE(same_stream(cuda::current_stream(), s1));
  cuda::set_stream(cuda::default_stream(0));
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_TRUE(same_stream(cuda::current_stream(1), s1)) << "set_stream changes only its own device's stream";
  cuda::set_stream(cuda::default_stream(1));
  cuda::set_stream(cuda::default_stream(0));
  EXPECT_EQ(cuda::current_device(), 0);

  cuda::Event event;  // of cuda:0
  EXPECT_THROW(event.record(s1), Error);
  EXPECT_THROW(event.record(cuda::default_stream(1)), Error);
  EXPECT_NO_THROW(event.record(s0));

  const Tensor on0 = ones({4}, Device(kCUDA, 0));
  const Tensor on1 = ones({4}, Device(kCUDA, 1));
  EXPECT_THROW(cuda::record_stream(on0, s1), Error);
  EXPECT_THROW(cuda::record_stream(on1, s0), Error);
  EXPECT_NO_THROW(cuda::record_stream(on1, s1));
  EXPECT_EQ(cuda::current_device(), 0);
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceCudaStreams);

}  // namespace
