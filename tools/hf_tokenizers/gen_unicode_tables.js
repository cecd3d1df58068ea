// Generates data/unicode/unicode_tables.cpp: the Unicode data the Rust tokenizers library decides with, read off the library
// itself (tools/fetch_hf_tokenizers.sh installs it) by probing every scalar value. Leaves out: the lookups
// (data/unicode/unicode_tables.h) and checking lmzoo against the library (tests/test_unicode_sweep.cpp).
// Usage: node tools/hf_tokenizers/gen_unicode_tables.js > data/unicode/unicode_tables.cpp
//
// Each table is what one of the library's decisions says about each code point on its own:
//   regex_letter, regex_number  \p{L}, \p{N} of the Oniguruma inside the library (ByteLevel's GPT-2 pattern, Split)
//   rust_numeric                Rust's char::is_numeric (Digits)
//   bert_punctuation            is_ascii_punctuation() || unicode_categories' is_punctuation() (BertPreTokenizer,
//                               Punctuation): a character isolated by BertPreTokenizer
//   other                       unicode_categories' is_other(): Cc Cf Co (BertNormalizer's clean_text drops these
//                               but \t \n \r, and NUL and U+FFFD besides)
//   nonspacing_mark             unicode_categories' is_mark_nonspacing() (BertNormalizer's strip_accents, which
//                               asks only about code points NFD leaves alone, and so is the table)
//   combining_mark              unicode-normalization-alignments' is_combining_mark() (StripAccents)
//   lower                       Rust's char::to_lowercase (Lowercase, BertNormalizer)
//   canonical / compatibility   code points unicode-normalization-alignments decomposes under NFD / NFKD
//   nonzero_ccc                 code points it does not decompose that it gives a non-zero canonical combining class
// The decompositions themselves and the class values come from utf8proc in lmzoo; the library's tables are older
// than utf8proc's, so these sets say which of utf8proc's entries the library knows.
'use strict';
const reference = require('./reference');

const CHUNK = 4096;
// Unicode's White_Space property (unchanged since 6.3), which lmzoo spells out in data/unicode/unicode_props.cpp: the
// library's char::is_whitespace and Oniguruma's \s are checked against it rather than tabulated.
const WHITE_SPACE = [0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
  0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000];

function component(tokenizers, stage, json) {
  const file = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null, pre_tokenizer: null,
    post_processor: null, decoder: null, model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' },
  };
  file[stage] = json;
  const tok = tokenizers.Tokenizer.fromString(JSON.stringify(file));
  return stage === 'normalizer' ? tok.getNormalizer() : tok.getPreTokenizer();
}

// For pre-tokenizer PT on SEP + X + SEP + Y + SEP ...: per code point, 'removed' (no piece covers X), 'alone' (a
// piece of X alone) or 'joined' (X shares its piece).
function pieceRoles(pt, cps, xs, sep) {
  const role = new Array(cps.length);
  for (let c = 0; c < cps.length; c += CHUNK) {
    const end = Math.min(cps.length, c + CHUNK);
    let text = sep;
    for (let i = c; i < end; ++i) text += xs[i] + sep;
    const w = sep.length, n = (1 + w) * (end - c) + w;
    const piece = new Int32Array(n).fill(-1), begin = [], stop = [];
    pt.preTokenizeString(text).forEach(([, [b, e]], k) => {
      piece.fill(k, b, e);
      begin.push(b);
      stop.push(e);
    });
    for (let i = c; i < end; ++i) {
      const p = w + (1 + w) * (i - c), k = piece[p];
      role[i] = k < 0 ? 'removed' : begin[k] === p && stop[k] === p + 1 ? 'alone' : 'joined';
    }
  }
  return role;
}

// NORM's output for each code point alone.
function outputs(norm, xs) {
  return xs.map((x) => norm.normalizeString(x));
}

function ranges(cps, member) {
  const out = [];
  cps.forEach((cp, i) => {
    if (!member(i)) return;
    if (out.length && out[out.length - 1][1] === cp - 1) out[out.length - 1][1] = cp;
    else out.push([cp, cp]);
  });
  return out;
}

// The lower-case mappings as runs {first, last, stride, delta}: FIRST, FIRST + STRIDE, ... LAST map to themselves
// plus DELTA.
function lowerRuns(cps, lower) {
  const pairs = [];
  cps.forEach((cp, i) => {
    const l = Array.from(lower[i]);
    if (l.length === 1 && l[0].codePointAt(0) !== cp) pairs.push([cp, l[0].codePointAt(0) - cp]);
  });
  const runs = [];  // each run grows only by the next pair in order, so runs never interleave
  for (const [cp, delta] of pairs) {
    const r = runs[runs.length - 1];
    const step = r ? cp - r.last : 0;
    if (r && r.delta === delta && (r.first === r.last ? step <= 2 : step === r.stride)) {
      r.stride = step;
      r.last = cp;
    } else {
      runs.push({ first: cp, last: cp, stride: 1, delta });
    }
  }
  return runs;
}

function hex(cp) {
  return '0x' + cp.toString(16).toUpperCase();
}

// ITEMS as lines of at most 120 characters.
function wrap(items) {
  const lines = [];
  let line = '   ';
  for (const item of items) {
    if (line.length + 1 + item.length + 1 > 120) {
      lines.push(line);
      line = '   ';
    }
    line += ' ' + item + ',';
  }
  if (line.trim()) lines.push(line);
  return lines.join('\n');
}

function rangeTable(name, list, comment) {
  const items = list.map(([a, b]) => `{${hex(a)}, ${hex(b)}}`);
  const count = list.reduce((s, [a, b]) => s + b - a + 1, 0);
  return `// ${comment}: ${count} code points in ${list.length} ranges.\n` +
         `const CodeRange k${name}Ranges[] = {\n${wrap(items)}\n};\n` +
         `const RangeSet k${name}{k${name}Ranges, ${list.length}};\n`;
}

function main() {
  const tk = reference.tokenizers();
  const binding = reference.folder() + '/node_modules/@anush008/tokenizers';
  const version = require(binding + '/package.json').version;
  const cargo = require('fs').readFileSync(binding + '/Cargo.toml', 'utf8');
  const crate = (cargo.match(/^tokenizers = "([^"]+)"/m) || [])[1];
  const cps = [];
  for (let cp = 0; cp < 0x110000; ++cp) if (cp < 0xD800 || cp > 0xDFFF) cps.push(cp);
  const xs = cps.map((cp) => String.fromCodePoint(cp));
  const pre = (json) => component(tk, 'pre_tokenizer', json);
  const norm = (json) => component(tk, 'normalizer', json);
  const split = (re) => pre({ type: 'Split', pattern: { Regex: re }, behavior: 'Removed', invert: false });
  const bertNorm = (clean, strip) => norm({ type: 'BertNormalizer', clean_text: clean, handle_chinese_chars: false,
                                            strip_accents: strip, lowercase: false });
  const letter = pieceRoles(split('\\p{L}'), cps, xs, '');
  const number = pieceRoles(split('\\p{N}'), cps, xs, '');
  const onigSpace = pieceRoles(split('\\s'), cps, xs, '');
  const numeric = pieceRoles(pre({ type: 'Digits', individual_digits: true }), cps, xs, '!');
  const bert = pieceRoles(pre({ type: 'BertPreTokenizer' }), cps, xs, 'a');
  const clean = outputs(bertNorm(true, false), xs);
  const bertStrip = outputs(bertNorm(false, true), xs);
  const strip = outputs(norm({ type: 'StripAccents' }), xs);
  const lower = outputs(norm({ type: 'Lowercase' }), xs);
  const nfdNorm = norm({ type: 'NFD' });
  const nfd = outputs(nfdNorm, xs);
  const nfkd = outputs(norm({ type: 'NFKD' }), xs);
  const marked = (x) => '\u0301' + x + '\u0316';  // classes 230 and 220: reordered unless X is a starter
  const ccc = xs.map((x, i) => nfd[i] === x && nfdNorm.normalizeString(marked(x)) !== marked(x));

  // What lmzoo keeps as code rather than tables must still hold.
  const ws = new Set(WHITE_SPACE);
  cps.forEach((cp, i) => {
    const fail = (what) => { throw new Error(`${what} at ${hex(cp)}`); };
    if ((onigSpace[i] === 'removed') !== ws.has(cp)) fail('Oniguruma\'s \\s differs from White_Space');
    if ((bert[i] === 'removed') !== ws.has(cp)) fail('char::is_whitespace differs from White_Space');
    const multi = Array.from(lower[i]).length > 1;
    if (multi && !(cp === 0x130 && lower[i] === 'i\u0307')) fail('a new multi-character lower case');
    if (clean[i] === ' ' && !ws.has(cp)) fail('clean_text makes a space of a character outside White_Space');
    if (nfd[i] === xs[i] && bertStrip[i] !== '' && bertStrip[i] !== xs[i]) fail('strip_accents changes a character');
  });
  const tnr = (cp) => cp === 0x9 || cp === 0xA || cp === 0xD;

  const out = [];
  out.push('// Generated by tools/hf_tokenizers/gen_unicode_tables.js from the Rust tokenizers library ' +
           `${crate} (through`);
  out.push(`// @anush008/tokenizers ${version}), probed on every scalar value: do not edit. The tables: ` +
           'data/unicode/unicode_tables.h.');
  out.push('#include "data/unicode/unicode_tables.h"', '', 'namespace lmzoo::unicode::tables {', '');
  const table = (name, member, comment) => out.push(rangeTable(name, ranges(cps, member), comment));
  table('RegexLetter', (i) => letter[i] === 'removed', '\\p{L} of the library\'s Oniguruma');
  table('RegexNumber', (i) => number[i] === 'removed', '\\p{N} of the library\'s Oniguruma');
  table('RustNumeric', (i) => numeric[i] === 'alone', 'Rust\'s char::is_numeric');
  table('BertPunctuation', (i) => bert[i] === 'alone',
        'is_ascii_punctuation() || unicode_categories\' is_punctuation()');
  // clean_text drops is_other() but \t \n \r, and NUL and U+FFFD (NUL is Cc anyway; U+FFFD is So).
  table('Other', (i) => (clean[i] === '' && cps[i] !== 0xFFFD) || tnr(cps[i]),
        'unicode_categories\' is_other() (Cc, Cf, Co)');
  table('NonspacingMark', (i) => nfd[i] === xs[i] && bertStrip[i] === '',
        'unicode_categories\' is_mark_nonspacing(), of the code points NFD leaves alone');
  table('CombiningMark', (i) => strip[i] === '', 'unicode-normalization-alignments\' is_combining_mark()');
  table('Canonical', (i) => nfd[i] !== xs[i], 'decomposed by NFD');
  table('Compatibility', (i) => nfkd[i] !== xs[i], 'decomposed by NFKD');
  table('NonzeroCcc', (i) => ccc[i], 'not decomposed, canonical combining class above 0');
  const runs = lowerRuns(cps, lower);
  const items = runs.map((r) => `{${hex(r.first)}, ${hex(r.last)}, ${r.stride}, ${r.delta}}`);
  out.push(`// Rust's char::to_lowercase where it gives one other code point: ${runs.length} runs ` +
           '{first, last, stride, delta}.');
  out.push(`const LowerRun kLowerRuns[] = {\n${wrap(items)}\n};`);
  out.push(`const LowerTable kLower{kLowerRuns, ${runs.length}};`, '');
  out.push('}  // namespace lmzoo::unicode::tables');
  process.stdout.write(out.join('\n') + '\n');
}

try {
  main();
} catch (e) {
  console.error(`gen_unicode_tables.js: ${e.message || e}`);
  process.exit(1);
}
