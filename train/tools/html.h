// Building blocks of self-contained HTML pages (the run report): escaping of text and attribute values, PNG images
// inlined as base64 data URIs, and tables. Nothing here refers to anything outside the page.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hr {

// & < > " ' as character references, so any text (a config's strings, a label, a file name) is shown as written
// and cannot open a tag or end an attribute.
std::string html_escape(std::string_view text);

// RFC 4648 base64 (glib's encoder, which cairo's development package brings along).
std::string base64_encode(std::string_view bytes);

// Width and height from a PNG's IHDR chunk; hr::Error when `png` is not a PNG.
std::pair<int, int> png_dimensions(std::string_view png);

// <img src="data:image/png;base64,..." alt="..." width="W" height="H">, W x H the image's own size (CSS scales it).
std::string inline_png(std::string_view png, std::string_view alt);

// A <table> with a header row; cells are escaped text. Columns whose index is in `numeric` are right-aligned.
std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                       const std::vector<size_t>& numeric = {});

}  // namespace hr
