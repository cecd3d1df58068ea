// Reads a JSONL file: one JSON value per "\n"-terminated line (U+2028 and other separators stay inside a line).
'use strict';
const fs = require('fs');

function readJsonLines(file) {
  const lines = fs.readFileSync(file, 'utf-8').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines.map((line, i) => {
    try {
      return JSON.parse(line);
    } catch (e) {
      throw new Error(`${file} line ${i + 1} is not JSON`);
    }
  });
}

module.exports = { readJsonLines };
