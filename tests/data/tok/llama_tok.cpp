// Token ids of texts as llama.cpp tokenizes them: the reference forgia's GGUF tokenizers are
// compared against. Not part of forgia's build; built and linked against llama.cpp's libllama
// by scripts/llama-cpp-build.sh.
//
//   llama_tok VOCAB.gguf TEXTS.jsonl [--no-special | --no-bos]
//   llama_tok VOCAB.gguf IDS.txt --detok
//
// The vocabulary alone is loaded (vocab_only). Each line of TEXTS.jsonl is a JSON string; each
// gives one line of ids on stdout, from llama_tokenize(add_special=true, parse_special=true)
// (--no-special: add_special=false, parse_special=false, what llama.cpp's test vectors use;
// --no-bos: add_special=false, parse_special=true, forgia's encode without BOS).
// --detok: each line of IDS.txt holds ids separated by spaces; each gives one line on stdout,
// llama_detokenize(remove_special=false, unparse_special=true) as a JSON string.
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static void quiet_log(enum ggml_log_level level, const char *text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

// A JSON string literal (the whole line) into UTF-8; false when the line is not one.
static bool json_string(const std::string &line, std::string &out) {
    size_t i = 0, n = line.size();
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    if (i >= n || line[i++] != '"') return false;
    out.clear();
    while (i < n && line[i] != '"') {
        char c = line[i++];
        if (c != '\\') {
            out += c;
            continue;
        }
        if (i >= n) return false;
        c = line[i++];
        switch (c) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                auto hex = [&](unsigned &v) {
                    if (i + 4 > n) return false;
                    v = 0;
                    for (int k = 0; k < 4; k++) {
                        char h = line[i++];
                        v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                    }
                    return true;
                };
                unsigned cp = 0, lo = 0;
                if (!hex(cp)) return false;
                if (cp >= 0xD800 && cp < 0xDC00) {
                    if (i + 2 > n || line[i] != '\\' || line[i + 1] != 'u') return false;
                    i += 2;
                    if (!hex(lo)) return false;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp < 0x80) out += (char)cp;
                else if (cp < 0x800) out += (char)(0xC0 | cp >> 6), out += (char)(0x80 | (cp & 63));
                else if (cp < 0x10000)
                    out += (char)(0xE0 | cp >> 12), out += (char)(0x80 | (cp >> 6 & 63)), out += (char)(0x80 | (cp & 63));
                else
                    out += (char)(0xF0 | cp >> 18), out += (char)(0x80 | (cp >> 12 & 63)),
                        out += (char)(0x80 | (cp >> 6 & 63)), out += (char)(0x80 | (cp & 63));
                break;
            }
            default: return false;
        }
    }
    return i < n;
}

static void json_out(const std::string &s) {
    putchar('"');
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    puts("\"");
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 ||
        (argc == 4 && strcmp(argv[3], "--no-special") && strcmp(argv[3], "--detok") && strcmp(argv[3], "--no-bos"))) {
        fprintf(stderr, "usage: llama_tok VOCAB.gguf TEXTS.jsonl [--no-special | --no-bos | --detok]\n");
        return 2;
    }
    const bool detok = argc == 4 && !strcmp(argv[3], "--detok");
    const bool add_special = argc == 3, parse_special = argc == 3 || !strcmp(argv[3], "--no-bos");
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llama_tok: cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab *vocab = llama_model_get_vocab(model);
    std::ifstream in(argv[2], std::ios::binary);
    std::string line, text;
    std::vector<llama_token> ids;
    size_t lineno = 0;
    while (detok && std::getline(in, line)) {
        ids.clear();
        const char *p = line.c_str();
        char *end = nullptr;
        for (long v = strtol(p, &end, 10); end != p; v = strtol(p, &end, 10)) {
            ids.push_back((llama_token)v);
            p = end;
        }
        std::string out(line.size() * 16 + 64, '\0');
        int n = llama_detokenize(vocab, ids.data(), (int32_t)ids.size(), out.data(), (int32_t)out.size(), false, true);
        if (n < 0) {
            out.resize((size_t)-n);
            n = llama_detokenize(vocab, ids.data(), (int32_t)ids.size(), out.data(), (int32_t)out.size(), false, true);
        }
        out.resize(n < 0 ? 0 : (size_t)n);
        json_out(out);
    }
    while (!detok && std::getline(in, line)) {
        lineno++;
        if (!json_string(line, text)) {
            fprintf(stderr, "llama_tok: %s:%zu: not a JSON string\n", argv[2], lineno);
            return 1;
        }
        ids.resize(text.size() + 16);
        int n = llama_tokenize(vocab, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), add_special,
                               parse_special);
        if (n < 0) {
            ids.resize((size_t)-n);
            n = llama_tokenize(vocab, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), add_special,
                               parse_special);
        }
        for (int k = 0; k < n; k++) printf(k ? " %d" : "%d", ids[(size_t)k]);
        putchar('\n');
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
