// Times the Rust tokenizers library's encodeBatch over documents (a .jsonl of {"text": ...} lines, or a text file,
// one document per line): prints the median tokens/s of several runs as JSON. Leaves out choosing threads: set
// RAYON_NUM_THREADS before starting node.
// Usage: node bench_encode.js TOKENIZER_JSON DOCUMENTS [RUNS]
'use strict';
const fs = require('fs');
const { Tokenizer } = require('./reference').tokenizers();

function documents(file) {
  const lines = fs.readFileSync(file, 'utf-8').split('\n').filter((l) => l.length > 0);
  return file.endsWith('.jsonl') ? lines.map((l) => JSON.parse(l).text) : lines;
}

async function main() {
  const [file, docsFile, runsArg] = process.argv.slice(2);
  const runs = Number(runsArg || 5);
  const tok = Tokenizer.fromFile(file);
  const docs = documents(docsFile);
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d, 'utf-8'), 0);
  await tok.encodeBatch(docs.slice(0, 100), { addSpecialTokens: false });  // warm-up
  const rates = [];
  let tokens = 0;
  for (let r = 0; r < runs; ++r) {
    const start = process.hrtime.bigint();
    const encodings = await tok.encodeBatch(docs, { addSpecialTokens: false });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    tokens = encodings.reduce((n, e) => n + e.getLength(), 0);
    rates.push(tokens / seconds);
  }
  rates.sort((a, b) => a - b);
  const median = rates[Math.floor(rates.length / 2)];
  console.log(JSON.stringify({ documents: docs.length, bytes, tokens, runs, tokens_per_s: Math.round(median),
                               threads: process.env.RAYON_NUM_THREADS || 'all' }));
}

main().catch((e) => {
  console.error(`bench_encode.js: ${e.message || e}`);
  process.exit(1);
});
