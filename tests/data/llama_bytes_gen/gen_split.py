#!/usr/bin/env python3
"""Writes model.gguf again as a 3-part GGUF split (gguf-py's GGUFWriter, 30 tensors a part,
the same metadata and tensor bytes): model-0000N-of-00003.gguf, for the --keep-split check.

usage: gen_split.py DIR   (reads DIR/model.gguf, writes DIR/split/)
"""
import os
import sys

import numpy as np
import gguf


def main(d):
    r = gguf.GGUFReader(os.path.join(d, "model.gguf"))
    os.makedirs(os.path.join(d, "split"), exist_ok=True)
    w = gguf.GGUFWriter(os.path.join(d, "split", "model.gguf"), "llama", split_max_tensors=30)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue  # the writer adds these itself
        v = f.parts[f.data[0]]
        if f.types[0] == gguf.GGUFValueType.STRING:
            w.add_string(f.name, bytes(v).decode())
        else:
            w.add_key_value(f.name, v[0], f.types[0])
    for t in r.tensors:
        w.add_tensor(t.name, np.array(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1])
