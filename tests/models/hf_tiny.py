"""Tiny random Hugging Face cross-encoders (BERT, ELECTRA, RoBERTa, XLM-RoBERTa) saved with a tokenizer,
as ``transformers``' ``save_pretrained`` writes them: what a user's own reranker folder looks like,
built offline in a second."""

from __future__ import annotations

import functools
from pathlib import Path

import torch

SIZES = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2, "intermediate_size": 64}
TEXT = [
    "Who discovered penicillin? Alexander Fleming discovered penicillin in 1928.",
    "What is the capital of France? Paris is the capital of France.",
    "Bees make honey from nectar. The sea is salty. Tea is a drink made from leaves.",
    "Glaciers carve valleys. Octopuses have blue blood and three hearts.",
]


@functools.cache
def _subwords(kind: str) -> object:
    """A subword tokenizer trained on a few sentences with RoBERTa's pair template: byte-level BPE as
    RoBERTa's, or a unigram model as XLM-R's SentencePiece (ids 0-4: ``<s> <pad> </s> <unk> <mask>``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    if kind == "roberta":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials)
    else:
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=specials, unk_token="<unk>")
    tok.train_from_iterator(TEXT * 4, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))],
    )
    return tok


def _tokenizer(kind: str):
    from transformers import AutoTokenizer, RobertaTokenizerFast, XLMRobertaTokenizerFast

    from sieveqa.backbones import tokenizer_dir

    if kind in ("bert", "electra"):
        return AutoTokenizer.from_pretrained(tokenizer_dir())  # WordPiece, BERT's pair template
    if kind == "mpnet":  # all-mpnet-base-v2's own (make install puts its parts in)
        from sieveqa.backbones._mpnet import locate

        return AutoTokenizer.from_pretrained(locate())
    cls = RobertaTokenizerFast if kind == "roberta" else XLMRobertaTokenizerFast
    specials = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>"}
    return cls(
        tokenizer_object=_subwords(kind),
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        **specials,
    )


def tiny_hf_cross_encoder(kind: str, out: Path, labels: int = 1, seed: int = 0, max_length: int = 64) -> Path:
    """Save a random ``kind`` sequence classifier with ``labels`` outputs and its tokenizer to ``out``."""
    import transformers

    classes = {
        "bert": ("BertConfig", "BertForSequenceClassification"),
        "electra": ("ElectraConfig", "ElectraForSequenceClassification"),
        "roberta": ("RobertaConfig", "RobertaForSequenceClassification"),
        "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaForSequenceClassification"),
        "mpnet": ("MPNetConfig", "MPNetForSequenceClassification"),
    }
    config_name, model_name = classes[kind]
    tokenizer = _tokenizer(kind)
    extra = {"pad_token_id": tokenizer.pad_token_id}
    if kind in ("roberta", "xlm-roberta"):
        extra |= {"max_position_embeddings": 130, "type_vocab_size": 1}
    if kind == "mpnet":
        extra["max_position_embeddings"] = 130
    if kind == "electra":
        extra["embedding_size"] = 16  # narrower than the layers, as ELECTRA-small: embeddings_project
    config = getattr(transformers, config_name)(
        vocab_size=len(tokenizer), num_labels=labels, **SIZES, **extra
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = getattr(transformers, model_name)(config).eval()
        for name, param in model.named_parameters():  # weights big enough to move scores apart
            if param.dim() > 1:
                param.data.normal_(0, 0.3 if "classifier" not in name else 1.0)
    tokenizer.model_max_length = max_length
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tiny_distilbert(out: Path) -> Path:
    """A DistilBERT sequence classifier: a body whose layers sieveqa does not step (refused)."""
    import transformers

    config = transformers.DistilBertConfig(dim=32, n_layers=1, n_heads=2, hidden_dim=64, vocab_size=100)
    transformers.DistilBertForSequenceClassification(config).save_pretrained(out)
    return out
