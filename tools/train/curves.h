#pragma once
// curves.png of an `ember train` run: the loss and accuracy curves, drawn with cairo.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ember::train {

/// Whether this build draws curves.png: cairo is optional (CMake's EMBER_WITH_CAIRO), and without
/// it write_curves_png and read_png throw an ember::Error saying so.
bool curves_available();

/// What one finished epoch measured. Accuracy is in percent.
struct EpochPoint {
  int64_t epoch;
  double train_loss, test_loss, test_accuracy;
};

/// Writes a 1000×450 PNG with `title` on top and two panels: "loss" (train and test loss per epoch,
/// with a legend) and "test accuracy (%)". Epochs must be strictly increasing; there must be at
/// least one. Non-finite values (a diverged loss) are left out of the curves. The file is replaced
/// atomically (io::AtomicFileWriter), so a viewer never sees half a PNG. Errors are ember::Error
/// naming the path and the reason (cairo's own words for cairo's).
void write_curves_png(const std::filesystem::path& path, const std::vector<EpochPoint>& points,
                      const std::string& title);

/// A PNG's pixels as cairo decodes them: row-major 0xAARRGGBB words with premultiplied alpha
/// (opaque images, like curves.png, are plain RGB with alpha 0xff).
struct PngPixels {
  int width = 0;
  int height = 0;
  std::vector<uint32_t> argb;

  uint32_t at(int x, int y) const { return argb[static_cast<size_t>(y) * static_cast<size_t>(width) + x]; }
};

/// Decodes a PNG file (with cairo), so that callers and tests that cannot include cairo's headers
/// can check what write_curves_png drew. An unreadable or invalid file is an ember::Error.
PngPixels read_png(const std::filesystem::path& path);

}  // namespace ember::train
