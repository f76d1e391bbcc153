// The Unicode properties behind Python's str.lower() Final_Sigma rule, one definition for the BERT tokenizer's
// lower-casing and the SQuAD metric's normalisation (both must agree with Python).
#pragma once

#include <cstddef>

namespace hr {

// Unicode "Cased": the letter-case categories Lu, Ll, Lt plus Other_Lowercase/Other_Uppercase (which utf8proc's
// islower/isupper cover: ª, ˢ, Ⓐ...).
bool is_cased(char32_t cp);
// Unicode "Case_Ignorable": Mn, Me, Cf, Lm, Sk, and the Word_Break MidLetter / MidNumLet / Single_Quote characters
// (apostrophes, dots, colons).
bool is_case_ignorable(char32_t cp);

// Whether capital sigma at position i of a word of n code points (code_point_at(k) gives the k-th) lowers to final
// sigma U+03C2: a cased letter before it and none after it, skipping case-ignorables both ways (CPython's
// handle_capital_sigma).
template <class CodePointAt>
bool is_final_sigma(size_t i, size_t n, CodePointAt code_point_at) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(code_point_at(j - 1))) --j;
  if (j == 0 || !is_cased(code_point_at(j - 1))) return false;
  size_t k = i + 1;
  while (k < n && is_case_ignorable(code_point_at(k))) ++k;
  return k == n || !is_cased(code_point_at(k));
}

}  // namespace hr
