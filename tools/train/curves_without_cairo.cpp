// curves.png in a build without cairo (EMBER_WITH_CAIRO=OFF, or AUTO on a machine without
// libcairo2-dev): the trainer asks curves_available() and leaves the picture out, and direct callers
// get an error that says how to get it.
#include <string>

#include "ember/error.h"
#include "train/curves.h"

namespace ember::train {

namespace {

[[noreturn]] void fail_without_cairo(const std::string& what) {
  throw Error(what +
              ": this ember was built without cairo, which draws and reads PNG files; install cairo's "
              "development files (Debian: libcairo2-dev) and configure again (EMBER_WITH_CAIRO=ON insists)");
}

}  // namespace

bool curves_available() { return false; }

void write_curves_png(const std::filesystem::path& path, const std::vector<EpochPoint>&, const std::string&) {
  fail_without_cairo("write_curves_png('" + path.string() + "')");
}

PngPixels read_png(const std::filesystem::path& path) { fail_without_cairo("read_png('" + path.string() + "')"); }

}  // namespace ember::train
