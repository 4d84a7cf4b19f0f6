#pragma once
/// Scalars for TensorBoard, as torch.utils.tensorboard.SummaryWriter writes them.
///
/// A SummaryWriter owns one event file in its log folder, named as PyTorch names it
/// (`events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>.<counter>`). The file is a
/// sequence of TFRecords (little-endian uint64 length, masked CRC32C of the length, the data, masked
/// CRC32C of the data), each holding one serialised `tensorboard.Event` protobuf. The first event
/// carries only the wall time and the file version "brain.Event:2"; every add_scalar() appends one
/// event with a summary holding one simple_value.
///
/// Each event is handed to the operating system as soon as it is added, so a running TensorBoard
/// sees it at once and a write error (disk full) surfaces at the call that caused it; flush() also
/// asks the disk to keep it (fsync). Errors are ember::Error naming the file and the reason. After
/// a failed write the writer refuses further events, since the file may end in a partial record.
/// One writer may be used from several threads.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

namespace ember::io {

class SummaryWriter {
 public:
  /// Creates `log_dir` (and its parents) when missing and opens a new event file in it, then
  /// writes the file-version event.
  explicit SummaryWriter(std::filesystem::path log_dir);
  SummaryWriter(SummaryWriter&&) noexcept;
  SummaryWriter& operator=(SummaryWriter&&) noexcept;
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;
  /// Flushes and closes the file; errors at this point are swallowed (use flush() to see them).
  ~SummaryWriter();

  /// Appends one scalar. `tag` must be non-empty, valid UTF-8 (TensorBoard's reader rejects
  /// anything else); `value` is stored as a float32, as PyTorch does; `wall_time` defaults to now,
  /// in seconds since the Unix epoch.
  void add_scalar(std::string_view tag, double value, int64_t step, std::optional<double> wall_time = {});

  /// Makes every event added so far durable (fsync of the file, and of its folder the first time).
  void flush();

  /// The event file's path.
  const std::filesystem::path& file() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum TFRecord uses. `crc` is a
/// previous result to continue from, so crc32c(b, crc32c(a)) == crc32c(a + b).
/// crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view data, uint32_t crc = 0);

/// TFRecord's masking of a stored CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a CRC of
/// data that itself holds CRCs does not degenerate.
uint32_t masked_crc32c(uint32_t crc);

}  // namespace ember::io
