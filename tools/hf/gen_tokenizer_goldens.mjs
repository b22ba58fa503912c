// Writes tests/data/tokenizer_goldens.json (tricky lines, pairs with truncation, decodes) and
// tests/data/tokenizer_corpus.{txt,uncased.ids,cased.ids} (corpus lines and their ids), all
// produced by Hugging Face's tokenizers with the BERT-Base uncased vocabulary.
//   cd tools/hf && npm install && node gen_tokenizer_goldens.mjs ../../data/bert-base-uncased-vocab.txt CORPUS.txt
import fs from 'fs';
import path from 'path';
import { bertTokenizer } from './bert_pipeline.mjs';

const [vocabPath, corpusPath] = process.argv.slice(2);
const out = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'tests', 'data');

// ---- tricky lines, written by hand ----
const hand = [
  'Hello, world!', 'The quick brown fox jumps over the lazy dog.', "Don't stop; it's O'Neil's U.S.A. trip, e.g. today.",
  'Héllo wörld, naïve café, façade, Ångström, crème brûlée.', 'ÀÁÂÃÄÅ àáâãäå ÇçÑñ ØøŒœÆæ', 'Straße groß ß ẞ',
  'İstanbul ıi İI', 'ǅungla ǆ Ǆ', 'ΟΔΥΣΣΕΥΣ Σίσυφος ς', 'ﬁnance ﬂow ﬀ', 'ＡＢＣ　ｄｅｆ１２３', 'Ⅻ ⅻ ① ②',
  '東京は日本の首都です。', '北京欢迎你！', '한국어 텍스트입니다', 'カタカナ ひらがな', '漢字とかなの混じった文', '𠀀𠀁 𪜀 CJK Ext B',
  'Русский текст, Ёлка!', 'Ελληνικά κείμενα', 'العربية نص', 'עברית טקסט', 'हिन्दी पाठ', 'ภาษาไทย', 'Tiếng Việt có dấu',
  '🥰 emoji 😀😃😄', '👍🏽 thumbs 👨‍👩‍👧‍👦 family', '🇺🇸🇫🇷 flags', '❤️ heart ☺️', 'a😀b😀c', ':-) ;-( :D <3',
  '!!!???...', '--- ___ *** ###', '«guillemets» “curly” ‘single’ „low“', '(parens) [brackets] {braces} <angles>',
  '¡Hola! ¿Qué tal?', 'wait…what', '— em dash – en dash', '§ ¶ † ‡ • ※', '@user #hashtag $5 50% 3.14 1,000,000 -42 +7',
  '€100 £50 ¥1000 ₹20 ₿', '∑∫√∞≈≠≤≥ ±×÷', 'x=y+1; if(a&&b||c) {return;}', 'C++ C# F# .NET Node.js',
  'https://example.com/path?q=1&r=two#frag', 'mailto:someone@example.org', 'www.test.co.uk/index.html', '<br/><b>bold</b>',
  '192.168.0.1:8080', '2024-01-15T10:30:00Z', '12:30pm 3rd 21st 1990s', 'phone: +1 (555) 123-4567',
  'tab\there', 'new\nline', 'carriage\rreturn', 'mixed \t\n\r  whitespace   runs', '\u00a0nbsp\u00a0here',
  'zero\u200bwidth\u200cjoin\u200d', 'soft\u00adhyphen', 'bom\ufeffhere', 'nul\u0000char', 'bell\u0007ctrl\u001b[0m',
  'del\u007fhere', 'vt\u000bff\u000cnel\u0085ls\u2028ps\u2029', 'replacement\ufffdchar', 'private\ue000use',
  'ideographic\u3000space', 'thin\u2009space\u200ahair', 'e\u0301 a\u0308\u0323 o\u0323\u0308', 'A\u030a vs \u00c5',
  'ḍ̇ q̣̇ combining order', 'Z̤̈a̗l̖g̘o̙ text', 'un\u0301icode\u0327 marks', 'ä (precomposed) vs ä (decomposed)',
  'supercalifragilisticexpialidocious', 'antidisestablishmentarianism', 'pneumonoultramicroscopicsilicovolcanoconiosis',
  'a'.repeat(100), 'b'.repeat(101), 'c'.repeat(150) + ' short', 'x'.repeat(99) + '!', 'hello' + 'é'.repeat(97),
  'the [MASK] sat on the mat', 'the[MASK]sat', '[CLS] already [SEP] here [PAD]', '[mask] lowercase is not special',
  '[MASK [MASK] MASK]', '[UNK][UNK] twice', '[SEP][SEP]', 'unknowntokenzzzqqq', 'qwxzjvkq', 'ǂǃǁ clicks',
  'MiXeD CaSe WoRdS', 'ALL CAPS SENTENCE HERE', 'CamelCaseIdentifier snake_case_name kebab-case-name',
  "rock 'n' roll", 'can\'t won\'t shouldn\'t y\'all', '"quoted" \'single\' `back`', 'end.', '.start', '...',
  'a.b.c.d', 'x/y\\z|w', '~tilde ^caret', 'under_score', 'num3r1c m1x', '007 bond 1e10 0x1F 0b101',
  '', ' ', '   ', '\t\n', '.', 'a', 'Z', '1', '東', '😀', 'é',
];

// ---- generated lines: seeded mixes of fragments ----
let seed = 12345;
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const frags = ['the', 'BERT', 'model', 'café', 'naïve', '東京', '😀', '!!', '...', ',', "don't", 'https://x.org', '3.14',
  'über', 'Ωmega', 'привет', '\t', '  ', '\u200b', '[MASK]', 'résumé', 'coöperate', '한국', 'e\u0301', '“', '”', '(', ')',
  'ﬁ', 'ß', 'İ', '¿', '—', 'C++', '#tag', '@me', '100%', 'Ǆ', 'a\u0308', '🇫🇷', 'co-operate', 'x' .repeat(30)];
const generated = [];
for (let i = 0; i < 230; ++i) {
  const n = 1 + rand(12);
  let s = '';
  for (let j = 0; j < n; ++j) s += (rand(3) === 0 ? '' : ' ') + frags[rand(frags.length)];
  generated.push(s);
}
const lines = [...hand, ...generated];

// ---- pairs with every truncation strategy ----
const pairTexts = [
  ['What is the capital of France?', 'Paris is the capital and most populous city of France.'],
  ['Who wrote Moby-Dick?', 'Herman Melville wrote it in 1851, and it became a classic of American literature.'],
  ['short', 'a much longer second sequence that will need to be truncated quite a bit more than the first'],
  ['a much longer first sequence that will need to be truncated quite a bit more than the second', 'short'],
  ['Héllo wörld 東京', 'naïve café 😀 [MASK] end'],
  ['one two three four five six', 'seven eight nine ten eleven twelve'],
];
const pairs = [];
for (const [a, b] of pairTexts)
  for (const maxLength of [0, 8, 9, 12, 16, 40])
    for (const strategy of ['LongestFirst', 'OnlyFirst', 'OnlySecond'])
      pairs.push({ a, b, maxLength, strategy });

async function run(cased) {
  const t = await bertTokenizer(vocabPath, { cased });
  const single = [];
  for (const text of lines) {
    const e = await t.encode(text);
    single.push({ text, ids: e.getIds(), offsets: e.getOffsets() });
  }
  const pairOut = [];
  for (const p of pairs) {
    if (p.maxLength > 0) t.setTruncation(p.maxLength, { strategy: p.strategy }); else t.disableTruncation();
    let e;
    try { e = await t.encode(p.a, p.b); } catch (err) { pairOut.push({ ...p, error: true }); continue; }
    pairOut.push({ ...p, ids: e.getIds(), type_ids: e.getTypeIds(), offsets: e.getOffsets() });
  }
  t.disableTruncation();
  const decode = [];
  for (const s of single.slice(0, 150)) decode.push({ ids: s.ids, text: await t.decode(s.ids, true) });
  return { single, pairs: pairOut, decode };
}

const goldens = { generator: 'tools/hf/gen_tokenizer_goldens.mjs', tokenizers: '0.23.2',
                  uncased: await run(false), cased: await run(true) };
fs.writeFileSync(path.join(out, 'tokenizer_goldens.json'), JSON.stringify(goldens));

// ---- corpus lines: every 20th non-empty line, 3000 of them ----
const corpus = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.trim().length > 0);
const picked = [];
for (let i = 0; i < corpus.length && picked.length < 3000; i += 20) picked.push(corpus[i]);
fs.writeFileSync(path.join(out, 'tokenizer_corpus.txt'), picked.join('\n') + '\n');
for (const cased of [false, true]) {
  const t = await bertTokenizer(vocabPath, { cased });
  const enc = await t.encodeBatch(picked);
  fs.writeFileSync(path.join(out, `tokenizer_corpus.${cased ? 'cased' : 'uncased'}.ids`),
                   enc.map((e) => e.getIds().join(' ')).join('\n') + '\n');
}
console.log(`wrote ${lines.length} lines, ${pairs.length} pairs, ${picked.length} corpus lines to ${out}`);
