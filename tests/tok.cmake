# Tokenizers against llama.cpp's own test vectors (tests/data/tok/llama_vocabs.py): the
# vocabularies of the llama-cpp-python 0.3.36 sdist (llama.cpp 0c1e570), fetched into the lm
# tests' cache, each text's ids equal to llama.cpp's.
add_test(NAME interop.tok_llama_vocabs COMMAND ${FORGIA_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/tok/llama_vocabs.py
  --forgia $<TARGET_FILE:forgia_cli> --cache ${FORGIA_LM_CACHE})
set_tests_properties(interop.tok_llama_vocabs PROPERTIES LABELS interop TIMEOUT 900)
