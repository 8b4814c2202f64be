// A safetensors checkpoint whose metadata tests fidelity on export to GGUF: __metadata__ and
// config.json values holding NUL bytes (keys may not: kNulKeyMetadata), and a config.json with
// integers beyond 2^53 up to 2^64-1, floats beyond f32's range, nesting and lists. What the
// GGUF must hold is listed as text (key bytes in hex, wire types, values), so that forgia's
// reader (tests/cpu) and gguf-py's (tests/interop) are checked against the same list.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "testutil.h"

namespace fgm {

inline std::string hex(const std::string &s) {
  static const char d[] = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) {
    o += d[c >> 4];
    o += d[c & 15];
  }
  return o;
}

// The little-endian bytes of a double, in hex (how both readers print floats).
inline std::string f64hex(double v) {
  unsigned char b[8];
  std::memcpy(b, &v, 8);
  return hex(std::string((const char *)b, 8));
}

// A folder dir/model holding model.safetensors (one f32 tensor "w" [1, 2] and this
// __metadata__ text) and, unless config is empty, config.json; returns the folder.
inline std::string write_checkpoint(const std::string &root, const std::string &metadata_json,
                                    const std::string &config) {
  const std::string dir = root + "/model";
  fgt::run("mkdir -p '" + dir + "'");
  const std::string h =
      "{\"__metadata__\":" + metadata_json + ",\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; i++) file[i] = (char)(h.size() >> (8 * i));
  file += h + std::string(8, '\0');
  fgt::write_file(dir + "/model.safetensors", file.data(), file.size());
  if (!config.empty()) fgt::write_file(dir + "/config.json", config.data(), config.size());
  return dir;
}

const char kMetadata[] = R"({"format":"pt","b":"1","c":"2\u00003","a":"x"})";
// Keys that differ only after a NUL: GGUF cannot carry them (C readers stop at the NUL), so
// an export refuses them.
const char kNulKeyMetadata[] = R"({"format":"pt","a\u0000b":"1","a\u0000c":"2\u00003","a":"x"})";

const char kConfig[] = R"({
  "name": "llama", "flag": true,
  "big_u": 18446744073709551615, "u64_min": 9223372036854775808,
  "i64_max": 9223372036854775807, "i64_min": -9223372036854775808,
  "beyond_2_53": 9007199254740993, "i32": -2147483648, "i32_over": 2147483648,
  "f_big": 3.5e38, "f_tiny": 1e-50, "f_plain": 0.1, "f_neg_zero": -0.0,
  "nested": {"x": {"y": 12345678901234567890}},
  "key_nul": "v\u0000al",
  "arr_u64": [1, 18446744073709551615], "arr_i64": [-1, 9223372036854775807],
  "arr_f64": [1.5, 3.5e38], "arr_mixed": [1, 0.5], "arr_str": ["a\u0000b", ""],
  "arr_bool": [true, false], "rope_scaling": null, "empty": []
})";

// hex(key) -> "TYPES VALUE": wire types joined by ',' (array: 9 then the element type);
// values: integers in decimal, bools 0/1, floats as f64hex of their value, strings as hex of
// their bytes; array elements joined by ','.
inline std::map<std::string, std::string> expected() {
  std::map<std::string, std::string> m;
  auto put = [&](const std::string &k, const std::string &types, const std::string &v) { m[hex(k)] = types + " " + v; };
  const std::string md = "safetensors.metadata.", cf = "safetensors.config.";
  put(md + "format", "8", hex("pt"));
  put(md + "b", "8", hex("1"));
  put(md + "c", "8", hex(std::string("2\0003", 3)));
  put(md + "a", "8", hex("x"));
  put(cf + "name", "8", hex("llama"));
  put(cf + "flag", "7", "1");
  put(cf + "big_u", "10", "18446744073709551615");
  put(cf + "u64_min", "10", "9223372036854775808");
  put(cf + "i64_max", "11", "9223372036854775807");
  put(cf + "i64_min", "11", "-9223372036854775808");
  put(cf + "beyond_2_53", "11", "9007199254740993");
  put(cf + "i32", "5", "-2147483648");
  put(cf + "i32_over", "11", "2147483648");
  put(cf + "f_big", "12", f64hex(3.5e38));
  put(cf + "f_tiny", "12", f64hex(1e-50));
  put(cf + "f_plain", "6", f64hex((double)0.1f));
  put(cf + "f_neg_zero", "6", f64hex(-0.0));
  put(cf + "nested.x.y", "10", "12345678901234567890");
  put(cf + "key_nul", "8", hex(std::string("v\0al", 4)));
  put(cf + "arr_u64", "9,10", "1,18446744073709551615");
  put(cf + "arr_i64", "9,11", "-1,9223372036854775807");
  put(cf + "arr_f64", "9,12", f64hex(1.5) + "," + f64hex(3.5e38));
  put(cf + "arr_mixed", "9,6", f64hex(1.0) + "," + f64hex(0.5));
  put(cf + "arr_str", "9,8", hex(std::string("a\0b", 3)) + ",");
  put(cf + "arr_bool", "9,7", "1,0");
  return m;
}

}  // namespace fgm
