// curves.png: two line charts drawn with cairo. The layout is fixed (the run directory always holds
// the same picture), so everything is placed in pixels; only the axis ranges depend on the data.
#include "train/curves.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/io/atomic_file.h"

namespace ember::train {

namespace {

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

// ---------------------------------------------------------------------------------------------
// Layout and colours.

constexpr int kWidth = 1000;
constexpr int kHeight = 450;
constexpr double kPanelWidth = kWidth / 2.0;
// The plot area inside each panel: room on the left for tick labels, at the bottom for the epoch
// labels and the axis title, at the top for the page title and the panel title.
constexpr double kPlotLeft = 72, kPlotRight = 24, kPlotTop = 72, kPlotBottom = 62;
constexpr int kMaxMarkedPoints = 40;  // beyond this, markers would merge into a thick line

struct Rgb {
  double r, g, b;
};
// matplotlib's first three colours, which readers of training curves know.
constexpr Rgb kTrainColour{0.122, 0.467, 0.706};
constexpr Rgb kTestColour{1.000, 0.498, 0.055};
constexpr Rgb kAccuracyColour{0.173, 0.627, 0.173};
constexpr Rgb kInk{0.15, 0.15, 0.15};
constexpr Rgb kGrid{0.88, 0.88, 0.88};

void set_colour(cairo_t* cr, const Rgb& c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

// ---------------------------------------------------------------------------------------------
// Axes.

struct Range {
  double lo, hi;
};

struct Axis {
  Range range;
  double step;   // distance between ticks: 1, 2 or 5 times a power of ten
  int decimals;  // digits after the point in tick labels, enough to tell ticks apart
};

double nice_step(double span, int target_ticks) {
  const double raw = span / target_ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * magnitude;
}

// A value axis around [lo, hi] with 5% of margin either side, as matplotlib does, so that no
// point sits on the frame.
Axis value_axis(std::optional<Range> data, std::optional<Range> limits) {
  const Range d = data.value_or(Range{0, 1});
  // A flat curve (or a single epoch) gets a band of ±5% of its value around it.
  const bool flat = d.hi - d.lo < 1e-12 * std::max(1.0, std::abs(d.hi));
  const double margin = flat ? std::max(0.05 * std::abs(d.lo), 1e-3) : 0.05 * (d.hi - d.lo);
  // The margin stops at the limits (no negative loss, no accuracy above 100) unless the data itself
  // goes beyond them.
  Range r{d.lo - margin, d.hi + margin};
  if (limits) r = {std::max(r.lo, std::min(limits->lo, d.lo)), std::min(r.hi, std::max(limits->hi, d.hi))};
  const double step = nice_step(r.hi - r.lo, 5);
  return {r, step, std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)))};
}

// Epochs are whole numbers: ticks are too, and a single epoch gets a unit-wide axis around it.
Axis epoch_axis(int64_t first, int64_t last) {
  const double span = static_cast<double>(last - first);
  const double margin = span == 0 ? 0.5 : 0.04 * span;
  const Range r{static_cast<double>(first) - margin, static_cast<double>(last) + margin};
  return {r, std::max(1.0, std::round(nice_step(std::max(span, 1.0), 6))), 0};
}

std::vector<double> ticks(const Axis& a) {
  std::vector<double> out;
  for (double k = std::ceil(a.range.lo / a.step - 1e-9); k * a.step <= a.range.hi + 1e-9 * a.step; k += 1)
    out.push_back(k * a.step == 0 ? 0.0 : k * a.step);  // no "-0"
  return out;
}

std::string label(double v, int decimals) {
  char buf[64];
  // Fixed notation reads best for the usual losses and percentages, but not for extreme ones.
  if (v != 0 && (std::abs(v) >= 1e6 || decimals > 5))
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::optional<Range> finite_range(const std::vector<EpochPoint>& points, double EpochPoint::*field) {
  std::optional<Range> r;
  for (const EpochPoint& p : points) {
    const double v = p.*field;
    if (!std::isfinite(v)) continue;
    r = r ? Range{std::min(r->lo, v), std::max(r->hi, v)} : Range{v, v};
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Drawing.

enum class Align { kLeft, kCentre, kRight };

// `y` is the vertical middle of the digits rather than the baseline, so that tick labels line up
// with their ticks.
void text(cairo_t* cr, const std::string& s, double x, double y, Align align, double size, bool bold = false) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  const double left = align == Align::kLeft ? x : align == Align::kCentre ? x - e.x_advance / 2 : x - e.x_advance;
  cairo_move_to(cr, left, y + 0.36 * size);
  cairo_show_text(cr, s.c_str());
}

struct Panel {
  double x0, y0, x1, y1;  // the plot area in pixels
  Axis x, y;

  double px(double v) const { return x0 + (v - x.range.lo) / (x.range.hi - x.range.lo) * (x1 - x0); }
  double py(double v) const { return y1 - (v - y.range.lo) / (y.range.hi - y.range.lo) * (y1 - y0); }
};

void draw_frame(cairo_t* cr, const Panel& p, const std::string& panel_title) {
  cairo_set_line_width(cr, 1);
  for (const double v : ticks(p.y)) {
    const double y = std::round(p.py(v)) + 0.5;  // on the pixel grid, so that 1-px lines stay crisp
    set_colour(cr, kGrid);
    cairo_move_to(cr, p.x0, y);
    cairo_line_to(cr, p.x1, y);
    cairo_stroke(cr);
    set_colour(cr, kInk);
    cairo_move_to(cr, p.x0 - 5, y);
    cairo_line_to(cr, p.x0, y);
    cairo_stroke(cr);
    text(cr, label(v, p.y.decimals), p.x0 - 8, y, Align::kRight, 12);
  }
  for (const double v : ticks(p.x)) {
    const double x = std::round(p.px(v)) + 0.5;
    set_colour(cr, kInk);
    cairo_move_to(cr, x, p.y1);
    cairo_line_to(cr, x, p.y1 + 5);
    cairo_stroke(cr);
    text(cr, label(v, 0), x, p.y1 + 17, Align::kCentre, 12);
  }
  set_colour(cr, kInk);
  cairo_rectangle(cr, std::round(p.x0) + 0.5, std::round(p.y0) + 0.5, std::round(p.x1 - p.x0), std::round(p.y1 - p.y0));
  cairo_stroke(cr);
  text(cr, "epoch", (p.x0 + p.x1) / 2, p.y1 + 40, Align::kCentre, 13);
  text(cr, panel_title, (p.x0 + p.x1) / 2, p.y0 - 14, Align::kCentre, 14, true);
}

void draw_marker(cairo_t* cr, double x, double y) {
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, 3.5, 0, 2 * std::numbers::pi);
  cairo_fill(cr);
}

// One curve; a non-finite value breaks the line, and markers show every point when there are few
// (a single epoch would otherwise draw nothing at all).
void draw_series(cairo_t* cr, const Panel& p, const std::vector<EpochPoint>& points, double EpochPoint::*field,
                 const Rgb& colour) {
  cairo_save(cr);
  cairo_rectangle(cr, p.x0, p.y0, p.x1 - p.x0, p.y1 - p.y0);
  cairo_clip(cr);
  set_colour(cr, colour);
  cairo_set_line_width(cr, 2);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  bool pen_down = false;
  for (const EpochPoint& q : points) {
    const double v = q.*field;
    if (!std::isfinite(v)) {
      pen_down = false;
      continue;
    }
    const double x = p.px(static_cast<double>(q.epoch)), y = p.py(v);
    pen_down ? cairo_line_to(cr, x, y) : cairo_move_to(cr, x, y);
    pen_down = true;
  }
  cairo_stroke(cr);
  if (points.size() <= kMaxMarkedPoints)
    for (const EpochPoint& q : points)
      if (std::isfinite(q.*field)) draw_marker(cr, p.px(static_cast<double>(q.epoch)), p.py(q.*field));
  cairo_restore(cr);
}

void draw_legend(cairo_t* cr, const Panel& p, const std::vector<std::pair<std::string, Rgb>>& entries) {
  constexpr double kRow = 20, kPad = 8, kSwatch = 24;
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 12);
  double text_width = 0;
  for (const auto& [name, colour] : entries) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, name.c_str(), &e);
    text_width = std::max(text_width, e.x_advance);
  }
  const double w = kPad * 3 + kSwatch + text_width, h = kPad * 2 + kRow * static_cast<double>(entries.size()) - 4;
  const double x = std::round(p.x1 - w - 10) + 0.5, y = std::round(p.y0 + 10) + 0.5;
  cairo_rectangle(cr, x, y, w, h);
  cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
  cairo_fill_preserve(cr);
  set_colour(cr, {0.8, 0.8, 0.8});
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  double row_y = y + kPad + kRow / 2 - 2;
  for (const auto& [name, colour] : entries) {
    set_colour(cr, colour);
    cairo_set_line_width(cr, 2);
    cairo_move_to(cr, x + kPad, row_y);
    cairo_line_to(cr, x + kPad + kSwatch, row_y);
    cairo_stroke(cr);
    draw_marker(cr, x + kPad + kSwatch / 2, row_y);
    set_colour(cr, kInk);
    text(cr, name, x + 2 * kPad + kSwatch, row_y, Align::kLeft, 12);
    row_y += kRow;
  }
}

void draw(cairo_t* cr, const std::vector<EpochPoint>& points, const std::string& title) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);

  // A long title shrinks to fit the width rather than being cut off.
  double title_size = 17;
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_font_size(cr, title_size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, title.c_str(), &e);
  if (e.x_advance > kWidth - 40) title_size *= (kWidth - 40) / e.x_advance;
  set_colour(cr, kInk);
  text(cr, title, kWidth / 2.0, 24, Align::kCentre, title_size, true);

  const Axis epochs = epoch_axis(points.front().epoch, points.back().epoch);
  std::optional<Range> losses = finite_range(points, &EpochPoint::train_loss);
  if (const auto test = finite_range(points, &EpochPoint::test_loss))
    losses = losses ? Range{std::min(losses->lo, test->lo), std::max(losses->hi, test->hi)} : *test;
  const Panel loss{kPlotLeft,
                   kPlotTop,
                   kPanelWidth - kPlotRight,
                   kHeight - kPlotBottom,
                   epochs,
                   value_axis(losses, Range{0, std::numeric_limits<double>::infinity()})};
  const Panel accuracy{
      kPanelWidth + kPlotLeft, kPlotTop, kWidth - kPlotRight,
      kHeight - kPlotBottom,   epochs,   value_axis(finite_range(points, &EpochPoint::test_accuracy), Range{0, 100})};

  draw_frame(cr, loss, "loss");
  draw_series(cr, loss, points, &EpochPoint::train_loss, kTrainColour);
  draw_series(cr, loss, points, &EpochPoint::test_loss, kTestColour);
  draw_legend(cr, loss, {{"train", kTrainColour}, {"test", kTestColour}});
  draw_frame(cr, accuracy, "test accuracy (%)");
  draw_series(cr, accuracy, points, &EpochPoint::test_accuracy, kAccuracyColour);
}

// ---------------------------------------------------------------------------------------------
// Encoding: cairo hands the PNG to a callback, which collects it in memory so that the file itself
// is written by ember's AtomicFileWriter like every other file ember saves.

cairo_status_t append_png_bytes(void* closure, const unsigned char* data, unsigned int length) {
  try {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  } catch (...) {  // nothing may unwind through cairo's C code
    return CAIRO_STATUS_NO_MEMORY;
  }
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

bool curves_available() { return true; }

void write_curves_png(const std::filesystem::path& path, const std::vector<EpochPoint>& points,
                      const std::string& title) {
  const std::string dest = path.string();
  const std::string context = "write_curves_png('" + dest + "')";
  if (dest.empty()) fail("write_curves_png: the path is empty");
  if (points.empty()) fail(context, ": there are no epochs to plot");
  for (size_t i = 1; i < points.size(); ++i)
    if (points[i].epoch <= points[i - 1].epoch)
      fail(context, ": epochs must be strictly increasing, but epoch ", points[i].epoch, " follows epoch ",
           points[i - 1].epoch);

  Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, kWidth, kHeight), cairo_surface_destroy);
  Context cr(cairo_create(surface.get()), cairo_destroy);
  draw(cr.get(), points, title);
  // cairo records the first error in the context and ignores later calls, so one check suffices.
  if (const cairo_status_t s = cairo_status(cr.get()); s != CAIRO_STATUS_SUCCESS)
    fail(context, ": cairo could not draw the curves: ", cairo_status_to_string(s));
  cairo_surface_flush(surface.get());

  std::string png;
  if (const cairo_status_t s = cairo_surface_write_to_png_stream(surface.get(), append_png_bytes, &png);
      s != CAIRO_STATUS_SUCCESS)
    fail(context, ": cairo could not encode the PNG: ", cairo_status_to_string(s));
  io::AtomicFileWriter file(path, context);
  file.write(png);
  file.commit();
}

PngPixels read_png(const std::filesystem::path& path) {
  const std::string context = "read_png('" + path.string() + "')";
  // cairo says only "file not found" or "read error"; the reason is clearer from the file system.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(context, ": there is no such file");
  Surface surface(cairo_image_surface_create_from_png(path.c_str()), cairo_surface_destroy);
  if (const cairo_status_t s = cairo_surface_status(surface.get()); s != CAIRO_STATUS_SUCCESS)
    fail(context, ": cairo could not read the PNG: ", cairo_status_to_string(s));
  const cairo_format_t format = cairo_image_surface_get_format(surface.get());
  if (format != CAIRO_FORMAT_ARGB32 && format != CAIRO_FORMAT_RGB24)
    fail(context, ": cairo decoded the PNG to pixel format ", static_cast<int>(format),
         ", which read_png does not convert");
  cairo_surface_flush(surface.get());
  PngPixels out;
  out.width = cairo_image_surface_get_width(surface.get());
  out.height = cairo_image_surface_get_height(surface.get());
  const int stride = cairo_image_surface_get_stride(surface.get());
  const unsigned char* data = cairo_image_surface_get_data(surface.get());
  out.argb.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height));
  for (int y = 0; y < out.height; ++y) {
    const auto* row = reinterpret_cast<const uint32_t*>(data + static_cast<ptrdiff_t>(y) * stride);
    for (int x = 0; x < out.width; ++x)
      out.argb[static_cast<size_t>(y) * out.width + x] = format == CAIRO_FORMAT_RGB24 ? (row[x] | 0xff000000u) : row[x];
  }
  return out;
}

}  // namespace ember::train
