# Chat templates against jinja2 (tests/data/chat/jinja_templates.py): every template of
# llama.cpp's models/templates/ (the llama-cpp-python 0.3.36 sdist, fetched into the lm tests'
# cache) on every conversation of tests/data/chat/jinja_cases.py, all renders in one
# `forgia chat-template --jsonl` run, each byte-equal to jinja2 or failing where it fails.
# (lm.cmake declares the cache too; this file is included before it)
set(FORGIA_LM_CACHE "${PROJECT_SOURCE_DIR}/.lm-cache" CACHE PATH "where the lm tests keep models and the reference venv")
add_test(NAME interop.jinja_templates COMMAND ${FORGIA_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/chat/jinja_templates.py
  --forgia $<TARGET_FILE:forgia_cli> --cache ${FORGIA_LM_CACHE})
# after interop.tok_llama_vocabs, which fetches the same sdist into the same cache
set_tests_properties(interop.jinja_templates PROPERTIES LABELS interop TIMEOUT 600 DEPENDS interop.tok_llama_vocabs)
