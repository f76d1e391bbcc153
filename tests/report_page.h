// Reading a `headroom report` page back in tests: its sections, its inlined images decoded (base64, then PNG) and
// every reference that would leave the page. Shared by test_report (structure) and test_report_browser (Chromium).
#pragma once

#include <cairo.h>
#include <doctest/doctest.h>
#include <glib.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace hr::testing {

struct PageImage {
  std::string alt;
  int width = 0, height = 0;  // the <img> attributes
  bool decodes = false;       // valid base64 of a PNG that cairo decodes to width x height
};

// The page with every base64 payload of a data URI cut out (std::regex recurses per character of a match, so the
// patterns below run on this).
inline std::string without_payloads(const std::string& html) {
  std::string out;
  const std::string marker = ";base64,";
  size_t at = 0;
  for (size_t m = html.find(marker); m != std::string::npos; m = html.find(marker, at)) {
    out += html.substr(at, m + marker.size() - at);
    at = html.find('"', m);
    if (at == std::string::npos) at = html.size();
  }
  return out + html.substr(std::min(at, html.size()));
}

// data-section="..." of every <section>, in page order.
inline std::vector<std::string> page_sections(const std::string& html) {
  std::vector<std::string> out;
  const std::string text = without_payloads(html);
  const std::regex re("<section id=\"[^\"]*\" data-section=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

inline int count_of(const std::vector<std::string>& v, const std::string& x) {
  int n = 0;
  for (const auto& s : v) n += s == x;
  return n;
}

// The value of attribute `name` in the tag text `tag`, or "" without it.
inline std::string attribute(const std::string& tag, const std::string& name) {
  const size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return "";
  const size_t begin = at + name.size() + 3;
  return tag.substr(begin, tag.find('"', begin) - begin);
}

// Every <img> of the page, its data URI decoded.
inline std::vector<PageImage> page_images(const std::string& html) {
  std::vector<PageImage> out;
  for (size_t at = html.find("<img"); at != std::string::npos; at = html.find("<img", at + 1)) {
    const std::string tag = html.substr(at, html.find('>', at) + 1 - at);
    PageImage img;
    img.alt = attribute(tag, "alt");
    const std::string w = attribute(tag, "width"), h = attribute(tag, "height"), src = attribute(tag, "src");
    img.width = w.empty() ? 0 : std::stoi(w);
    img.height = h.empty() ? 0 : std::stoi(h);
    const std::string prefix = "data:image/png;base64,";
    if (src.rfind(prefix, 0) == 0 &&
        src.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", prefix.size()) ==
            std::string::npos) {
      gsize n = 0;
      guchar* bytes = g_base64_decode(src.c_str() + prefix.size(), &n);
      struct Reader {
        const guchar* data;
        gsize size, at;
      } reader{bytes, n, 0};
      cairo_surface_t* s = cairo_image_surface_create_from_png_stream(
          [](void* closure, unsigned char* data, unsigned int length) {
            auto* r = static_cast<Reader*>(closure);
            if (r->at + length > r->size) return CAIRO_STATUS_READ_ERROR;
            std::copy(r->data + r->at, r->data + r->at + length, data);
            r->at += length;
            return CAIRO_STATUS_SUCCESS;
          },
          &reader);
      img.decodes = cairo_surface_status(s) == CAIRO_STATUS_SUCCESS && img.width > 0 &&
                    cairo_image_surface_get_width(s) == img.width && cairo_image_surface_get_height(s) == img.height;
      cairo_surface_destroy(s);
      g_free(bytes);
    }
    out.push_back(img);
  }
  return out;
}

// What in the page would reach outside it: a URL scheme other than data:, a protocol-relative //, a src or href that
// is not a data URI or an anchor, CSS url() or @import, and the tags that load other documents. Empty when there is
// none.
inline std::vector<std::string> external_references(const std::string& html) {
  const std::string text = without_payloads(html);
  std::vector<std::string> found;
  const std::regex patterns[] = {
      std::regex(R"(\b(https?|ftp|file|wss?):)", std::regex::icase),
      std::regex(R"((src|href|action|poster|srcset)\s*=\s*"(?!data:|#)[^"]*")", std::regex::icase),
      std::regex(R"(url\s*\()", std::regex::icase),
      std::regex(R"(@import)", std::regex::icase),
      std::regex(R"(<(link|iframe|object|embed|frame|base|audio|video|source)\b)", std::regex::icase),
      std::regex(R"(["'(=]\s*//)"),
  };
  for (const std::regex& re : patterns)
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
      found.push_back(it->str());
  return found;
}

}  // namespace hr::testing
