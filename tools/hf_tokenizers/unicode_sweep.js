// The Rust tokenizers library's decision on every code point, for tests/test_unicode_sweep.cpp: pre-tokenizer cuts
// and normalizer outputs on a probe per code point, run-length encoded. Leaves out: comparing (the test does that).
// Usage: node unicode_sweep.js [--list] [KIND...]   (default: every kind below; --list: the kind lines alone;
//        UNICODE_SWEEP_TIMES=1: each kind's time on stderr)
//
// Output, one record per line:
//   kind {"name", "stage", "json", "probe"}   a kind: STAGE is pre_tokenizer or normalizer, JSON the component as
//                                             tokenizer.json spells it, PROBE its separators (pre-tokenizers) or
//                                             [prefix, suffix] (normalizers)
//   FIRST LAST SIGNATURE                      every scalar value FIRST..LAST (hex) has this SIGNATURE in that kind
//
// Pre-tokenizers run in rounds. Round r pre-tokenizes separators[r] + X + separators[r] + Y + separators[r] ... for
// the code points X, Y, ... still in play (round 0: every scalar value in order), 4096 of them a text; X's signature
// gains three flags, "c" or "-" each: X is covered by a piece (not removed), a piece starts at X, a piece starts
// right after X. X leaves play once a round finds it inside a piece with its neighbours (flags "c--"). Round 0 has
// no separator, so a run of code points of one class leaves at once but for its ends; the later rounds' separators
// of different classes tell the classes of the rest apart while the pieces stay few (a separator of X's own class
// merges with X). A differing class shows at least where its run ends, so counts of differing signatures are a
// lower bound on differing code points.
// Normalizers get PREFIX + X + SUFFIX for each X, joined by U+FFFF (a starter no normalizer changes, which no other
// code point turns into; U+FFFF itself is probed alone). The signature is "=" when the output equals the probe, else
// the output's code points: "x" for X, hex for the others, joined by "," ("" when nothing is left).
'use strict';
const reference = require('./reference');

const KINDS = [
  { name: 'byte_level', stage: 'pre_tokenizer', separators: ['', '!', 'a', '1'],
    json: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true } },
  { name: 'bert_pre_tokenizer', stage: 'pre_tokenizer', separators: ['', 'a'],
    json: { type: 'BertPreTokenizer' } },
  { name: 'digits', stage: 'pre_tokenizer', separators: ['', '!'],
    json: { type: 'Digits', individual_digits: true } },
  { name: 'bert_normalizer', stage: 'normalizer', affix: ['', ''],
    json: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: true,
            lowercase: true } },
  { name: 'bert_normalizer_cased', stage: 'normalizer', affix: ['', ''],
    json: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: false,
            lowercase: false } },
  { name: 'strip_accents', stage: 'normalizer', affix: ['', ''], json: { type: 'StripAccents' } },
  { name: 'nfd', stage: 'normalizer', affix: ['', ''], json: { type: 'NFD' } },
  { name: 'nfkc', stage: 'normalizer', affix: ['', ''], json: { type: 'NFKC' } },
  // Marks of classes 230 and 220 around X: reordered unless X is a starter.
  { name: 'nfd_order', stage: 'normalizer', affix: ['\u0301', '\u0316'], json: { type: 'NFD' } },
];

const CHUNK = 4096;  // probes per call: the library's cost grows with the text, and so does node's memory

function scalarValues() {
  const out = [];
  for (let cp = 0; cp < 0x110000; ++cp) if (cp < 0xD800 || cp > 0xDFFF) out.push(cp);
  return out;
}

// The library's component described by JSON, through a tokenizer.json it parses (the binding's constructors do not
// take every option).
function component(tokenizers, stage, json) {
  const file = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null, pre_tokenizer: null,
    post_processor: null, decoder: null, model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' },
  };
  file[stage] = json;
  const tok = tokenizers.Tokenizer.fromString(JSON.stringify(file));
  return stage === 'normalizer' ? tok.getNormalizer() : tok.getPreTokenizer();
}

// Signatures of the code points CPS (their strings in XS) under pre-tokenizer PT, SEPARATORS one per round.
function preTokenizerSignatures(pt, cps, xs, separators) {
  const sig = new Array(cps.length).fill('');
  let live = cps.map((_, i) => i);  // indexes into CPS still in play
  for (const sep of separators) {
    const next = [];
    for (let c = 0; c < live.length; c += CHUNK) {
      const ids = live.slice(c, c + CHUNK);
      let text = sep;  // so that the first X has a neighbour too
      for (const i of ids) text += xs[i] + sep;
      const w = sep.length;  // separators are one code point of the BMP, or none
      const n = (1 + w) * ids.length + w;  // code points: the separator, then X and the separator for each X
      const covered = new Uint8Array(n), starts = new Uint8Array(n + 1);
      for (const [, [b, e]] of pt.preTokenizeString(text)) {  // offsets in code points of the text
        covered.fill(1, b, e);
        starts[b] = 1;
        starts[e] = 1;  // a piece ends here: whatever follows starts anew
      }
      ids.forEach((i, k) => {
        const p = w + (1 + w) * k;
        const flags = (covered[p] ? 'c' : '-') + (starts[p] || !covered[p] ? 's' : '-') +
                      (starts[p + 1] || !covered[p] ? 'e' : '-');
        sig[i] += (sig[i] ? '.' : '') + flags;
        if (flags !== 'c--') next.push(i);
      });
    }
    live = next;
  }
  return sig;
}

// "=" when the normalizer left the probe as it was, else its output's code points: "x" for X, hex for the others.
function signature(out, input, cp) {
  if (out === input) return '=';
  return Array.from(out, (c) => (c.codePointAt(0) === cp ? 'x' : c.codePointAt(0).toString(16))).join(',');
}

function normalizerSignatures(norm, cps, xs, [prefix, suffix]) {
  const sig = new Array(cps.length);
  const probe = prefix === '' && suffix === '' ? (i) => xs[i] : (i) => prefix + xs[i] + suffix;
  for (let c = 0; c < cps.length; c += CHUNK) {
    const end = Math.min(cps.length, c + CHUNK);
    let text = '';
    for (let i = c; i < end; ++i) {
      if (cps[i] !== 0xFFFF) text += prefix + xs[i] + suffix + '\uFFFF';
      else sig[i] = signature(norm.normalizeString(probe(i)), probe(i), cps[i]);
    }
    const out = norm.normalizeString(text);
    let pos = 0;
    for (let i = c; i < end; ++i) {
      if (cps[i] === 0xFFFF) continue;
      const stop = out.indexOf('\uFFFF', pos);
      if (stop < 0) throw new Error('normalizer output lost a probe separator');
      const seg = out.slice(pos, stop);
      sig[i] = signature(seg, probe(i), cps[i]);
      pos = stop + 1;
    }
    if (pos !== out.length) throw new Error('normalizer output has more probes than its input');
  }
  return sig;
}

function main() {
  const args = process.argv.slice(2);
  const list = args.includes('--list');
  const wanted = args.filter((a) => a !== '--list');
  for (const w of wanted) {
    if (!KINDS.some((k) => k.name === w)) throw new Error(`unknown kind ${w}`);
  }
  const kinds = KINDS.filter((k) => !wanted.length || wanted.includes(k.name));
  const probeOf = (kind) => (kind.stage === 'normalizer' ? kind.affix : kind.separators);
  const header = (kind) => 'kind ' + JSON.stringify({ name: kind.name, stage: kind.stage, json: kind.json,
                                                      probe: probeOf(kind) });
  if (list) {
    process.stdout.write(kinds.map(header).join('\n') + '\n');
    return;
  }
  const tokenizers = reference.tokenizers();
  const cps = scalarValues();
  const xs = cps.map((cp) => String.fromCodePoint(cp));
  const lines = [];
  for (const kind of kinds) {
    const t0 = Date.now();
    const c = component(tokenizers, kind.stage, kind.json);
    const sig = kind.stage === 'normalizer' ? normalizerSignatures(c, cps, xs, probeOf(kind))
                                            : preTokenizerSignatures(c, cps, xs, probeOf(kind));
    lines.push(header(kind));
    for (let i = 0; i < cps.length;) {
      let j = i;
      while (j + 1 < cps.length && sig[j + 1] === sig[i]) ++j;
      lines.push(`${cps[i].toString(16)} ${cps[j].toString(16)} ${sig[i]}`);
      i = j + 1;
    }
    if (process.env.UNICODE_SWEEP_TIMES) console.error(`${kind.name}: ${Date.now() - t0} ms`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

try {
  main();
} catch (e) {
  console.error(`unicode_sweep.js: ${e.message || e}`);
  process.exit(1);
}
