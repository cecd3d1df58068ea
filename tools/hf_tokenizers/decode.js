// Decodes a JSONL file (one JSON array of ids per line) with a tokenizer.json through the Rust tokenizers library;
// prints one JSON string per line. Leaves out batch options.
// Usage: node decode.js TOKENIZER_JSON IDS_JSONL [--skip-special-tokens]
'use strict';
const fs = require('fs');
const { readJsonLines } = require('./jsonl');
const { Tokenizer } = require('./reference').tokenizers();

async function main() {
  const [file, idsFile, ...flags] = process.argv.slice(2);
  const skipSpecialTokens = flags.includes('--skip-special-tokens');
  const tok = Tokenizer.fromFile(file);
  const out = [];
  for (const ids of readJsonLines(idsFile)) out.push(JSON.stringify(await tok.decode(ids, skipSpecialTokens)));
  fs.writeSync(1, out.length ? out.join('\n') + '\n' : '');
}

main().catch((e) => {
  console.error(`decode.js: ${e.message || e}`);
  process.exit(1);
});
