#include "train/tools/html.h"

#include <glib.h>

#include <algorithm>
#include <memory>

#include "kernels/base/error.h"

namespace hr {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  const std::unique_ptr<gchar, decltype(&g_free)> encoded(
      g_base64_encode(reinterpret_cast<const guchar*>(bytes.data()), bytes.size()), &g_free);
  return encoded.get();
}

std::pair<int, int> png_dimensions(std::string_view png) {
  static constexpr std::string_view kSignature = "\x89PNG\r\n\x1a\n";
  if (png.size() < 24 || png.substr(0, 8) != kSignature || png.substr(12, 4) != "IHDR")
    throw Error("not a PNG image (" + std::to_string(png.size()) + " bytes)");
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(png[at + i]);
    return static_cast<int>(v);
  };
  return {be32(16), be32(20)};
}

std::string inline_png(std::string_view png, std::string_view alt) {
  const auto [w, h] = png_dimensions(png);
  return "<img src=\"data:image/png;base64," + base64_encode(png) + "\" alt=\"" + html_escape(alt) + "\" width=\"" +
         std::to_string(w) + "\" height=\"" + std::to_string(h) + "\">";
}

std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                       const std::vector<size_t>& numeric) {
  auto cell = [&](const char* tag, size_t column, const std::string& text) {
    const bool right = std::find(numeric.begin(), numeric.end(), column) != numeric.end();
    return std::string("<") + tag + (right ? " class=\"num\"" : "") + ">" + html_escape(text) + "</" + tag + ">";
  };
  std::string t = "<table>\n<thead><tr>";
  for (size_t c = 0; c < header.size(); ++c) t += cell("th", c, header[c]);
  t += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    t += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) t += cell("td", c, row[c]);
    t += "</tr>\n";
  }
  return t + "</tbody>\n</table>\n";
}

}  // namespace hr
