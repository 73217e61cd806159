"""A tiny random-weight Llama 3.1 built offline in seconds: the real load/template/generate path, no download.

Byte-level BPE trained on a few strings, the Llama 3.1 special tokens and chat format, no pad
token and three EOS ids (as the real model), a 2-layer ``LlamaConfig`` with llama3 rope scaling.
Its text is noise; tests use it for the plumbing and a scripted backend for the protocol.
``python -m marlinkit tiny-llm DIR`` builds one for trying ``transformers:DIR``.
"""

from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eom_id|>", "<|eot_id|>", "<|python_tag|>")
EOS_TOKENS = ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>")  # Llama 3.1's generation_config lists three
CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + "
    "'<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
_CORPUS = [
    "Alice is at (1, 0) and Bob is at (1, 7). TLP: Bob waits in the slot.",
    "Agreed Alice Action: @NORTH\nAgreed Bob Action: @WAIT\n@AGREE ~AGREE",
    "@NORTH @SOUTH @WEST @EAST @WAIT robots move along the corridor to reach their goals.",
]


def build_tiny_llama(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tokenizer + random 2-layer Llama to ``out_dir`` and return it (~4 s)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_CORPUS, trainers.BpeTrainer(
        vocab_size=400, special_tokens=list(SPECIAL_TOKENS), initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                        chat_template=CHAT_TEMPLATE)
    eos = [tokenizer.convert_tokens_to_ids(t) for t in EOS_TOKENS]
    bos = tokenizer.convert_tokens_to_ids("<|begin_of_text|>")
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=4096, bos_token_id=bos, eos_token_id=eos,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 1024},
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=eos)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
