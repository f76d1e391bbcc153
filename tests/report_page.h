// Reading a `headroom report` page back in tests: its sections, its inlined images decoded (base64, then PNG) and
// every reference that would leave the page. Shared by test_report (structure) and test_report_browser (Chromium).
#pragma once

#include <cairo.h>
#include <doctest/doctest.h>
#include <glib.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace hr::testing {

struct PageImage {
  std::string alt;
  int width = 0, height = 0;  // the <img> attributes
  bool decodes = false;       // valid base64 of a PNG that cairo decodes to width x height
};

// The page with every base64 payload of a data URI cut out: what the checks below read.
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
  for (size_t at = text.find("<section "); at != std::string::npos; at = text.find("<section ", at + 1)) {
    const std::string tag = text.substr(at, text.find('>', at) - at);
    const size_t v = tag.find(" data-section=\"");
    if (v != std::string::npos) out.push_back(tag.substr(v + 15, tag.find('"', v + 15) - v - 15));
  }
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
  std::string text = without_payloads(html);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> found;
  auto each = [&](const std::string& what, auto&& is_reference) {
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      if (is_reference(at)) found.push_back(text.substr(at, std::min<size_t>(60, text.size() - at)));
  };
  auto letter_before = [&](size_t at) { return at > 0 && std::isalpha(static_cast<unsigned char>(text[at - 1])); };
  for (const char* scheme : {"http:", "https:", "ftp:", "file:", "ws:", "wss:"})
    each(scheme, [&](size_t at) { return !letter_before(at); });
  for (const char* attr : {" src=", " href=", " action=", " poster=", " srcset="})
    each(attr, [&](size_t at) {
      const size_t v = at + std::string(attr).size() + 1;  // after the quote
      return !(text.compare(v, 5, "data:") == 0 || text.compare(v, 1, "#") == 0);
    });
  for (const char* css : {"url(", "@import"}) each(css, [](size_t) { return true; });
  for (const char* tag : {"<link", "<iframe", "<object", "<embed", "<frame", "<base", "<audio", "<video", "<source"})
    each(tag, [&](size_t at) {
      const size_t after = at + std::string(tag).size();
      return after < text.size() && (text[after] == ' ' || text[after] == '>');
    });
  each("//", [&](size_t at) {  // protocol-relative: "//host" in a value
    size_t p = at;
    while (p > 0 && text[p - 1] == ' ') --p;
    return p > 0 && (text[p - 1] == '"' || text[p - 1] == '\'' || text[p - 1] == '(' || text[p - 1] == '=');
  });
  return found;
}

}  // namespace hr::testing
