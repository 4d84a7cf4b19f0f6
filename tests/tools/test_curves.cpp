// curves.png: written for one and for several epochs, decoded again (through train::read_png, since
// the tests cannot include cairo's headers) and checked for size and for ink in both panels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ember/error.h"
#include "support/error_of.h"
#include "support/temp_dir.h"
#include "train/curves.h"

namespace {

using ember_test::error_of;
using ember_test::TempDir;

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

std::string head_bytes(const fs::path& p, size_t n) {
  std::ifstream in(p, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

bool is_white(uint32_t argb) { return (argb & 0xffffffu) == 0xffffffu; }

// Pixels that are clearly one colour (not grey): the curves, not the text, grid or frame.
bool is_coloured(uint32_t argb) {
  const int r = (argb >> 16) & 0xff, g = (argb >> 8) & 0xff, b = argb & 0xff;
  return std::max({r, g, b}) - std::min({r, g, b}) > 80;
}

struct Ink {
  size_t dark = 0;      // any non-white pixel
  size_t coloured = 0;  // curve colours
};

Ink ink_in(const PngPixels& img, int x0, int x1) {
  Ink ink;
  for (int y = 0; y < img.height; ++y)
    for (int x = x0; x < x1; ++x) {
      const uint32_t p = img.at(x, y);
      ink.dark += !is_white(p);
      ink.coloured += is_coloured(p);
    }
  return ink;
}

std::vector<EpochPoint> five_epochs() {
  return {{1, 0.62, 0.48, 82.1},
          {2, 0.41, 0.40, 85.6},
          {3, 0.36, 0.37, 86.9},
          {4, 0.33, 0.36, 87.4},
          {5, 0.30, 0.35, 88.0}};
}

void expect_a_drawn_chart(const fs::path& png) {
  EXPECT_EQ(head_bytes(png, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  const PngPixels img = read_png(png);
  ASSERT_EQ(img.width, 1000);
  ASSERT_EQ(img.height, 450);
  EXPECT_TRUE(is_white(img.at(0, 0)));  // a white page
  const Ink left = ink_in(img, 0, 500), right = ink_in(img, 500, 1000);
  EXPECT_GT(left.dark, 2000u);  // frame, ticks, labels, legend
  EXPECT_GT(right.dark, 2000u);
  EXPECT_GT(left.coloured, 80u);          // the two loss curves (or their markers) and the legend
  EXPECT_GT(right.coloured, 20u);         // the accuracy curve (a single marker for one epoch)
  EXPECT_LT(left.dark, 500u * 450u / 3);  // a chart, not a filled panel
  EXPECT_LT(right.dark, 500u * 450u / 3);
}

// Every case draws or decodes a PNG, which needs cairo; a build without it has its own case below.
class Curves : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!curves_available()) GTEST_SKIP() << "this build has no cairo (EMBER_WITH_CAIRO), so it draws no curves.png";
  }
};

TEST(CurvesWithoutCairo, SayHowToGetThem) {
  if (curves_available()) GTEST_SKIP() << "this build draws curves.png with cairo";
  TempDir dir("curves");
  const std::string msg = error_of([&] { write_curves_png(dir.path() / "c.png", five_epochs(), "t"); });
  EXPECT_NE(msg.find("built without cairo"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libcairo2-dev"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir.path() / "c.png"));
  EXPECT_NE(error_of([&] { read_png(dir.path() / "c.png"); }).find("built without cairo"), std::string::npos);
}

TEST_F(Curves, FiveEpochs) {
  TempDir dir("curves");
  const fs::path png = dir / "curves.png";
  write_curves_png(png, five_epochs(), "mlp on Fashion-MNIST — SGD lr 0.001");
  expect_a_drawn_chart(png);
  EXPECT_EQ(dir.entries().size(), 1u);  // no temporary file left behind
}

TEST_F(Curves, OneEpochShowsMarkers) {
  TempDir dir("curves");
  const fs::path png = dir / "curves.png";
  write_curves_png(png, {{1, 0.5, 0.45, 84.0}}, "one epoch");
  expect_a_drawn_chart(png);
}

TEST_F(Curves, ManyEpochsAndOddValues) {
  TempDir dir("curves");
  std::vector<EpochPoint> points;
  for (int e = 1; e <= 200; ++e) points.push_back({e, 2.0 / e, 2.2 / e + 0.01, 100.0 - 50.0 / e});
  points[50].test_loss = std::numeric_limits<double>::quiet_NaN();  // a gap, not a failure
  points[51].train_loss = std::numeric_limits<double>::infinity();
  const fs::path png = dir / "curves.png";
  write_curves_png(png, points, "");
  expect_a_drawn_chart(png);
  // Flat curves and all-NaN series still draw axes.
  write_curves_png(png, {{3, 1.0, 1.0, 50.0}, {4, 1.0, 1.0, 50.0}}, "flat");
  expect_a_drawn_chart(png);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  write_curves_png(png, {{1, nan, nan, nan}, {2, nan, nan, nan}}, "diverged");
  EXPECT_EQ(read_png(png).width, 1000);
}

TEST_F(Curves, ReplacesAnEarlierFile) {
  TempDir dir("curves");
  const fs::path png = dir / "curves.png";
  write_curves_png(png, {{1, 0.5, 0.45, 84.0}}, "first");
  const auto first = read_png(png).argb;
  write_curves_png(png, five_epochs(), "second");
  EXPECT_NE(read_png(png).argb, first);
  EXPECT_EQ(dir.entries().size(), 1u);
}

TEST_F(Curves, BadInputIsAnError) {
  TempDir dir("curves");
  const fs::path missing = dir / "no" / "such" / "folder" / "curves.png";
  std::string msg = error_of([&] { write_curves_png(missing, five_epochs(), "t"); });
  EXPECT_NE(msg.find(missing.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;

  const fs::path png = dir / "curves.png";
  msg = error_of([&] { write_curves_png(png, {}, "t"); });
  EXPECT_NE(msg.find("no epochs"), std::string::npos) << msg;
  EXPECT_NE(msg.find(png.string()), std::string::npos) << msg;
  msg = error_of([&] { write_curves_png(png, {{2, 1, 1, 1}, {2, 1, 1, 1}}, "t"); });
  EXPECT_NE(msg.find("strictly increasing"), std::string::npos) << msg;
  // cairo's own error, in cairo's words.
  msg = error_of([&] { write_curves_png(png, five_epochs(), "bad \xff utf-8"); });
  EXPECT_NE(msg.find("cairo"), std::string::npos) << msg;
  EXPECT_NE(msg.find("UTF-8"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(png));
  EXPECT_EQ(dir.entries().size(), 0u);
}

TEST_F(Curves, ReadPngErrors) {
  TempDir dir("curves");
  std::string msg = error_of([&] { read_png(dir / "absent.png"); });
  EXPECT_NE(msg.find("absent.png"), std::string::npos) << msg;
  std::ofstream(dir / "junk.png") << "not a png";
  msg = error_of([&] { read_png(dir / "junk.png"); });
  EXPECT_NE(msg.find("junk.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cairo could not read"), std::string::npos) << msg;
}

}  // namespace
