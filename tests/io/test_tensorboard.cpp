// TensorBoard event files: CRC32C against its published check values, records byte-identical to
// those PyTorch's writer produces (the hex strings below were made with tensorboard's own
// event_pb2 and its masked_crc32c), and whole files read back with a small parser that checks the
// framing and both CRCs of every record.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "ember/error.h"
#include "ember/io/tensorboard.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

namespace {

using ember_test::error_of;
using ember_test::TempDir;

using namespace ember;
using namespace ember::io;
namespace fs = std::filesystem;

// ---- helpers ----

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

// ---- a reader for what the writer produces: TFRecord framing, then the Event fields ----

template <typename T>
T load_le(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// The payloads of every record; a bad length, a truncated record or a wrong CRC fails the test.
std::vector<std::string> read_records(const std::string& file) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_GE(file.size() - at, 12u) << "truncated record header at byte " << at;
    if (file.size() - at < 12) break;
    const auto length = load_le<uint64_t>(file, at);
    EXPECT_EQ(load_le<uint32_t>(file, at + 8), masked_crc32c(crc32c(std::string_view(file).substr(at, 8))))
        << "length CRC of the record at byte " << at;
    EXPECT_LE(length + 4, file.size() - at - 12) << "truncated record at byte " << at;
    if (length + 4 > file.size() - at - 12) break;
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(load_le<uint32_t>(file, at + 12 + length), masked_crc32c(crc32c(data)))
        << "data CRC of the record at byte " << at;
    out.push_back(data);
    at += 12 + length + 4;
  }
  return out;
}

struct DecodedEvent {
  std::optional<double> wall_time;
  int64_t step = 0;
  std::optional<std::string> file_version;
  std::vector<std::pair<std::string, float>> values;  // (tag, simple_value)
};

struct ProtoReader {
  std::string_view bytes;
  size_t at = 0;

  bool done() const { return at >= bytes.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= bytes.size()) throw std::runtime_error("truncated varint");
      const auto b = static_cast<unsigned char>(bytes[at++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw std::runtime_error("varint longer than ten bytes");
  }
  std::string_view take(size_t n) {
    if (bytes.size() - at < n) throw std::runtime_error("truncated field");
    const std::string_view s = bytes.substr(at, n);
    at += n;
    return s;
  }
  std::string_view length_delimited() { return take(varint()); }
};

DecodedEvent decode_event(std::string_view bytes) {
  DecodedEvent e;
  ProtoReader r{bytes};
  while (!r.done()) {
    const uint64_t key = r.varint();
    switch (key) {
      case (1 << 3) | 1:
        e.wall_time = load_le<double>(r.take(8), 0);
        break;
      case (2 << 3) | 0:
        e.step = static_cast<int64_t>(r.varint());
        break;
      case (3 << 3) | 2:
        e.file_version = std::string(r.length_delimited());
        break;
      case (5 << 3) | 2: {
        ProtoReader summary{r.length_delimited()};
        while (!summary.done()) {
          if (summary.varint() != ((1 << 3) | 2)) throw std::runtime_error("unexpected field in Summary");
          ProtoReader value{summary.length_delimited()};
          std::pair<std::string, float> tv{"", std::numeric_limits<float>::quiet_NaN()};
          while (!value.done()) {
            const uint64_t vkey = value.varint();
            if (vkey == ((1 << 3) | 2))
              tv.first = std::string(value.length_delimited());
            else if (vkey == ((2 << 3) | 5))
              tv.second = load_le<float>(value.take(4), 0);
            else
              throw std::runtime_error("unexpected field in Summary.Value");
          }
          e.values.push_back(tv);
        }
        break;
      }
      default:
        throw std::runtime_error("unexpected field in Event: key " + std::to_string(key));
    }
  }
  return e;
}

std::vector<DecodedEvent> read_events(const fs::path& file) {
  std::vector<DecodedEvent> out;
  for (const std::string& record : read_records(read_file(file))) out.push_back(decode_event(record));
  return out;
}

// ---- CRC32C ----

TEST(Crc32c, StandardCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  // The iSCSI test vectors of RFC 3720, appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32c, ContinuesFromAPreviousResult) {
  EXPECT_EQ(crc32c("6789", crc32c("12345")), 0xE3069283u);
  EXPECT_EQ(crc32c("123456789", crc32c("")), 0xE3069283u);
}

TEST(Crc32c, MaskedAsTFRecordMasksIt) {
  EXPECT_EQ(masked_crc32c(0), 0xa282ead8u);
  EXPECT_EQ(masked_crc32c(crc32c("123456789")), 0xc78ab0e5u);  // tensorboard's masked_crc32c(b"123456789")
  const uint32_t c = 0x12345678u;
  EXPECT_EQ(masked_crc32c(c), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

// ---- SummaryWriter ----

TEST(SummaryWriter, NamesTheFileAsPyTorchDoes) {
  TempDir dir("tensorboard");
  SummaryWriter a(dir / "run" / "nested");
  SummaryWriter b(dir / "run" / "nested");
  EXPECT_TRUE(fs::is_regular_file(a.file()));
  EXPECT_EQ(a.file().parent_path(), dir / "run" / "nested");
  const std::regex pattern(R"(events\.out\.tfevents\.\d{10}\..+\.(\d+)\.(\d+))");
  std::smatch ma, mb;
  const std::string na = a.file().filename().string(), nb = b.file().filename().string();
  ASSERT_TRUE(std::regex_match(na, ma, pattern)) << na;
  ASSERT_TRUE(std::regex_match(nb, mb, pattern)) << nb;
  EXPECT_EQ(ma[1].str(), std::to_string(::getpid()));
  EXPECT_NE(a.file(), b.file());
}

TEST(SummaryWriter, FirstEventCarriesTheFileVersion) {
  TempDir dir("tensorboard");
  // The writer's clock, system_clock: time() reads the kernel's coarse clock, which lags it by up
  // to a tick, so a second boundary between the two made this test fail now and then.
  const auto seconds_now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  const double before = seconds_now();
  fs::path file;
  {
    SummaryWriter w(dir / "run");
    file = w.file();
  }
  const std::vector<DecodedEvent> events = read_events(file);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  ASSERT_TRUE(events[0].wall_time.has_value());
  EXPECT_GE(*events[0].wall_time, before);
  EXPECT_LE(*events[0].wall_time, seconds_now());
  EXPECT_EQ(events[0].step, 0);
  EXPECT_TRUE(events[0].values.empty());
}

TEST(SummaryWriter, ScalarsReadBack) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  w.add_scalar("loss/train", 2.5, 0, 100.0);
  w.add_scalar("loss/train", 0.1, 1, 101.0);
  w.add_scalar("accuracy/test", 87.25, 1, 101.5);
  w.add_scalar("loss/test", 0.0, -3, 102.0);
  w.add_scalar("big", 1e300, 1'000'000'000'000, 103.0);
  w.add_scalar("größe", -1e-3, 7);  // UTF-8 tag, wall time now
  w.flush();
  const std::vector<DecodedEvent> events = read_events(w.file());
  ASSERT_EQ(events.size(), 7u);
  struct Expected {
    std::string tag;
    float value;
    int64_t step;
    double wall_time;
  };
  const std::vector<Expected> expected = {
      {"loss/train", 2.5f, 0, 100.0},
      {"loss/train", 0.1f, 1, 101.0},
      {"accuracy/test", 87.25f, 1, 101.5},
      {"loss/test", 0.0f, -3, 102.0},
      {"big", std::numeric_limits<float>::infinity(), 1'000'000'000'000, 103.0},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].tag);
    const DecodedEvent& e = events[i + 1];
    EXPECT_FALSE(e.file_version.has_value());
    EXPECT_EQ(e.step, expected[i].step);
    EXPECT_EQ(e.wall_time, expected[i].wall_time);
    ASSERT_EQ(e.values.size(), 1u);
    EXPECT_EQ(e.values[0].first, expected[i].tag);
    EXPECT_EQ(e.values[0].second, expected[i].value);
  }
  EXPECT_EQ(events[6].values.at(0).first, "größe");
  EXPECT_EQ(events[6].values.at(0).second, -1e-3f);
  EXPECT_EQ(events[6].step, 7);
  EXPECT_NEAR(events[6].wall_time.value(), static_cast<double>(std::time(nullptr)), 5.0);
}

// Each scalar event, framing included, matches what tensorboard's protobuf + record writer emit.
TEST(SummaryWriter, RecordsAreByteIdenticalToTensorBoards) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  w.add_scalar("loss/train", 0.125, 42, 1700000000.25);
  w.add_scalar("z", 0.0, -1, 2.0);
  w.flush();
  const std::vector<std::string> records = read_records(read_file(w.file()));
  ASSERT_EQ(records.size(), 3u);
  const std::string file = read_file(w.file());
  const std::string first =
      from_hex("200000000000000029eda9500900001040fc54d941102a2a130a110a0a6c6f73732f747261696e150000003e42831812");
  const std::string second =
      from_hex("200000000000000029eda95009000000000000004010ffffffffffffffffff012a0a0a080a017a15000000009275d6a7");
  EXPECT_EQ(file.substr(file.size() - first.size() - second.size()), first + second);
}

// The same framing for the version event, with a fixed wall time (tensorboard's bytes again).
TEST(SummaryWriter, VersionEventLayout) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  const std::string head = read_file(w.file());
  const std::vector<std::string> records = read_records(head);
  ASSERT_EQ(records.size(), 1u);
  // Only the wall time differs from tensorboard's record for wall_time=1700000000.5.
  const std::string expected = from_hex("0900002040fc54d9411a0d627261696e2e4576656e743a32");
  ASSERT_EQ(records[0].size(), expected.size());
  EXPECT_EQ(records[0].substr(9), expected.substr(9));
  EXPECT_EQ(head.substr(0, 8), from_hex("1800000000000000"));
}

TEST(SummaryWriter, EventsReachTheFileBeforeFlush) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  w.add_scalar("x", 1.0, 1);
  EXPECT_EQ(read_events(w.file()).size(), 2u);  // a running TensorBoard sees it at once
}

TEST(SummaryWriter, ConcurrentWritersKeepRecordsWhole) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&w, t] {
      for (int i = 0; i < 200; ++i) w.add_scalar("thread" + std::to_string(t), i, i);
    });
  for (auto& th : threads) th.join();
  w.flush();
  EXPECT_EQ(read_events(w.file()).size(), 1u + 4 * 200);
}

TEST(SummaryWriter, MovedWriterKeepsWriting) {
  TempDir dir("tensorboard");
  SummaryWriter a(dir / "run");
  const fs::path file = a.file();
  SummaryWriter b(std::move(a));
  b.add_scalar("x", 1.0, 1);
  EXPECT_EQ(b.file(), file);
  EXPECT_NE(error_of([&] { a.add_scalar("x", 1.0, 1); }).find("moved from"), std::string::npos);  // NOLINT
  b.flush();
  EXPECT_EQ(read_events(file).size(), 2u);
}

TEST(SummaryWriter, BadArgumentsAreErrors) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  const std::string file = w.file().string();
  std::string msg = error_of([&] { w.add_scalar("", 1.0, 0); });
  EXPECT_NE(msg.find("non-empty tag"), std::string::npos) << msg;
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  msg = error_of([&] { w.add_scalar("bad\xff", 1.0, 0); });
  EXPECT_NE(msg.find("UTF-8"), std::string::npos) << msg;
  msg = error_of([&] { w.add_scalar("x", 1.0, 0, std::nan("")); });
  EXPECT_NE(msg.find("wall_time must be finite"), std::string::npos) << msg;
  // None of these left anything behind, and the writer still works.
  w.add_scalar("x", 1.0, 0);
  EXPECT_EQ(read_events(w.file()).size(), 2u);
  // NaN and infinite values are legitimate scalars (a diverging loss).
  w.add_scalar("nan", std::nan(""), 1);
  w.flush();
  EXPECT_TRUE(std::isnan(read_events(w.file()).back().values.at(0).second));
}

TEST(SummaryWriter, UnwritableFolderIsAnError) {
  TempDir dir("tensorboard");
  std::ofstream(dir / "a_file") << "not a folder";
  const fs::path log_dir = dir / "a_file" / "run";
  const std::string msg = error_of([&] { SummaryWriter w(log_dir); });
  EXPECT_NE(msg.find("cannot create the log folder"), std::string::npos) << msg;
  EXPECT_NE(msg.find(log_dir.string()), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { SummaryWriter w(""); }).find("empty"), std::string::npos);
}

// A failed write (RLIMIT_FSIZE stops writes even for root, as a full disk would) names the file and
// the reason, and the writer refuses to append after a possibly partial record.
TEST(SummaryWriter, FailedWriteIsAnErrorAndPoisonsTheWriter) {
  TempDir dir("tensorboard");
  SummaryWriter w(dir / "run");
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = error_of([&] { w.add_scalar(std::string(8000, 't'), 1.0, 1); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);

  EXPECT_NE(msg.find("cannot write the event file"), std::string::npos) << msg;
  EXPECT_NE(msg.find(w.file().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(EFBIG)), std::string::npos) << msg;
  const std::string again = error_of([&] { w.add_scalar("x", 1.0, 2); });
  EXPECT_NE(again.find("an earlier write to the event file failed"), std::string::npos) << again;
  EXPECT_NE(error_of([&] { w.flush(); }).find("an earlier write"), std::string::npos);
}

}  // namespace
