// Hugging Face's BERT tokenizer pipeline (as BertWordPieceTokenizer builds it), shared by the
// golden generator and the benchmark.
import tk from 'tokenizers';
const { Tokenizer, WordPiece, bertNormalizer, bertPreTokenizer, bertProcessing, wordPieceDecoder } = tk;

export async function bertTokenizer(vocabPath, { cased = false } = {}) {
  const model = await WordPiece.fromFile(vocabPath, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100 });
  const t = new Tokenizer(model);
  t.setNormalizer(bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: !cased, lowercase: !cased }));
  t.setPreTokenizer(bertPreTokenizer());
  t.setPostProcessor(bertProcessing(['[SEP]', t.tokenToId('[SEP]')], ['[CLS]', t.tokenToId('[CLS]')]));
  t.setDecoder(wordPieceDecoder('##', true));
  t.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  return t;
}
