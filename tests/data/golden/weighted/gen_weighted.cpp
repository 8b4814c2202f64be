// Generator of the weighted quantizer goldens (README.md here). Our program, no ggml code:
// it links ggml's quantizers and llama.cpp's importance-matrix loader (built by
// build_and_run.sh from the llama-cpp-python 0.3.36 sdist) and writes
//   <type>.bin             ggml_quantize_chunk's bytes for the rows of weighted_rows.h with
//                          every weight kind, and for rows quantized with the fixtures' weights
//   imatrix_expected.bin   the weights llama-quantize takes from imatrix.gguf / imatrix.dat:
//                          common_imatrix_load, then load_imatrix's normalisation (restated
//                          below from tools/quantize/quantize.cpp: sums / count per expert for
//                          GGUF, sums / ncall for the legacy form)
// Usage: gen_weighted FIXTURE_DIR OUT_DIR
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ggml.h"
#include "imatrix-loader.h"

extern "C" {
#include "weighted_rows.h"
}

namespace {

struct Out {
  FILE *f;
  void u32(uint32_t v) { fwrite(&v, 4, 1, f); }
  void i32(int32_t v) { fwrite(&v, 4, 1, f); }
  void u64(uint64_t v) { fwrite(&v, 8, 1, f); }
  void bytes(const void *p, size_t n) { fwrite(p, 1, n, f); }
};

// load_imatrix of llama-quantize: the normalised weights of each entry.
std::vector<std::pair<std::string, std::vector<float>>> normalise(const common_imatrix &m) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const auto &kv : m.entries) {
    const common_imatrix_entry &en = kv.second;
    std::vector<float> e(en.sums.size());
    if (!m.is_legacy) {
      const int64_t nc = (int64_t)en.counts.size(), ne0 = (int64_t)en.sums.size() / nc;
      for (int64_t j = 0; j < nc; j++) {
        const float count = (float)en.counts[j];
        for (int64_t i = 0; i < ne0; i++) e[j * ne0 + i] = count > 0.0f ? en.sums[j * ne0 + i] / count : 1;
      }
    } else {
      const int64_t ncall = en.counts.empty() ? 0 : en.counts[0];
      for (size_t i = 0; i < en.sums.size(); i++) e[i] = ncall > 0 ? en.sums[i] / ncall : en.sums[i];
    }
    out.emplace_back(kv.first, e);
  }
  return out;
}

const std::vector<float> *find(const std::vector<std::pair<std::string, std::vector<float>>> &v, const char *name) {
  for (const auto &e : v)
    if (e.first == name) return &e.second;
  return nullptr;
}

void write_record(Out &o, ggml_type t, uint32_t kind, uint32_t n, uint64_t seed, uint32_t wkind, uint32_t nrows,
                  uint64_t wseed, const std::vector<float> &x, const float *w) {
  const size_t rs = ggml_row_size(t, n);
  std::vector<uint8_t> q(rs * nrows, 0);
  const size_t wrote = ggml_quantize_chunk(t, x.data(), q.data(), 0, nrows, n, w);
  if (wrote != q.size()) {
    fprintf(stderr, "%s: wrote %zu, expected %zu\n", ggml_type_name(t), wrote, q.size());
    exit(1);
  }
  o.u32(kind);
  o.u32(n);
  o.u64(seed);
  o.u32(wkind);
  o.u32(nrows);
  o.u64(wseed);
  o.u64(fgw_fnv1a(x.data(), x.size() * 4));
  o.u64(w ? fgw_fnv1a(w, (size_t)n * 4) : 0);
  o.u32((uint32_t)q.size());
  o.u32(0);
  o.bytes(q.data(), q.size());
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gen_weighted FIXTURE_DIR OUT_DIR\n");
    return 2;
  }
  const std::string fix = argv[1], outdir = argv[2];
  common_imatrix mg, md;
  if (!common_imatrix_load(fix + "/imatrix.gguf", mg) || mg.is_legacy || !mg.has_metadata) {
    fprintf(stderr, "imatrix.gguf: llama.cpp's loader refused it or read it as legacy\n");
    return 1;
  }
  if (!common_imatrix_load(fix + "/imatrix.dat", md) || !md.is_legacy) {
    fprintf(stderr, "imatrix.dat: llama.cpp's loader refused it\n");
    return 1;
  }
  const auto wg = normalise(mg), wd = normalise(md);
  {
    Out o{fopen((outdir + "/imatrix_expected.bin").c_str(), "wb")};
    o.bytes("FGIMATRX", 8);
    o.u32(1);
    o.u32(2);
    const common_imatrix *ms[2] = {&mg, &md};
    const std::vector<std::pair<std::string, std::vector<float>>> *ws[2] = {&wg, &wd};
    for (int k = 0; k < 2; k++) {
      o.u32(ms[k]->is_legacy ? 1 : 0);
      o.u32((uint32_t)ws[k]->size());
      o.i32(ms[k]->chunk_count);
      o.i32(ms[k]->chunk_size);
      o.u32((uint32_t)ms[k]->datasets.size());
      for (const auto &d : ms[k]->datasets) {
        o.u32((uint32_t)d.size());
        o.bytes(d.data(), d.size());
      }
      for (const auto &e : *ws[k]) {
        o.u32((uint32_t)e.first.size());
        o.bytes(e.first.data(), e.first.size());
        o.u32((uint32_t)ms[k]->entries.at(e.first).counts.size());
        o.u32((uint32_t)e.second.size());
        o.bytes(e.second.data(), e.second.size() * 4);
      }
      printf("%s: %zu entries, chunk_count %d, chunk_size %d\n", k ? "imatrix.dat" : "imatrix.gguf", ws[k]->size(),
             ms[k]->chunk_count, ms[k]->chunk_size);
    }
    fclose(o.f);
  }

  const std::vector<float> *attn = find(wg, "blk.0.attn_q.weight"), *exps = find(wg, "blk.0.ffn_down_exps.weight"),
                           *attn_dat = find(wd, "blk.0.attn_q.weight");
  if (!attn || !exps || !attn_dat || exps->size() != 4 * 256) {
    fprintf(stderr, "fixture entries missing\n");
    return 1;
  }
  const ggml_type types[] = {GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,   GGML_TYPE_Q5_0,   GGML_TYPE_Q5_1,  GGML_TYPE_Q8_0,
                             GGML_TYPE_Q2_K,   GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,   GGML_TYPE_Q5_K,  GGML_TYPE_Q6_K,
                             GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_TQ1_0,  GGML_TYPE_TQ2_0, GGML_TYPE_MXFP4,
                             GGML_TYPE_NVFP4,  GGML_TYPE_Q1_0,   GGML_TYPE_Q2_0,   GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
                             GGML_TYPE_IQ2_S,  GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M};
  for (ggml_type t : types) {
    const int64_t blck = ggml_blck_size(t);
    const std::string path = outdir + "/" + ggml_type_name(t) + ".bin";
    Out o{fopen(path.c_str(), "wb")};
    uint32_t nrec = 0;
    for (size_t r = 0; r < FGW_NROWS_TABLE; r++)
      if (fgw_row_table[r][1] % blck == 0) nrec += FGW_WKINDS;
    nrec += 4 + 2 + 1;
    o.bytes("FGWEIGHT", 8);
    o.u32(1);
    o.u32((uint32_t)t);
    o.u32(nrec);
    o.u32(0);
    for (size_t r = 0; r < FGW_NROWS_TABLE; r++) {
      const uint32_t kind = fgw_row_table[r][0], n = fgw_row_table[r][1];
      const uint64_t seed = fgw_row_table[r][2];
      if (n % blck != 0) continue;
      std::vector<float> x(n), w(n);
      fgw_row(kind, n, seed, x.data());
      for (uint32_t wk = 0; wk < FGW_WKINDS; wk++) {
        const uint64_t wseed = seed * 1000 + wk;
        fgw_weights(wk, n, wseed, w.data());
        write_record(o, t, kind, n, seed, wk, 1, wseed, x, w.data());
      }
    }
    // two gaussian rows (seeds s, s+1) per call, with the fixtures' weights: 0x1000 + e is
    // expert e of blk.0.ffn_down_exps.weight (GGUF), 0x2000 blk.0.attn_q.weight (GGUF),
    // 0x3000 blk.0.attn_q.weight (legacy)
    auto pair_rows = [](uint64_t s) {
      std::vector<float> x(512);
      fgw_row(0, 256, s, x.data());
      fgw_row(0, 256, s + 1, x.data() + 256);
      return x;
    };
    for (uint32_t e = 0; e < 4; e++)
      write_record(o, t, 0, 256, 200 + 2 * e, 0x1000 + e, 2, 0, pair_rows(200 + 2 * e), exps->data() + 256 * e);
    write_record(o, t, 0, 256, 300, 0x2000, 2, 0, pair_rows(300), attn->data());
    write_record(o, t, 0, 256, 302, 0x3000, 2, 0, pair_rows(302), attn_dat->data());
    // the same two rows without weights (ggml's unweighted path; types that need weights get
    // the GGUF attn_q weights here too, so the record stays meaningful)
    write_record(o, t, 0, 256, 304, ggml_quantize_requires_imatrix(t) ? 0x2000 : 0xFFFF, 2, 0, pair_rows(304),
                 ggml_quantize_requires_imatrix(t) ? attn->data() : nullptr);
    fclose(o.f);
    printf("%s: %u records\n", ggml_type_name(t), nrec);
  }
  return 0;
}
