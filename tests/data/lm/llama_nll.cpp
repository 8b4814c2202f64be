// Per-token negative log-likelihood of a text under a GGUF model, computed by llama.cpp: the
// reference forgia's runtime is compared against. Not part of forgia's build; built and linked
// against llama.cpp's libllama by scripts/llama-cpp-build.sh.
//
//   llama_nll MODEL TEXT_FILE [--threads N] [--kv f16|f32] [--fa auto|on|off]
//
// The whole file is tokenized with llama_tokenize(add_special=true, parse_special=true) and run
// as ONE causal batch (n_ctx = n_batch = n_ubatch = token count, logits for every position), so
// no position sees a truncated context. Prints one JSON object on stdout:
//   {"ids": [...], "nll": [...], "ppl": x}
// with nll[i] = -log softmax(logits[i])[ids[i+1]] (i < n-1) evaluated in double from
// llama.cpp's float logits, and ppl = exp(mean nll). Defaults are llama.cpp's own (F16 KV cache,
// flash attention auto), i.e. what llama-perplexity does; --kv f32 removes the cache rounding.
#include "llama.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static void quiet_log(enum ggml_log_level level, const char *text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int usage(const char *msg) {
    fprintf(stderr, "llama_nll: %s\nusage: llama_nll MODEL TEXT_FILE [--threads N] [--kv f16|f32] [--fa auto|on|off]\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage("MODEL and TEXT_FILE are required");
    const char *model_path = argv[1];
    const char *text_path = argv[2];
    int threads = 0;
    ggml_type kv = GGML_TYPE_F16;
    llama_flash_attn_type fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
    for (int a = 3; a < argc; a++) {
        if (a + 1 >= argc) return usage("option without a value");
        const char *v = argv[a + 1];
        if (!strcmp(argv[a], "--threads")) {
            char *end = nullptr;
            long t = strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || t < 1 || t > 1024) return usage("--threads wants an integer in [1, 1024]");
            threads = (int)t;
        } else if (!strcmp(argv[a], "--kv")) {
            if (!strcmp(v, "f16")) kv = GGML_TYPE_F16;
            else if (!strcmp(v, "f32")) kv = GGML_TYPE_F32;
            else return usage("--kv wants f16 or f32");
        } else if (!strcmp(argv[a], "--fa")) {
            if (!strcmp(v, "auto")) fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
            else if (!strcmp(v, "on")) fa = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            else if (!strcmp(v, "off")) fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            else return usage("--fa wants auto, on or off");
        } else {
            return usage("unknown option");
        }
        a++;
    }

    std::ifstream in(text_path, std::ios::binary);
    if (!in) { fprintf(stderr, "llama_nll: cannot read %s\n", text_path); return 1; }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.size() > (size_t)INT32_MAX / 2) { fprintf(stderr, "llama_nll: %s is too large\n", text_path); return 1; }

    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) { fprintf(stderr, "llama_nll: cannot load model %s\n", model_path); return 1; }
    const llama_vocab *vocab = llama_model_get_vocab(model);

    // a token covers at least one byte, plus the BOS/EOS that add_special may insert
    std::vector<llama_token> ids(text.size() + 8);
    int32_t n = llama_tokenize(vocab, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), true, true);
    if (n < 0 && n != INT32_MIN) {
        ids.resize((size_t)-n);
        n = llama_tokenize(vocab, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), true, true);
    }
    if (n < 2) { fprintf(stderr, "llama_nll: %s gives %d tokens, need at least 2\n", text_path, n); return 1; }
    ids.resize((size_t)n);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n;
    cp.n_batch = (uint32_t)n;
    cp.n_ubatch = (uint32_t)n;
    cp.n_seq_max = 1;
    cp.type_k = kv;
    cp.type_v = kv;
    cp.flash_attn_type = fa;
    if (threads > 0) { cp.n_threads = threads; cp.n_threads_batch = threads; }
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "llama_nll: cannot create a context of %d tokens\n", n); return 1; }

    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; i++) {
        batch.token[i] = ids[(size_t)i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    int32_t rc = llama_decode(ctx, batch);
    if (rc != 0) { fprintf(stderr, "llama_nll: llama_decode returned %d\n", rc); return 1; }

    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    std::vector<double> nll((size_t)n - 1);
    double total = 0.0;
    for (int32_t i = 0; i + 1 < n; i++) {
        const float *lg = llama_get_logits_ith(ctx, i);
        if (!lg) { fprintf(stderr, "llama_nll: no logits at position %d\n", i); return 1; }
        const llama_token next = ids[(size_t)i + 1];
        if (next < 0 || next >= n_vocab) { fprintf(stderr, "llama_nll: token %d out of vocabulary\n", next); return 1; }
        double mx = -INFINITY;
        for (int32_t v = 0; v < n_vocab; v++) mx = lg[v] > mx ? (double)lg[v] : mx;
        double sum = 0.0;
        for (int32_t v = 0; v < n_vocab; v++) sum += std::exp((double)lg[v] - mx);
        nll[(size_t)i] = std::log(sum) + mx - (double)lg[next];
        total += nll[(size_t)i];
    }

    printf("{\"ids\": [");
    for (int32_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[(size_t)i]);
    printf("], \"nll\": [");
    for (size_t i = 0; i < nll.size(); i++) printf(i ? ", %.17g" : "%.17g", nll[i]);
    printf("], \"ppl\": %.17g}\n", std::exp(total / (double)nll.size()));

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
