// The run report in a real browser: headless Chromium opens the report of the main job (configs/clinc150.yaml, 150
// intents, cut to 120 steps) and takes a screenshot; its console must stay silent (the page logs only an image that
// does not decode, and its Content-Security-Policy turns any fetch into a console error), the screenshot must show
// the page, the file must stay under 3 MB and the page must load in under 2 s.
//
// Chromium (Debian's `chromium`; HR_CHROMIUM names another binary) is installed by `scripts/install.sh --test`, which
// scripts/test.sh runs. Without it the case is filtered out (doctest counts it as skipped) and the executable exits
// 77, which meson reports as SKIP, as the GPU tests do without a device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cairo.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tests/report_page.h"
#include "tests/tiny_run.h"

using namespace hr::testing;

namespace {

// The browser: HR_CHROMIUM, else the first of the usual names on PATH; empty when there is none.
std::string chromium() {
  if (const char* c = std::getenv("HR_CHROMIUM"); c && *c) return c;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::vector<std::string> on_path;
  for (std::string d; std::getline(dirs, d, ':');) on_path.push_back(d);
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"})
    for (const std::string& d : on_path)
      if (!d.empty() && access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
  return "";
}

struct BrowserRun {
  int code = 0;
  std::vector<std::string> console;  // the page's console messages
  std::string output;
};

// Opens `url` in a fresh headless Chromium (its own profile, no network services) with a window of 1280 x height,
// saving a screenshot when `screenshot` is set; the console messages come from its log on stderr.
BrowserRun open_in_browser(const TempDir& d, const std::string& url, const std::string& screenshot, int height) {
  static int runs = 0;
  const std::string profile = d / std::string("profile-").append(std::to_string(runs++));
  std::string cmd = "(";  // its log (stderr) only; --screenshot and --dump-dom write to stdout
  cmd += quote(chromium()) + " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run";
  cmd += " --disable-extensions --disable-background-networking --user-data-dir=" + quote(profile);
  cmd += " --enable-logging=stderr --v=0 --window-size=1280," + std::to_string(height);
  // appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "literal" + a temporary string
  cmd += screenshot.empty() ? " --dump-dom" : " --screenshot=";
  cmd += screenshot.empty() ? "" : quote(screenshot);
  cmd += " ";
  cmd += quote(url);
  cmd += " 2>&1 >/dev/null)";
  const Result r = shell(cmd);
  BrowserRun b;
  b.code = r.code;
  b.output = r.output;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos) b.console.push_back(line);
  return b;
}

}  // namespace

TEST_CASE("browser: the report of the main job renders in Chromium with a silent console") {
  const char* root = std::getenv("HR_SOURCE_ROOT");
  REQUIRE(root != nullptr);
  TempDir d;
  const std::string run = d / "clinc150";
  // the main job's config from the repository root (its data paths are relative to it), cut short
  const Result train = shell("cd " + quote(root) + " && " + quote(std::string(std::getenv("HR_BUILD_ROOT")) +
                                                                 "/headroom") +
                             " train --quiet configs/clinc150.yaml --set train.max_steps=120 --set train.eval_every=40"
                             " --set train.log_every=10 --out " + quote(run));
  REQUIRE_MESSAGE(train.code == 0, train.output);
  const std::string page = d / "report.html";
  const Result report = shell("cd " + quote(root) + " && " + quote(std::string(std::getenv("HR_BUILD_ROOT")) +
                                                                  "/headroom") +
                              " report " + quote(run) + " --out " + quote(page));
  REQUIRE_MESSAGE(report.code == 0, report.output);
  const std::string html = read_file(page);
  MESSAGE("report of a 150-label run: " << html.size() / 1024 << " KiB");
  CHECK(html.size() < 3u << 20);
  CHECK(page_sections(html) == std::vector<std::string>{"summary", "curves", "errors", "attention", "config"});
  CHECK(html.find(" of 3000 eval rows are misclassified") != std::string::npos);  // CLINC150's validation split

  const std::string shot = d / "report.png";
  const BrowserRun b = open_in_browser(d, "file://" + page, shot, 2400);
  INFO(b.output);
  REQUIRE(b.code == 0);
  CHECK_MESSAGE(b.console.empty(), "the console shows: " << (b.console.empty() ? "" : b.console.front()));
  // the screenshot is the page: 1280 x 2400, and not blank
  cairo_surface_t* s = cairo_image_surface_create_from_png(shot.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  CHECK(cairo_image_surface_get_width(s) == 1280);
  CHECK(cairo_image_surface_get_height(s) == 2400);
  const unsigned char* data = cairo_image_surface_get_data(s);
  const int stride = cairo_image_surface_get_stride(s);
  int64_t inked = 0;
  for (int y = 0; y < 2400; y += 4)
    for (int x = 0; x < 1280; x += 4) {
      const uint32_t p = reinterpret_cast<const uint32_t*>(data + y * stride)[x] & 0xffffff;
      inked += (p >> 16 & 0xff) < 200 || (p >> 8 & 0xff) < 200 || (p & 0xff) < 200;
    }
  cairo_surface_destroy(s);
  MESSAGE("screenshot: " << 100.0 * static_cast<double>(inked) / (320 * 600) << "% of the sampled pixels inked");
  CHECK(inked > 320 * 600 / 100);  // a blank page has none; the report about 4%

  // the load time, from a page that frames the report and logs when the frame (with all its images) has loaded
  write_file(d / "timing.html", "<!DOCTYPE html><html><body><iframe src=\"report.html\" style=\"width:1280px;"
                                "height:2400px\" onload=\"console.log('report loaded after ' + performance.now() + "
                                "' ms')\"></iframe></body></html>");
  const BrowserRun t = open_in_browser(d, "file://" + (d / "timing.html"), "", 2400);
  INFO(t.output);
  REQUIRE(t.console.size() == 1);
  const std::string said = "report loaded after ";
  const size_t at = t.console[0].find(said);
  REQUIRE(at != std::string::npos);
  const double ms = std::stod(t.console[0].substr(at + said.size()));
  MESSAGE("the report loaded in " << ms << " ms");
  CHECK(ms < 2000);
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  bool skipped = false;
  if (chromium().empty()) {
    std::printf("no chromium on PATH (scripts/install.sh --test installs Debian's; HR_CHROMIUM names another): "
                "the browser check is skipped\n");
    context.addFilter("test-case-exclude", "browser:*");
    skipped = true;
  }
  const int status = context.run();
  if (context.shouldExit() || status != 0 || !skipped) return status;
  return 77;
}
