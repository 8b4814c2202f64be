// The public enums' values are part of the ABI: they are written in files (GGUF type codes,
// optimizer frames, checkpoints, trainer state) and cross the library boundary as integers.
// This list is written out by hand, not derived from the headers, so renumbering any
// enumerator fails here. A new enumerator takes a value no other one has and is added here;
// a count (FG_*_COUNT, FG_DTYPE_END) grows with it.
#include <gtest/gtest.h>

#include <cctype>
#include <iterator>
#include <string>

#include "forgia/forgia.h"

namespace {

struct Pin {
  const char *name;
  long long value, expected;
};
#define P(name, v) Pin{#name, (long long)(name), v}

template <size_t N>
void check(const Pin (&pins)[N]) {
  for (const Pin &p : pins) EXPECT_EQ(p.expected, p.value) << p.name << " was renumbered";
}

// fg_status
const Pin kStatus[] = {
    P(FG_OK, 0), P(FG_ERR_INVALID_ARG, 1), P(FG_ERR_NOMEM, 2), P(FG_ERR_IO, 3), P(FG_ERR_NOT_FOUND, 4),
    P(FG_ERR_UNSUPPORTED, 5), P(FG_ERR_OVERFLOW, 6), P(FG_ERR_RANGE, 7), P(FG_ERR_TYPE, 8),
    P(FG_ERR_NONFINITE, 9), P(FG_ERR_STATE, 10), P(FG_ERR_NO_DEVICE, 20), P(FG_ERR_DEVICE, 21),
    P(FG_ERR_DEVICE_NOMEM, 22), P(FG_ERR_TRUNCATED, 40), P(FG_ERR_BAD_MAGIC, 41), P(FG_ERR_BAD_VERSION, 42),
    P(FG_ERR_BAD_DTYPE, 43), P(FG_ERR_BAD_SHAPE, 44), P(FG_ERR_BAD_ALIGNMENT, 45), P(FG_ERR_BAD_OFFSET, 46),
    P(FG_ERR_DUPLICATE, 47), P(FG_ERR_BAD_VALUE_TYPE, 48), P(FG_ERR_BAD_STRING, 49),
    P(FG_ERR_HEADER_TOO_SMALL, 60), P(FG_ERR_HEADER_TOO_LARGE, 61), P(FG_ERR_INVALID_HEADER_START, 62),
    P(FG_ERR_HEADER_NOT_UTF8, 63), P(FG_ERR_INVALID_JSON, 64), P(FG_ERR_INVALID_OFFSET, 65),
    P(FG_ERR_TENSOR_INVALID_INFO, 66), P(FG_ERR_METADATA_NOT_STRING, 67), P(FG_ERR_MISALIGNED_SLICE, 68),
    P(FG_ERR_INVALID_HEADER_LENGTH, 69), P(FG_ERR_INCOMPLETE_BUFFER, 70), P(FG_ERR_BAD_ROW, 80),
    P(FG_ERR_FRAME_UNKNOWN_NAME, 100), P(FG_ERR_FRAME_MISSING_ENTRY, 101),
    P(FG_ERR_FRAME_SHAPE_MISMATCH, 102), P(FG_ERR_FRAME_CONFIG_MISMATCH, 103),
    P(FG_ERR_FRAME_DTYPE_MISMATCH, 104), P(FG_ERR_FRAME_TRAILING_BYTES, 105), P(FG_ERR_QUANTIZED_BASE, 120),
};

// fg_dtype
const Pin kDtype[] = {
    P(FG_F32, 0), P(FG_F16, 1), P(FG_Q4_0, 2), P(FG_Q4_1, 3), P(FG_Q5_0, 6), P(FG_Q5_1, 7), P(FG_Q8_0, 8),
    P(FG_Q8_1, 9), P(FG_Q2_K, 10), P(FG_Q3_K, 11), P(FG_Q4_K, 12), P(FG_Q5_K, 13), P(FG_Q6_K, 14),
    P(FG_Q8_K, 15), P(FG_IQ2_XXS, 16), P(FG_IQ2_XS, 17), P(FG_IQ3_XXS, 18), P(FG_IQ1_S, 19), P(FG_IQ4_NL, 20),
    P(FG_IQ3_S, 21), P(FG_IQ2_S, 22), P(FG_IQ4_XS, 23), P(FG_I8, 24), P(FG_I16, 25), P(FG_I32, 26),
    P(FG_I64, 27), P(FG_F64, 28), P(FG_IQ1_M, 29), P(FG_BF16, 30), P(FG_TQ1_0, 34), P(FG_TQ2_0, 35),
    P(FG_MXFP4, 39), P(FG_NVFP4, 40), P(FG_Q1_0, 41), P(FG_Q2_0, 42), P(FG_GGML_TYPE_COUNT, 43),
    P(FG_BOOL, 64), P(FG_U8, 65), P(FG_U16, 66), P(FG_U32, 67), P(FG_U64, 68), P(FG_C64, 69), P(FG_F4, 70),
    P(FG_F6_E2M3, 71), P(FG_F6_E3M2, 72), P(FG_F8_E5M2, 73), P(FG_F8_E4M3, 74), P(FG_F8_E8M0, 75),
    P(FG_F8_E4M3FNUZ, 76), P(FG_F8_E5M2FNUZ, 77), P(FG_DTYPE_END, 78),
};

// fg_map_mode
const Pin kMapMode[] = {
    P(FG_MAP_MMAP, 0), P(FG_MAP_READ, 1),
};

// fg_device_kind
const Pin kDeviceKind[] = {
    P(FG_DEVICE_CPU, 0), P(FG_DEVICE_CUDA, 1),
};

// fg_copy_kind
const Pin kCopyKind[] = {
    P(FG_COPY_H2D, 0), P(FG_COPY_D2H, 1), P(FG_COPY_D2D, 2),
};

// fg_apollo_layout
const Pin kApolloLayout[] = {
    P(FG_APOLLO_LAYOUT_TALL, 0), P(FG_APOLLO_LAYOUT_WIDE, 1), P(FG_APOLLO_LAYOUT_WHOLE, 2),
};

// fg_op_kind
const Pin kOpKind[] = {
    P(FG_OP_FILL, 0), P(FG_OP_SCALE, 1), P(FG_OP_AXPY, 2), P(FG_OP_CLIP_SCALE, 3), P(FG_OP_ADAMW, 4),
    P(FG_OP_RNG_UNIFORM, 5), P(FG_OP_RNG_GAUSS_FAST, 6), P(FG_OP_RNG_KEEP_MASK, 7), P(FG_OP_DROPOUT, 8),
    P(FG_OP_ADAMW_MASTER, 9), P(FG_OP_ADAM, 10), P(FG_OP_ADAM_MASTER, 11), P(FG_OP_SGD, 12),
    P(FG_OP_SGD_MASTER, 13), P(FG_OP_SGD_MOMENTUM, 14), P(FG_OP_SGD_MOMENTUM_MASTER, 15),
    P(FG_OP_MUON_MOMENTUM, 16), P(FG_OP_MUON_NORMALIZE, 17), P(FG_OP_MUON_NS_COMB, 18), P(FG_OP_MUON_EYE, 19),
    P(FG_OP_MUON_APPLY, 20), P(FG_OP_MUON_APPLY_MASTER, 21), P(FG_OP_APOLLO_MOMENT, 22),
    P(FG_OP_APOLLO_APPLY, 23), P(FG_OP_APOLLO_APPLY_MASTER, 24), P(FG_OP_APOLLO_HF_ADAMW, 25),
    P(FG_OP_APOLLO_HF_ADAMW_MASTER, 26), P(FG_OP_RELU, 27), P(FG_OP_RELU_BACKWARD, 28),
    P(FG_OP_ES_PERTURB, 29), P(FG_OP_ES_PERTURB_CACHED, 30), P(FG_OP_ES_MATERIALIZE, 31),
    P(FG_OP_ES_MATERIALIZE_CACHED, 32), P(FG_OP_ES_UPDATE, 33), P(FG_OP_ES_ACC_CACHED, 34),
    P(FG_OP_ES_APPLY, 35), P(FG_OP_ES_ANCHOR_L2, 36), P(FG_OP_ES_ANCHOR_L1, 37), P(FG_OP_LORA_ADD, 38),
    P(FG_OP_LORA_SCALE, 39), P(FG_OP_LORA_DROPOUT_ADD, 40), P(FG_OP_SWIGLU, 41),
    P(FG_OP_SWIGLU_BACKWARD, 42), P(FG_OP_GEGLU, 43), P(FG_OP_GEGLU_BACKWARD, 44), P(FG_OP_KIND_COUNT, 45),
};

// fg_rng_kind
const Pin kRngKind[] = {
    P(FG_RNG_UNIFORM, 0), P(FG_RNG_KAIMING, 1), P(FG_RNG_GAUSS, 2), P(FG_RNG_GAUSS_FAST, 3),
    P(FG_RNG_KEEP_MASK, 4),
};

// fg_reduce_op
const Pin kReduceOp[] = {
    P(FG_REDUCE_SUM, 0), P(FG_REDUCE_SUMSQ, 1), P(FG_REDUCE_MAXABS, 2), P(FG_REDUCE_OP_COUNT, 3),
};

// fg_gemm_mode
const Pin kGemmMode[] = {
    P(FG_GEMM_DEFAULT, 0), P(FG_GEMM_FAST, 1), P(FG_GEMM_EXACT, 2), P(FG_GEMM_FAST_TF32, 3),
};

// fg_gguf_type
const Pin kGgufType[] = {
    P(FG_GGUF_UINT8, 0), P(FG_GGUF_INT8, 1), P(FG_GGUF_UINT16, 2), P(FG_GGUF_INT16, 3), P(FG_GGUF_UINT32, 4),
    P(FG_GGUF_INT32, 5), P(FG_GGUF_FLOAT32, 6), P(FG_GGUF_BOOL, 7), P(FG_GGUF_STRING, 8), P(FG_GGUF_ARRAY, 9),
    P(FG_GGUF_UINT64, 10), P(FG_GGUF_INT64, 11), P(FG_GGUF_FLOAT64, 12), P(FG_GGUF_TYPE_COUNT, 13),
};

// fg_tok_model
const Pin kTokModel[] = {
    P(FG_TOK_BPE, 1), P(FG_TOK_SPM, 2), P(FG_TOK_WPM, 3), P(FG_TOK_UNIGRAM, 4), P(FG_TOK_WORDLEVEL, 5),
};

// FG_TOK_TYPE_* (an anonymous enum)
const Pin kTokType[] = {
    P(FG_TOK_TYPE_NORMAL, 1), P(FG_TOK_TYPE_UNKNOWN, 2), P(FG_TOK_TYPE_CONTROL, 3),
    P(FG_TOK_TYPE_USER_DEFINED, 4), P(FG_TOK_TYPE_UNUSED, 5), P(FG_TOK_TYPE_BYTE, 6),
    P(FG_TOK_TYPE_NOT_MERGED, 7),
};

// fg_tok_prefix
const Pin kTokPrefix[] = {
    P(FG_TOK_PREFIX_TEXT, 0), P(FG_TOK_PREFIX_SEGMENT, 1), P(FG_TOK_PREFIX_FIRST, 2),
    P(FG_TOK_PREFIX_EACH, 3),
};

// fg_chat_family
const Pin kChatFamily[] = {
    P(FG_CHAT_SMOLLM2, 1), P(FG_CHAT_LFM2, 2), P(FG_CHAT_QWEN25, 3), P(FG_CHAT_QWEN3, 4),
    P(FG_CHAT_QWEN35, 5), P(FG_CHAT_LLAMA3, 6), P(FG_CHAT_LLAMA31, 7), P(FG_CHAT_GEMMA2, 8),
    P(FG_CHAT_GEMMA3, 9),
};

// fg_ckpt_format
const Pin kCkptFormat[] = {
    P(FG_CKPT_GGUF, 1), P(FG_CKPT_SAFETENSORS, 2),
};

// fg_ckpt_dir_weights
const Pin kCkptDirWeights[] = {
    P(FG_CKPT_DIR_MODEL, 1), P(FG_CKPT_DIR_ADAPTERS, 2),
};

// fg_oframe_kind
const Pin kOframeKind[] = {
    P(FG_OFRAME_KIND_ADAMW, 0), P(FG_OFRAME_KIND_ADAM, 1), P(FG_OFRAME_KIND_SGD, 2),
    P(FG_OFRAME_KIND_MUON, 3), P(FG_OFRAME_KIND_APOLLO, 4), P(FG_OFRAME_KIND_SET, 5),
    P(FG_OFRAME_KIND_TENSORS, 6),
};

// fg_oframe_dtype
const Pin kOframeDtype[] = {
    P(FG_OFRAME_DTYPE_F32, 0), P(FG_OFRAME_DTYPE_BF16, 1),
};

// fg_imatrix_format
const Pin kImatrixFormat[] = {
    P(FG_IMATRIX_GGUF, 0), P(FG_IMATRIX_LEGACY, 1),
};

// fg_export_mode
const Pin kExportMode[] = {
    P(FG_EXPORT_MODE_UNSET, 0), P(FG_EXPORT_MODE_VERBATIM, 1), P(FG_EXPORT_MODE_DTYPE, 2),
    P(FG_EXPORT_MODE_MIXTURE, 3),
};

// fg_export_format, fg_export_spelling
const Pin kExportFormat[] = {
    P(FG_EXPORT_FORMAT_GGUF, 0), P(FG_EXPORT_FORMAT_SAFETENSORS, 1),
    P(FG_EXPORT_SPELLING_DTYPE, 1), P(FG_EXPORT_SPELLING_LLAMA, 2),
};

// fg_export_action
const Pin kExportAction[] = {
    P(FG_EXPORT_ACTION_COPY, 0), P(FG_EXPORT_ACTION_CONVERT, 1), P(FG_EXPORT_ACTION_DEQUANT, 2),
    P(FG_EXPORT_ACTION_REQUANT, 3),
};

// fg_export_why
const Pin kExportWhy[] = {
    P(FG_EXPORT_WHY_TARGET, 0), P(FG_EXPORT_WHY_VERBATIM, 1), P(FG_EXPORT_WHY_NOT_MATRIX, 2),
    P(FG_EXPORT_WHY_NOT_WEIGHT, 3), P(FG_EXPORT_WHY_NORM, 4), P(FG_EXPORT_WHY_SAME, 5),
    P(FG_EXPORT_WHY_ROW, 6), P(FG_EXPORT_WHY_SOURCE, 7), P(FG_EXPORT_WHY_KEPT, 8), P(FG_EXPORT_WHY_RULE, 9),
    P(FG_EXPORT_WHY_FALLBACK, 10), P(FG_EXPORT_WHY_OVERRIDE, 11),
};

// fg_export_ptqtp_why
const Pin kExportPtqtpWhy[] = {
    P(FG_PTQTP_WHY_QUANTIZE, 0), P(FG_PTQTP_WHY_SHAPE, 1), P(FG_PTQTP_WHY_NOT_WEIGHT, 2),
    P(FG_PTQTP_WHY_NORM, 3), P(FG_PTQTP_WHY_ROW, 4), P(FG_PTQTP_WHY_SOURCE, 5), P(FG_PTQTP_WHY_DEFAULT, 6),
    P(FG_PTQTP_WHY_NOT_INCLUDED, 7), P(FG_PTQTP_WHY_EXCLUDED, 8),
};

// fg_load_dtype
const Pin kLoadDtype[] = {
    P(FG_LOAD_DTYPE_KEEP, 0), P(FG_LOAD_DTYPE_F32, 1), P(FG_LOAD_DTYPE_BF16, 2), P(FG_LOAD_DTYPE_F16, 3),
    P(FG_LOAD_DTYPE_DEQUANT, 4), P(FG_LOAD_DTYPE_F64, 5),
};

// fg_muon_scale
const Pin kMuonScale[] = {
    P(FG_MUON_SPECTRAL, 0), P(FG_MUON_MATCH_RMS_ADAMW, 1),
};

// fg_apollo_scale_type
const Pin kApolloScaleType[] = {
    P(FG_APOLLO_CHANNEL, 0), P(FG_APOLLO_TENSOR, 1),
};

// fg_lora_target
const Pin kLoraTarget[] = {
    P(FG_LORA_Q, 0), P(FG_LORA_K, 1), P(FG_LORA_V, 2), P(FG_LORA_O, 3), P(FG_LORA_GATE, 4), P(FG_LORA_UP, 5),
    P(FG_LORA_DOWN, 6), P(FG_LORA_TARGET_COUNT, 7),
};

// fg_lr_kind
const Pin kLrKind[] = {
    P(FG_LR_CONSTANT, 0), P(FG_LR_WARMUP_COSINE, 1), P(FG_LR_WARMUP_LINEAR, 2),
};

// fg_comm_kind
const Pin kCommKind[] = {
    P(FG_COMM_AUTO, 0), P(FG_COMM_SINGLE, 1), P(FG_COMM_MPI, 2), P(FG_COMM_NCCL, 3),
};

// fg_es_noise
const Pin kEsNoise[] = {
    P(FG_ES_NOISE_IID, 0), P(FG_ES_NOISE_CORRELATED, 1),
};

// fg_es_restore_mode
const Pin kEsRestoreMode[] = {
    P(FG_ES_RESTORE_REGENERATE, 0), P(FG_ES_RESTORE_SNAPSHOT, 1),
};

// fg_es_anchor_decay
const Pin kEsAnchorDecay[] = {
    P(FG_ES_ANCHOR_NONE, 0), P(FG_ES_ANCHOR_L1, 1), P(FG_ES_ANCHOR_L2, 2),
};

// fg_es_reward_norm
const Pin kEsRewardNorm[] = {
    P(FG_ES_REWARD_Z_SCORE, 0), P(FG_ES_REWARD_CENTERED_RANKS, 1), P(FG_ES_REWARD_NONE, 2),
};

}  // namespace

TEST(ApiStable, Status) { check(kStatus); }
TEST(ApiStable, Dtype) { check(kDtype); }
TEST(ApiStable, MapMode) { check(kMapMode); }
TEST(ApiStable, DeviceKind) { check(kDeviceKind); }
TEST(ApiStable, CopyKind) { check(kCopyKind); }
TEST(ApiStable, ApolloLayout) { check(kApolloLayout); }
TEST(ApiStable, OpKind) { check(kOpKind); }
TEST(ApiStable, RngKind) { check(kRngKind); }
TEST(ApiStable, ReduceOp) { check(kReduceOp); }
TEST(ApiStable, GemmMode) { check(kGemmMode); }
TEST(ApiStable, GgufType) { check(kGgufType); }
TEST(ApiStable, TokModel) { check(kTokModel); }
TEST(ApiStable, TokType) { check(kTokType); }
TEST(ApiStable, TokPrefix) { check(kTokPrefix); }
TEST(ApiStable, ChatFamily) { check(kChatFamily); }
TEST(ApiStable, CkptFormat) { check(kCkptFormat); }
TEST(ApiStable, CkptDirWeights) { check(kCkptDirWeights); }
TEST(ApiStable, OframeKind) { check(kOframeKind); }
TEST(ApiStable, OframeDtype) { check(kOframeDtype); }
TEST(ApiStable, ImatrixFormat) { check(kImatrixFormat); }
TEST(ApiStable, ExportMode) { check(kExportMode); }
TEST(ApiStable, ExportAction) { check(kExportAction); }
TEST(ApiStable, ExportFormat) { check(kExportFormat); }
TEST(ApiStable, ExportWhy) { check(kExportWhy); }
TEST(ApiStable, ExportPtqtpWhy) { check(kExportPtqtpWhy); }
TEST(ApiStable, LoadDtype) { check(kLoadDtype); }
TEST(ApiStable, MuonScale) { check(kMuonScale); }
TEST(ApiStable, ApolloScaleType) { check(kApolloScaleType); }
TEST(ApiStable, LoraTarget) { check(kLoraTarget); }
TEST(ApiStable, LrKind) { check(kLrKind); }
TEST(ApiStable, CommKind) { check(kCommKind); }
TEST(ApiStable, EsNoise) { check(kEsNoise); }
TEST(ApiStable, EsRestoreMode) { check(kEsRestoreMode); }
TEST(ApiStable, EsAnchorDecay) { check(kEsAnchorDecay); }
TEST(ApiStable, EsRewardNorm) { check(kEsRewardNorm); }

// Every op of the table is pinned above (a new row fails this until it is), and each number
// reaches the op of that name.
TEST(ApiStable, OpKindCoversTheTable) {
  EXPECT_EQ((long long)FG_OP_KIND_COUNT, (long long)std::size(kOpKind) - 1);
  for (const Pin &p : kOpKind) {
    if (std::string(p.name) == "FG_OP_KIND_COUNT") continue;
    std::string want = p.name + 6;
    for (char &ch : want) ch = (char)std::tolower((unsigned char)ch);
    const char *got = fg_op_name((fg_op_kind)p.expected);
    ASSERT_NE(nullptr, got) << p.name;
    EXPECT_EQ(want, got) << p.name;
  }
  EXPECT_EQ(nullptr, fg_op_name(FG_OP_KIND_COUNT));
}
