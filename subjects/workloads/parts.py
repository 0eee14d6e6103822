"""The optimizations the seed documents list, as parts of whole pipelines.

Each part names the subject variant that measures it alone, so the report can set the product
of the parts' speedups beside the whole's. A pipeline module picks the parts its seed lists
(and may leave one out with its reason, `dataclasses.replace(part, left_out=...)`).
"""
from __future__ import annotations

from proofbench import Part

_GPU_ONLY = "GPU-only: "

BATCHED_WRITES = Part("batched_writes", "loading.fasta_to_lmdb", "optimized",
                      "streamed FASTA parse, one LMDB commit per 5,000 records")
CURSOR_READS = Part("cursor_reads", "loading.lmdb_read", "optimized",
                    "one read transaction, a cursor in batches of 1,000")
FAST_TOKENIZER = Part("fast_tokenizer", "tokenization.batch_tokenize", "optimized",
                      "the tokenizers-backed tokenizer, 1,000 sequences a call")
DYNAMIC_PADDING = Part("dynamic_padding", "tokenization.padding_strategy", "length_grouped",
                       "max_length 512 with longer sequences filtered out, batches grouped by length and "
                       "padded to their longest")
WORKERS = Part("workers", "loading.dataloader", "workers", "DataLoader workers, persistent, prefetch_factor 4")
BF16 = Part("bf16", "training.mixed_precision", "bf16", "autocast to bfloat16", requires=("bf16",))
CHECKPOINTING = Part("checkpointing", "training.gradient_checkpointing", "checkpointed",
                     "activation checkpointing (recompute each layer in the backward pass)")
COMPILE = Part("compile", "training.compile", "compiled", "torch.compile, compiled and warmed in setup",
               requires=("compile",))
FUSED_OPTIMIZER = Part("fused_optimizer", "training.fused_optimizer", "fused", "AdamW(fused=True)")
GRAD_ACCUMULATION = Part("grad_accumulation", "training.grad_accumulation", "accumulated",
                         "each batch as 4 micro-batches, gradients summed, one step")
MASK_CACHE = Part("mask_cache", "training.causal_mask_cache", "cached", "one causal mask per (length, device, dtype)")
MEMORY_QUERIES = Part("memory_queries", "training.memory_queries", "once",
                      "memory queried once per epoch instead of after every step")
SDPA = Part("memory_efficient_attention", "inference.attention_kernel", "sdpa", "scaled_dot_product_attention",
            left_out="already on in the baseline: transformers builds these models with SDPA attention by default")

LENGTH_SORTED = Part("length_sorted", "inference.length_sorted_batches", "length_sorted",
                     "batches of length-sorted proteins, rows put back in file order")
INFERENCE_MODE = Part("inference_mode", "inference.half_precision", "inference_mode",
                      "torch.inference_mode instead of torch.no_grad")
BF16_WEIGHTS = Part("bf16", "inference.half_precision", "bf16", "bfloat16 weights", requires=("bf16",))
COMPILE_INFERENCE = Part("compile", "inference.compile", "compiled",
                         "torch.compile, compiled and warmed on every batch shape in setup", requires=("compile",))
INT8 = Part("int8", "quantization.dynamic_int8", "int8", "dynamic int8 Linear layers (torch.ao quantize_dynamic)",
            requires=("int8_cpu",))
EMBEDDING_CACHE = Part("embedding_cache", "inference.embedding_cache", "lru_cache",
                       "LRU cache of embeddings keyed by SHA-256 of the text, 1,000 entries")
REQUEST_BATCHING = Part("request_batching", "inference.request_batching", "dynamic_batching",
                        "waiting requests answered in one batch")

FP16_SCALER = Part("fp16_scaler", "training.mixed_precision", "fp16", "autocast to float16 with a GradScaler",
                   requires=("cuda",), left_out=_GPU_ONLY + "fp16 autocast with a GradScaler runs on CUDA; "
                   "on a CPU bf16 stands in for it")
FP16_WEIGHTS = Part("fp16", "inference.half_precision", "fp16", "float16 weights", requires=("cuda",),
                    left_out=_GPU_ONLY + "fp16 matmuls are fast on GPUs; on a CPU bf16 stands in for them")
PIN_MEMORY = Part("pin_memory", "loading.dataloader", "pinned", "pin_memory=True and non_blocking copies",
                  requires=("cuda",), left_out=_GPU_ONLY + "pinned host memory speeds copies to a GPU")
TF32 = Part("tf32", "training.mixed_precision", "tf32", "TF32 tensor-core matmuls", requires=("cuda",),
            left_out=_GPU_ONLY + "TF32 is a tensor-core format")
FLASH_ATTENTION = Part("flash_attention", "inference.attention_kernel", "flash", "flash attention",
                       requires=("flash_attention",), left_out=_GPU_ONLY + "the flash kernel runs on CUDA devices")
