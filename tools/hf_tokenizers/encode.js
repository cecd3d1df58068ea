// Encodes a JSONL file (one JSON string per line) with a tokenizer.json through the Rust tokenizers library; prints
// one JSON array of ids per line. Leaves out offsets, pairs, truncation and padding.
// Usage: node encode.js TOKENIZER_JSON TEXTS_JSONL [--add-special-tokens]
'use strict';
const fs = require('fs');
const { readJsonLines } = require('./jsonl');
const { Tokenizer } = require('./reference').tokenizers();

async function main() {
  const [file, texts, ...flags] = process.argv.slice(2);
  const addSpecialTokens = flags.includes('--add-special-tokens');
  const tok = Tokenizer.fromFile(file);
  const out = [];
  for (const text of readJsonLines(texts)) {
    if (typeof text !== 'string') throw new Error(`${texts}: every line must be a JSON string`);
    const encoding = await tok.encode(text, null, { addSpecialTokens });
    out.push(JSON.stringify(encoding.getIds()));
  }
  fs.writeSync(1, out.length ? out.join('\n') + '\n' : '');
}

main().catch((e) => {
  console.error(`encode.js: ${e.message || e}`);
  process.exit(1);
});
