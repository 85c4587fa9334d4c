// The sweep's time-against-cost chart: one point per plan that finishes, the cheapest plan within
// the deadline ringed where its point is, nothing to draw without days.
#include "sim/sweep/sweep_chart.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "sim/core/format.hpp"

namespace trainsim {
namespace {

SweepEntry plan(std::int64_t index, std::int64_t gpus, double days, const std::string& label) {
  SweepEntry e;
  e.index = index;
  e.gpus = gpus;
  e.status = "ok";
  e.step_s = 1;
  e.tokens_per_s = 1e6 / days;
  e.plan = label;
  e.days = format_fixed(days, 3);
  e.gpu_hours = format_fixed(24 * gpus * days, 0);
  return e;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SweepChart, APointPerPlanThatFinishesAndTheCheapestRinged) {
  SweepEntry refused = plan(3, 64, 10, "tp 1");
  refused.status = "memory";
  const std::vector<SweepEntry> entries = {
      plan(0, 128, 50, "tp 8 pp 2"),  // 153,600 GPU-hours
      plan(1, 64, 90, "tp 4 pp 4"),   // 138,240: the cheapest within 100 days
      plan(2, 32, 170, "tp 2 pp 8"),  // 130,560, past the deadline
      refused};
  const auto svg = sweep_svg(entries, 100, "a <b> & c");
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg->rfind("<svg ", 0), 0u);
  EXPECT_EQ(svg->substr(svg->size() - 7), "</svg>\n");
  EXPECT_EQ(count(*svg, "r=\"4\""), 3u);  // the refused plan has no point
  EXPECT_NE(svg->find(">a &lt;b&gt; &amp; c</text>"), std::string::npos);
  EXPECT_NE(svg->find("deadline 100 days"), std::string::npos);
  EXPECT_EQ(count(*svg, " GPUs</text>"), 3u);  // the legend: 32, 64 and 128 GPUs
  // The ring sits on the point whose tooltip names the cheapest plan within the deadline.
  const std::regex ring("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\" r=\"9\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*svg, m, ring)) << *svg;
  const std::string at = "<circle cx=\"" + m[1].str() + "\" cy=\"" + m[2].str() + "\" r=\"4\"";
  const auto point = svg->find(at);
  ASSERT_NE(point, std::string::npos) << *svg;
  EXPECT_NE(svg->substr(point, 200).find("64 GPUs, 90.0 days, 138,240 GPU-hours: tp 4 pp 4"),
            std::string::npos);
}

// Plans on two platforms, each with its price: cost on the vertical axis, a shape per platform
// (circles, then squares) named in the legend, and the ring on the cheapest by cost.
TEST(SweepChart, TwoPlatformsDrawCostAndAShapeEach) {
  SweepEntry h100 = plan(0, 64, 90, "h100: tp 4");  // 138,240 GPU-hours at 2: 276,480
  h100.platform = "h100";
  h100.cost = "276480";
  SweepEntry h200 = plan(1, 64, 80, "h200: tp 4");  // 122,880 GPU-hours at 3: 368,640
  h200.platform = "h200";
  h200.cost = "368640";
  const auto svg = sweep_svg({h100, h200}, 100, "t");
  ASSERT_TRUE(svg);
  EXPECT_NE(svg->find(")\">cost</text>"), std::string::npos) << *svg;
  EXPECT_NE(svg->find("64 GPUs, 80.0 days, cost 368,640: h200: tp 4</title></polygon>"),
            std::string::npos)
      << *svg;
  EXPECT_NE(svg->find("64 GPUs, 90.0 days, cost 276,480: h100: tp 4</title></circle>"),
            std::string::npos);
  EXPECT_NE(svg->find(">h200</text>"), std::string::npos);  // the legend's shapes
  // The ring sits on the H100 plan's point: the cheaper, though it spends more GPU-hours.
  const std::regex ring("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\" r=\"9\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*svg, m, ring));
  EXPECT_NE(svg->find("<circle cx=\"" + m[1].str() + "\" cy=\"" + m[2].str() + "\" r=\"4\""),
            std::string::npos);
}

TEST(SweepChart, NothingToDrawWithoutDaysOrAnEnd) {
  SweepEntry unbudgeted = plan(0, 64, 10, "tp 1");
  unbudgeted.days.clear();
  unbudgeted.gpu_hours.clear();
  EXPECT_FALSE(sweep_svg({unbudgeted}, std::nullopt, "t"));
  SweepEntry never = plan(0, 16384, 10, "tp 1");
  never.days_with_failures = "inf";
  never.gpu_hours_with_failures = "inf";
  EXPECT_FALSE(sweep_svg({never}, 30, "t"));
  EXPECT_FALSE(sweep_svg({plan(0, 8, 0, "tp 1")}, std::nullopt, "t"));  // 0 days: no log scale
  // One plan alone spans no range; its axes still do.
  const auto alone = sweep_svg({plan(0, 8, 2, "tp 1")}, std::nullopt, "t");
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->find("nan"), std::string::npos) << *alone;
  EXPECT_EQ(alone->find("inf"), std::string::npos) << *alone;
  // Without a deadline there is no line and no ring.
  const auto svg = sweep_svg({plan(0, 64, 10, "tp 1"), plan(1, 128, 6, "tp 2")}, std::nullopt, "t");
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg->find("deadline"), std::string::npos);
  EXPECT_EQ(svg->find("r=\"9\""), std::string::npos);
}

}  // namespace
}  // namespace trainsim
