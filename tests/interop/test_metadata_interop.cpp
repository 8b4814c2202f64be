// gguf-py reads the metadata forgia exports from safetensors as forgia wrote it: strings
// holding NUL bytes (keys cannot: the export refuses them), config.json
// integers beyond 2^53 exact in UINT64/INT64, floats beyond f32 as FLOAT64. The list of what
// must be there is tests/cpu/metadata_fixtures.h (forgia's own reader: test_export_metadata).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "../cpu/export_fixtures.h"
#include "../cpu/metadata_fixtures.h"

namespace {

// One line per safetensors.* field: hex(key bytes), the wire types, the value as
// metadata_fixtures.h formats it.
const char kReader[] = R"PY(
import struct, sys, gguf
r = gguf.GGUFReader(sys.argv[1])
def fmt(x, t):
    if t == 8: return (x.encode("utf-8") if isinstance(x, str) else bytes(x)).hex()
    if t in (6, 12): return struct.pack("<d", float(x)).hex()
    if t == 7: return str(int(bool(x)))
    return str(int(x))
for k, f in r.fields.items():
    if not k.startswith("safetensors."): continue
    types = [int(t) for t in f.types]
    v = f.contents()
    s = ",".join(fmt(x, types[1]) for x in v) if types[0] == 9 else fmt(v, types[0])
    print(k.encode("utf-8").hex(), ",".join(map(str, types)), s)
)PY";

TEST(MetadataInterop, GgufPyReadsNulValuesAndExactNumbers) {
  fgt::TempDir dir;
  const std::string model = fgm::write_checkpoint(dir.path, fgm::kMetadata, fgm::kConfig);
  const std::string out = dir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(model, false, fgx::opts(nullptr), out), FG_OK) << fg_last_error();
  const std::string script = dir.file("read.py");
  fgt::write_file(script, kReader, std::strlen(kReader));
  std::string text, err;
  ASSERT_EQ(fgt::run(std::string("'") + FORGIA_PYTHON + "' '" + script + "' '" + out + "'", &text, &err), 0) << err;
  std::map<std::string, std::string> got;
  size_t p = 0;
  while (p < text.size()) {
    size_t e = text.find('\n', p);
    if (e == std::string::npos) e = text.size();
    const std::string line = text.substr(p, e - p);
    p = e + 1;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    EXPECT_EQ(got.count(line.substr(0, sp)), 0u) << "gguf-py sees a key twice: " << line;
    got[line.substr(0, sp)] = line.substr(sp + 1);
  }
  const std::map<std::string, std::string> want = fgm::expected();
  for (const auto &kv : want) {
    auto it = got.find(kv.first);
    ASSERT_NE(it, got.end()) << "gguf-py does not see key (hex) " << kv.first << "\n" << text;
    EXPECT_EQ(it->second, kv.second) << "key (hex) " << kv.first;
  }
  EXPECT_EQ(got.size(), want.size()) << text;
}

}  // namespace
