// Checks a `lmzoo prepare` output directory against the Rust tokenizers library: the token stream (train shards then
// val shards) must equal each document's ids followed by the end-of-document id. Prints the result as JSON; exit 1
// on a difference. Leaves out shard sizes and the manifest's other fields.
// Usage: node compare_prepared.js DATA_DIR TOKENIZER_JSON DOCUMENTS.jsonl EOS_TOKEN
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('./reference').tokenizers();

function stream(dir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
  const wide = JSON.stringify(manifest).includes('uint32');
  const files = fs.readdirSync(dir).filter((f) => /^(train|val)_\d+\.bin$/.test(f))
    .sort((a, b) => (a.startsWith('train') === b.startsWith('train') ? a.localeCompare(b) : a.startsWith('train') ? -1 : 1));
  const out = [];
  for (const f of files) {
    const buf = fs.readFileSync(path.join(dir, f));
    const step = wide ? 4 : 2;
    for (let i = 0; i + step <= buf.length; i += step) out.push(wide ? buf.readUInt32LE(i) : buf.readUInt16LE(i));
  }
  return out;
}

async function main() {
  const [dir, file, docsFile, eosToken] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(file);
  const eos = tok.tokenToId(eosToken);
  const docs = fs.readFileSync(docsFile, 'utf-8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).text);
  const expected = [];
  for (const e of await tok.encodeBatch(docs, { addSpecialTokens: false })) expected.push(...e.getIds(), eos);
  const got = stream(dir);
  let first = 0;
  while (first < expected.length && first < got.length && expected[first] === got[first]) ++first;
  const equal = first === expected.length && got.length === expected.length;
  console.log(JSON.stringify({ reference_tokens: expected.length, lmzoo_tokens: got.length, equal,
                               first_difference: equal ? null : first }));
  process.exit(equal ? 0 : 1);
}

main().catch((e) => {
  console.error(`compare_prepared.js: ${e.message || e}`);
  process.exit(2);
});
