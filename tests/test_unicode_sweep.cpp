// Every code point through lmzoo's Unicode decisions: the pre-tokenizers and normalizers of
// tools/hf_tokenizers/unicode_sweep.js against the Rust tokenizers library itself (same tokenizer.json objects, same
// probes, signature by signature; skipped visibly where node or the library is absent), and WordPiece's own
// BasicTokenizer against the tokenizer.json BERT pipeline (no reference needed). Leaves out: Split regexes (lmzoo
// runs them on the system's Oniguruma) and the Whitespace pre-tokenizer.
#include "tests/catch_compat.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizers/gpt2_byte_level.h"
#include "data/tokenizers/hf_json/text_pipeline.h"
#include "data/tokenizers/wordpiece.h"
#include "data/unicode/unicode_text.h"
#include "tests/cli_helpers.h"
#include "tests/hf_tokenizers_reference.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

constexpr size_t kChunk = 4096;  // probes per text, as unicode_sweep.js has them

std::vector<char32_t> scalar_values() {
  std::vector<char32_t> cps;
  cps.reserve(0x110000 - 0x800);
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp < 0xD800 || cp > 0xDFFF) cps.push_back(cp);
  }
  return cps;
}

std::string utf8(char32_t cp) {
  std::string s;
  append_utf8(cp, s);
  return s;
}

// The bytes a piece of the ByteLevel pre-tokenizer stands for (its characters are gpt2_byte_to_char's).
std::string byte_level_bytes(const std::string& piece) {
  static const std::array<int, 512> byte_of = [] {
    std::array<int, 512> t;
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[gpt2_byte_to_char(static_cast<uint8_t>(b))] = b;
    return t;
  }();
  std::string out;
  for (char32_t c : utf8_to_code_points(piece)) out.push_back(static_cast<char>(c < 512 ? byte_of[c] : '?'));
  return out;
}

// unicode_sweep.js's pre-tokenizer signatures, computed with lmzoo's pre-tokenizer PT (BYTE_LEVEL: its pieces are
// byte-level characters): per round, whether X is covered, a piece starts at X, a piece starts right after X.
std::vector<std::string> pre_tokenizer_signatures(const hf::PreTokenizer& pt, bool byte_level,
                                                  const std::vector<char32_t>& cps,
                                                  const std::vector<std::string>& separators) {
  std::vector<std::string> sig(cps.size());
  std::vector<size_t> live(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) live[i] = i;
  for (const std::string& sep : separators) {
    std::vector<size_t> next;
    const size_t w = sep.empty() ? 0 : 1;  // separators are one code point, or none
    for (size_t c = 0; c < live.size(); c += kChunk) {
      const size_t end = std::min(live.size(), c + kChunk);
      std::string text = sep;
      std::vector<size_t> pos_of_byte;  // code point position of each byte of TEXT, then one past the last
      for (size_t k = 0; k < sep.size(); ++k) pos_of_byte.push_back(0);
      size_t pos = w;
      for (size_t k = c; k < end; ++k) {
        const std::string x = utf8(cps[live[k]]);
        text += x;
        pos_of_byte.insert(pos_of_byte.end(), x.size(), pos++);
        text += sep;
        pos_of_byte.insert(pos_of_byte.end(), sep.size(), pos);
        pos += w;
      }
      pos_of_byte.push_back(pos);
      std::vector<char> covered(pos, 0), starts(pos + 1, 0);
      std::vector<hf::PreSplit> splits{hf::PreSplit{text, true}};
      pt.pre_tokenize(splits);
      size_t cursor = 0;
      for (const hf::PreSplit& s : splits) {  // pieces are the text's bytes in order, some left out between them
        const std::string bytes = byte_level ? byte_level_bytes(s.text) : s.text;
        const size_t b = text.find(bytes, cursor);
        if (b == std::string::npos) FAIL("a piece that is not in the text: " << s.text);
        cursor = b + bytes.size();
        const size_t pb = pos_of_byte[b], pe = pos_of_byte[cursor];
        std::fill(covered.begin() + long(pb), covered.begin() + long(pe), 1);
        starts[pb] = starts[pe] = 1;
      }
      for (size_t k = c; k < end; ++k) {
        const size_t p = w + (1 + w) * (k - c);
        std::string flags;
        flags += covered[p] ? 'c' : '-';
        flags += starts[p] || !covered[p] ? 's' : '-';
        flags += starts[p + 1] || !covered[p] ? 'e' : '-';
        std::string& s = sig[live[k]];
        s += (s.empty() ? "" : ".") + flags;
        if (flags != "c--") next.push_back(live[k]);
      }
    }
    live.swap(next);
  }
  return sig;
}

// "=" when OUT equals INPUT, else OUT's code points: "x" for X, lower-case hex for the others, joined by ",".
std::string normalizer_signature(const std::string& out, const std::string& input, char32_t x) {
  if (out == input) return "=";
  std::ostringstream s;
  bool first = true;
  for (char32_t c : utf8_to_code_points(out)) {
    s << (first ? "" : ",");
    first = false;
    if (c == x) s << 'x';
    else s << std::hex << static_cast<uint32_t>(c);
  }
  return s.str();
}

std::vector<std::string> normalizer_signatures(const hf::Normalizer& norm, const std::vector<char32_t>& cps,
                                               const std::string& prefix, const std::string& suffix) {
  const std::string sep = utf8(0xFFFF);
  std::vector<std::string> sig(cps.size());
  for (size_t c = 0; c < cps.size(); c += kChunk) {
    const size_t end = std::min(cps.size(), c + kChunk);
    std::string text;
    for (size_t i = c; i < end; ++i) {
      const std::string probe = prefix + utf8(cps[i]) + suffix;
      if (cps[i] == 0xFFFF) sig[i] = normalizer_signature(norm.normalize(probe), probe, cps[i]);
      else text += probe + sep;
    }
    const std::string out = norm.normalize(text);
    size_t at = 0;
    for (size_t i = c; i < end; ++i) {
      if (cps[i] == 0xFFFF) continue;
      const size_t stop = out.find(sep, at);
      if (stop == std::string::npos) FAIL("the normalizer lost a probe's U+FFFF");
      sig[i] = normalizer_signature(out.substr(at, stop - at), prefix + utf8(cps[i]) + suffix, cps[i]);
      at = stop + sep.size();
    }
    if (at != out.size()) FAIL("the normalizer made more probes than it was given");
  }
  return sig;
}

// A signature per run of code points: FIRST..LAST (surrogates, never probed, may lie inside) share SIGNATURE.
struct Run {
  char32_t first, last;
  std::string signature;
};

std::vector<Run> run_length(const std::vector<char32_t>& cps, const std::vector<std::string>& sig) {
  std::vector<Run> runs;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!runs.empty() && runs.back().signature == sig[i]) runs.back().last = cps[i];
    else runs.push_back(Run{cps[i], cps[i], sig[i]});
  }
  return runs;
}

struct Kind {
  std::string name, stage;
  nlohmann::json json, probe;
  std::vector<Run> runs;  // the reference's signatures
};

// unicode_sweep.js's output: "kind {...}" lines, each followed (without --list) by its runs "FIRST LAST SIGNATURE".
std::vector<Kind> parse_sweep(const std::string& text) {
  std::vector<Kind> kinds;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("kind ", 0) == 0) {
      const nlohmann::json j = nlohmann::json::parse(line.substr(5));
      kinds.push_back(Kind{j.at("name").get<std::string>(), j.at("stage").get<std::string>(), j.at("json"),
                           j.at("probe"), {}});
      continue;
    }
    const size_t a = line.find(' '), b = line.find(' ', a + 1);
    if (kinds.empty() || b == std::string::npos) FAIL("unicode_sweep.js wrote a line lmzoo cannot read: " << line);
    const auto first = static_cast<char32_t>(std::stoul(line.substr(0, a), nullptr, 16));
    const auto last = static_cast<char32_t>(std::stoul(line.substr(a + 1, b - a - 1), nullptr, 16));
    kinds.back().runs.push_back(Run{first, last, line.substr(b + 1)});
  }
  return kinds;
}

// lmzoo's signatures for kind K (as unicode_sweep.js describes it) on every scalar value.
std::vector<Run> lmzoo_signatures(const Kind& k, const std::vector<char32_t>& cps) {
  if (k.stage == "pre_tokenizer") {
    const auto pt = hf::make_pre_tokenizer(k.json, "pre_tokenizer");
    const bool byte_level = k.json.at("type") == "ByteLevel";
    return run_length(cps, pre_tokenizer_signatures(*pt, byte_level, cps, k.probe.get<std::vector<std::string>>()));
  }
  const auto norm = hf::make_normalizer(k.json, "normalizer");
  return run_length(cps, normalizer_signatures(*norm, cps, k.probe.at(0).get<std::string>(),
                                               k.probe.at(1).get<std::string>()));
}

std::string hex_cp(char32_t cp) {
  std::ostringstream s;
  s << "U+" << std::hex << std::uppercase << static_cast<uint32_t>(cp);
  return s.str();
}

size_t scalar_values_in(char32_t lo, char32_t hi) {  // in [LO, HI]
  const char32_t s_lo = std::max<char32_t>(lo, 0xD800), s_hi = std::min<char32_t>(hi, 0xDFFF);
  return (hi - lo + 1) - (s_lo <= s_hi ? s_hi - s_lo + 1 : 0);
}

}  // namespace

TEST_CASE("reference: every code point through the pre-tokenizers and normalizers as the Rust library",
          "[hf_json][reference][unicode]") {
  if (const std::string missing = hf_reference_missing(); !missing.empty()) {
    WARN("skipped: " + missing);
    return;
  }
  TempDir dir;
  std::string err = run_hf_script("unicode_sweep.js", "--list", dir / "kinds.txt");
  INFO(err);
  REQUIRE(err.empty());
  std::vector<Kind> kinds = parse_sweep(read_text(dir.path / "kinds.txt"));
  REQUIRE(kinds.size() >= 5);
  // The library sweeps (a few seconds of node) while lmzoo does the same here.
  struct Joined {
    std::thread t;
    ~Joined() {
      if (t.joinable()) t.join();
    }
  } sweep;
  sweep.t = std::thread([&] { err = run_hf_script("unicode_sweep.js", "", dir / "sweep.txt"); });
  const std::vector<char32_t> cps = scalar_values();
  std::vector<std::vector<Run>> mine;
  for (const Kind& k : kinds) mine.push_back(lmzoo_signatures(k, cps));
  sweep.t.join();
  REQUIRE(err.empty());
  const std::vector<Kind> reference = parse_sweep(read_text(dir.path / "sweep.txt"));
  REQUIRE(reference.size() == kinds.size());
  for (size_t n = 0; n < kinds.size(); ++n) {
    const Kind& k = reference[n];
    REQUIRE(k.name == kinds[n].name);
    size_t compared = 0, differ = 0, shown = 0, j = 0;
    std::string first;
    for (const Run& want : k.runs) {  // both cover every scalar value in order: walk them together
      compared += scalar_values_in(want.first, want.last);
      for (char32_t lo = want.first; lo <= want.last && j < mine[n].size();) {
        const Run& got = mine[n][j];  // got.first <= lo <= got.last
        const char32_t hi = std::min(want.last, got.last);
        if (got.signature != want.signature) {
          differ += scalar_values_in(lo, hi);
          for (char32_t cp = lo; cp <= hi && shown < 5; ++cp) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            first += "\n  " + hex_cp(cp) + ": Rust " + want.signature + ", lmzoo " + got.signature;
            ++shown;
          }
        }
        if (got.last == hi) ++j;
        lo = hi + 1;
      }
    }
    std::cout << "unicode sweep " << k.name << ": " << differ << " of " << compared << " code point signatures differ"
              << first << "\n";
    INFO(k.name << " " << k.json.dump() << ": " << differ << " code point signatures differ" << first);
    CHECK(compared == cps.size());
    CHECK(differ == 0);
  }
}

// lmzoo's WordPiece BasicTokenizer (data/tokenizers/wordpiece.h, for vocab.txt BERT models) and the tokenizer.json pipeline
// (BertNormalizer + BertPreTokenizer, checked against the Rust library above) give the same words for "a" X "b" on
// every code point X, cased and uncased.
TEST_CASE("wordpiece basic tokenizer equals the tokenizer.json BERT pipeline on every code point",
          "[wordpiece][unicode]") {
  TempDir dir;
  std::ofstream(dir / "vocab.txt") << "[UNK]\n";
  const std::vector<char32_t> cps = scalar_values();
  for (const bool lower : {true, false}) {
    WordPieceOptions options;
    options.do_lower_case = lower;
    const WordPieceTokenizer wp = WordPieceTokenizer::load(dir / "vocab.txt", options);
    const auto norm = hf::make_normalizer({{"type", "BertNormalizer"}, {"clean_text", true},
                                           {"handle_chinese_chars", true}, {"strip_accents", lower},
                                           {"lowercase", lower}}, "normalizer");
    const auto pt = hf::make_pre_tokenizer({{"type", "BertPreTokenizer"}}, "pre_tokenizer");
    auto pipeline = [&](const std::string& text) {
      std::vector<hf::PreSplit> splits{hf::PreSplit{norm->normalize(text), true}};
      pt->pre_tokenize(splits);
      std::vector<std::string> words;
      for (const auto& s : splits) words.push_back(s.text);
      return words;
    };
    size_t differ = 0;
    std::string first;
    for (size_t c = 0; c < cps.size(); c += kChunk) {  // probes apart by spaces; a chunk that differs, probe by probe
      std::string text;
      for (size_t i = c; i < std::min(cps.size(), c + kChunk); ++i) text += "a" + utf8(cps[i]) + "b ";
      if (wp.basic_tokenize(text) == pipeline(text)) continue;
      for (size_t i = c; i < std::min(cps.size(), c + kChunk); ++i) {
        const std::string probe = "a" + utf8(cps[i]) + "b";
        if (wp.basic_tokenize(probe) == pipeline(probe)) continue;
        if (++differ <= 5) first += " " + hex_cp(cps[i]);
      }
    }
    INFO((lower ? "uncased" : "cased") << ": " << differ << " code points differ:" << first);
    CHECK(differ == 0);
  }
}
