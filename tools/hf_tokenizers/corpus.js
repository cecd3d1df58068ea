// A deterministic training corpus for the reference tokenizers: seeded pseudo-random sentences mixing English-like
// words, digits, punctuation, contractions, accented Latin, CJK, Thai, Arabic and emoji. Leaves out real prose.
'use strict';

// mulberry32: a small seeded generator, so every machine writes the same corpus.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = ('the of and to in is was that for it with as his on be at by had are but from or have an they which ' +
  'one you were her all she there would their we him been has when who will more no if out so said what up its ' +
  'about into than them can only other new some could time these two may then do first any my now such like our ' +
  'over man me even most made after also did many before must through back years where much your way well down ' +
  'should because each just those people how too little state good very make world still own see men work long ' +
  'get here between both life being under never day same another know while last might us great old year off ' +
  'come since against go came right used take three tokenizer merges vocabulary training language model') .split(' ');
const accented = ['café', 'naïve', 'résumé', 'über', 'Straße', 'façade', 'jalapeño', 'crème', 'Ångström', 'señor'];
const cjk = ['東京', '日本語', '中文', '漢字', '学生', '大学', '天气很好', '我们', 'こんにちは', 'ありがとう', '한국어'];
const thai = ['ภาษาไทย', 'สวัสดี', 'ขอบคุณ'];
const arabic = ['مرحبا', 'العربية', 'شكرا', 'كتاب'];
const emoji = ['😀', '👍', '🎉', '❤️', '👩‍💻', '🇫🇷'];
const punct = [',', '.', ';', ':', '!', '?', ' -', ' (', ')', '"'];
const symbols = ['<', '>', '[', ']', '{', '}', '#', '@', '&', '*', '/', '\\', '_', '=', '+', '|', '~', '^', '%', '$', '`',
                 '\t', '  ', '\u00a0'];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];

function sentence(rand) {
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const n = 4 + Math.floor(rand() * 14);
  const out = [];
  for (let i = 0; i < n; ++i) {
    const r = rand();
    let w;
    if (r < 0.80) w = pick(words);
    else if (r < 0.85) w = String(Math.floor(rand() * (rand() < 0.5 ? 100 : 100000)));
    else if (r < 0.89) w = pick(accented);
    else if (r < 0.93) w = pick(cjk);
    else if (r < 0.95) w = pick(thai);
    else if (r < 0.97) w = pick(arabic);
    else w = pick(emoji);
    if (i === 0 || rand() < 0.05) w = w.charAt(0).toUpperCase() + w.slice(1);
    if (rand() < 0.05) w += pick(contractions);
    out.push(w);
    if (rand() < 0.1) out.push(pick(punct).trim());
    if (rand() < 0.03) out.push(pick(symbols) + pick(words));
  }
  return out.join(' ') + pick(['.', '.', '.', '!', '?']);
}

// LINES lines of one to three sentences each.
function corpus(lines, seed) {
  const rand = generator(seed);
  const out = [];
  for (let i = 0; i < lines; ++i) {
    const k = 1 + Math.floor(rand() * 3);
    const parts = [];
    for (let j = 0; j < k; ++j) parts.push(sentence(rand));
    out.push(parts.join(' '));
  }
  return out.join('\n') + '\n';
}

module.exports = { corpus };

if (require.main === module) {
  process.stdout.write(corpus(Number(process.argv[2] || 2000), Number(process.argv[3] || 1)));
}
